-- The acronyms and spellings the abstracts merged into a term (raw.term_aliases), and the author
-- keywords whose spelling differs from the term they joined (alias_kind keyword: GANs -> generative
-- adversarial network), each as most of its papers' authors write it, unless the abstracts already
-- give it as an alias of that term.
with mined as (
    select
        alias,
        term_id,
        term,
        alias_kind,
        papers
    from {{ ref('stg_term_aliases') }}
),

keywords as (
    select
        term_id,
        term,
        keyword_key,
        keyword,
        paper_id
    from {{ ref('int_paper_keywords') }}
    where keyword_key != term
),

spellings as (
    select
        term_id,
        keyword_key,
        keyword,
        count(distinct paper_id) as papers
    from keywords
    group by term_id, keyword_key, keyword
),

-- Each keyword key once: as most of its papers' authors spell it, then the first such spelling.
shown as (
    select
        term_id,
        keyword_key,
        {{ first_in_order('keyword', ['-papers', 'keyword']) }} as alias
    from spellings
    group by term_id, keyword_key
),

keyword_aliases as (
    select
        shown.alias,
        keyed.term_id,
        keyed.term,
        keyed.papers
    from (
        select
            term_id,
            keyword_key,
            any_value(term) as term,
            count(distinct paper_id) as papers
        from keywords
        group by term_id, keyword_key
    ) as keyed
    inner join shown on keyed.term_id = shown.term_id and keyed.keyword_key = shown.keyword_key
)

select
    alias,
    term_id,
    term,
    alias_kind,
    papers
from mined
union all
select
    keyword_aliases.alias,
    keyword_aliases.term_id,
    keyword_aliases.term,
    'keyword' as alias_kind,
    cast(keyword_aliases.papers as integer) as papers
from keyword_aliases
where not exists (
    select 1
    from mined
    where
        mined.term_id = keyword_aliases.term_id
        and lower(mined.alias) = lower(keyword_aliases.alias)
)
