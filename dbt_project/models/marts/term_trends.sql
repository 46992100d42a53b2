-- One row per term and list with a year in which the term is used, or in which it is not but was in
-- the venue's previous list (0 papers: the term dropped out): the share of the list's papers using it
-- (holding it among their 30 best terms), its change from the venue's previous list, and the first
-- year the term is used in the venue and in any venue. Lists missing for a term use it in no paper.
with lists as (
    select
        venue,
        year,
        papers,
        previous_year,
        previous_papers,
        next_year
    from {{ ref('int_venue_years') }}
),

uses as (
    select
        term_id,
        term,
        kind,
        venue,
        year,
        papers
    from {{ ref('int_term_venue_years') }}
),

-- Each use counts twice: as the term's papers in its own list, and as the previous list's papers in
-- the venue's next list (the second branch's columns take the first's names: next_year is the year).
counted as (
    select
        term_id,
        venue,
        year,
        papers,
        0 as previous_papers
    from uses
    union all
    select
        uses.term_id,
        uses.venue,
        lists.next_year,
        0 as papers,
        uses.papers as previous_papers
    from uses
    inner join lists
        on
            uses.venue is not distinct from lists.venue
            and uses.year = lists.year
    where lists.next_year is not null
),

term_lists as (
    select
        term_id,
        venue,
        year,
        sum(papers) as papers,
        sum(previous_papers) as previous_papers
    from counted
    group by term_id, venue, year
),

firsts as (
    select
        term_id,
        term,
        kind,
        venue,
        min(year) as first_year_in_venue,
        min(min(year)) over (partition by term_id) as first_year_overall
    from uses
    group by term_id, term, kind, venue
),

shares as (
    select
        term_lists.term_id,
        firsts.term,
        firsts.kind,
        term_lists.venue,
        term_lists.year,
        lists.papers as list_papers,
        term_lists.papers,
        term_lists.papers / lists.papers as share_of_list,
        lists.previous_year,
        lists.previous_papers as previous_list_papers,
        -- A venue's first list has no previous list to compare with: null, not 0.
        case when lists.previous_year is not null then term_lists.previous_papers end as previous_papers,
        case
            when lists.previous_year is not null then term_lists.previous_papers / lists.previous_papers
        end as previous_share_of_list,
        firsts.first_year_in_venue,
        firsts.first_year_overall
    from term_lists
    inner join lists
        on
            term_lists.venue is not distinct from lists.venue
            and term_lists.year = lists.year
    inner join firsts
        on
            term_lists.term_id = firsts.term_id
            and term_lists.venue is not distinct from firsts.venue
)

select
    term_id,
    term,
    kind,
    venue,
    year,
    cast(list_papers as integer) as list_papers,
    cast(papers as integer) as papers,
    share_of_list,
    previous_year,
    cast(previous_list_papers as integer) as previous_list_papers,
    cast(previous_papers as integer) as previous_papers,
    previous_share_of_list,
    first_year_in_venue,
    first_year_overall,
    share_of_list - previous_share_of_list as share_change
from shares
