-- key_papers: the papers that hold the term among their ten best. A list's field concepts lead by
-- it; by doc_freq the general words of abstracts lead ("network", "improve", "outperform").
-- Author keywords (exports only) join the terms: a keyword of a mined term counts in its
-- keyword_papers; a keyword that matches none is a term of its own, kind keyword, whose doc_freq is
-- the papers whose authors give it. Without keywords the mined terms are all there is.
with key_uses as (
    select
        term_id,
        count(*) as key_papers
    from {{ ref('stg_paper_terms') }}
    where term_rank <= 10
    group by term_id
),

keyword_uses as (
    select
        term_id,
        any_value(term) as term,
        any_value(term_kind) as kind,
        any_value(term_words) as n_words,
        count(distinct paper_id) as keyword_papers
    from {{ ref('int_paper_keywords') }}
    group by term_id
),

corpus as (
    select count(*) as papers
    from {{ ref('stg_paper_assignments') }}
    where match_kind = 'canonical'
),

mined as (
    select
        terms.term_id,
        terms.term,
        terms.kind,
        terms.n_words,
        terms.doc_freq,
        cast(coalesce(key_uses.key_papers, 0) as integer) as key_papers,
        terms.idf,
        cast(coalesce(keyword_uses.keyword_papers, 0) as integer) as keyword_papers
    from {{ ref('stg_terms') }} as terms
    left join key_uses on terms.term_id = key_uses.term_id
    left join keyword_uses on terms.term_id = keyword_uses.term_id
),

keyword_only as (
    select
        keyword_uses.term_id,
        keyword_uses.term,
        'keyword' as kind,
        keyword_uses.n_words,
        cast(keyword_uses.keyword_papers as integer) as doc_freq,
        -- No paper ranks it among its terms: keyword terms stay out of paper_terms.
        0 as key_papers,
        -- The same smoothing as a mined term's idf, over the same papers.
        ln((1 + corpus.papers) / (1 + keyword_uses.keyword_papers)) + 1 as idf,
        cast(keyword_uses.keyword_papers as integer) as keyword_papers
    from keyword_uses
    cross join corpus
    where keyword_uses.kind = 'keyword'
)

select
    term_id,
    term,
    kind,
    n_words,
    doc_freq,
    key_papers,
    idf,
    keyword_papers
from mined
union all
select
    term_id,
    term,
    kind,
    n_words,
    doc_freq,
    key_papers,
    idf,
    keyword_papers
from keyword_only
