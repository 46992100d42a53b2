-- One row per list with a year (a venue's year, as the list headers give them): its papers and the
-- venue's previous and next list, the timeline of the trend marts. A paper belongs to the list of its
-- canonical record, as in marts.papers. A list without a year has no place on a timeline and is left
-- out; lists without a venue form one venue of their own (null).
with lists as (
    select
        venue,
        year,
        count(*) as papers
    from {{ ref('int_accepted_records') }}
    where match_kind = 'canonical' and year is not null
    group by venue, year
)

select
    venue,
    year,
    papers,
    lag(year) over (partition by venue order by year) as previous_year,
    lag(papers) over (partition by venue order by year) as previous_papers,
    lead(year) over (partition by venue order by year) as next_year
from lists
