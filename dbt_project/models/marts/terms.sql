-- key_papers: the papers that hold the term among their ten best. A list's field concepts lead by
-- it; by doc_freq the general words of abstracts lead ("network", "improve", "outperform").
with key_uses as (
    select
        term_id,
        count(*) as key_papers
    from {{ ref('stg_paper_terms') }}
    where term_rank <= 10
    group by term_id
)

select
    terms.term_id,
    terms.term,
    terms.kind,
    terms.n_words,
    terms.doc_freq,
    cast(coalesce(key_uses.key_papers, 0) as integer) as key_papers,
    terms.idf
from {{ ref('stg_terms') }} as terms
left join key_uses using (term_id)
