-- One row per term and list with a year whose papers use it: the papers of the list holding the term
-- among their 30 best terms (marts.paper_terms), or, for a keyword term, whose authors give it
-- (int_paper_keywords); a paper counted in the list of its canonical record.
-- Grouped by the term's text and keyed afterwards: term_id is a hash of the text, computed here once
-- per term and list instead of once per paper and term (docs/trends.md).
with canonical as (
    select
        paper_id,
        venue,
        year
    from {{ ref('int_accepted_records') }}
    where match_kind = 'canonical' and year is not null
),

uses as (
    select
        paper_terms.term,
        canonical.venue,
        canonical.year,
        count(*) as papers
    from {{ ref('stg_paper_terms') }} as paper_terms
    inner join canonical on paper_terms.paper_id = canonical.paper_id
    group by paper_terms.term, canonical.venue, canonical.year
),

-- A keyword term (an author keyword no abstract gives) is used by the papers whose authors give it.
keyword_uses as (
    select
        keywords.term_id,
        keywords.term,
        canonical.venue,
        canonical.year,
        count(distinct keywords.paper_id) as papers
    from {{ ref('int_paper_keywords') }} as keywords
    inner join canonical on keywords.paper_id = canonical.paper_id
    where keywords.term_kind = 'keyword'
    group by keywords.term_id, keywords.term, canonical.venue, canonical.year
)

select
    terms.term_id,
    terms.term,
    terms.kind,
    uses.venue,
    uses.year,
    uses.papers
from uses
inner join {{ ref('stg_terms') }} as terms on uses.term = terms.term
union all
select
    term_id,
    term,
    'keyword' as kind,
    venue,
    year,
    papers
from keyword_uses
