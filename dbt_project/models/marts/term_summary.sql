-- One row per term and list (venue, year) it appears in: how widely each list uses the term.
with lists as (
    select
        venue,
        year,
        count(*) as list_papers
    from {{ ref('papers') }}
    group by venue, year
),

-- A mined term is used by the papers holding it among their 30 best terms; a keyword term (one no
-- abstract gives) by the papers whose authors give it, none of which ranks it.
uses as (
    select
        paper_id,
        term_id,
        {{ adapter.quote('rank') }}
    from {{ ref('paper_terms') }}
    union all
    select distinct
        paper_id,
        term_id,
        null as {{ adapter.quote('rank') }}
    from {{ ref('int_paper_keywords') }}
    where term_kind = 'keyword'
),

term_lists as (
    select
        uses.term_id,
        papers.venue,
        papers.year,
        count(*) as papers,
        count(*) filter (where uses.{{ adapter.quote('rank') }} <= 10) as key_papers
    from uses
    inner join {{ ref('papers') }} as papers on uses.paper_id = papers.paper_id
    group by uses.term_id, papers.venue, papers.year
),

aliases as (
    select
        term_id,
        {{ dbt.listagg('alias', "', '", 'order by papers desc, alias asc') }} as aliases
    from {{ ref('term_aliases') }}
    group by term_id
)

select
    terms.term_id,
    terms.term,
    terms.kind,
    aliases.aliases,
    terms.doc_freq as term_papers,
    term_lists.venue,
    term_lists.year,
    cast(term_lists.papers as integer) as papers,
    cast(term_lists.key_papers as integer) as key_papers,
    term_lists.papers / lists.list_papers as share_of_list
from {{ ref('terms') }} as terms
inner join term_lists on terms.term_id = term_lists.term_id
inner join lists
    on
        lists.venue is not distinct from term_lists.venue
        and lists.year is not distinct from term_lists.year
left join aliases on terms.term_id = aliases.term_id
