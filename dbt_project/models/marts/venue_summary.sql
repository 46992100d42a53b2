-- One row per list (venue and year, as parsed from the headers): what it brought in and what was kept.
with records as (
    select
        venue,
        year,
        count(*) as records,
        count(*) filter (where match_kind <> 'canonical') as duplicates
    from {{ ref('paper_sources') }}
    group by venue, year
),

papers as (
    select
        venue,
        year,
        count(*) as papers,
        count(method_name) as named_methods,
        avg(word_count) as avg_word_count,
        count(distinct primary_topic_id) as topics
    from {{ ref('papers') }}
    group by venue, year
),

-- A rejected record counts in its own row's list: a structured file's rows may name venues of their
-- own (a whole rejected file, with a null record_no, is no record of any list).
rejected as (
    select
        sources.venue,
        sources.year,
        count(*) as rejected_records
    from {{ ref('rejected_records') }} as rejected_records
    inner join {{ ref('stg_source_records') }} as sources
        on
            rejected_records.source_file = sources.source_file
            and rejected_records.record_no = sources.record_no
    group by sources.venue, sources.year
)

select
    cast(coalesce(papers.papers, 0) as integer) as papers,
    cast(records.records as integer) as records,
    cast(records.duplicates as integer) as duplicates,
    cast(coalesce(rejected.rejected_records, 0) as integer) as rejected_records,
    cast(coalesce(papers.named_methods, 0) as integer) as named_methods,
    cast(coalesce(papers.topics, 0) as integer) as topics,
    papers.avg_word_count,
    coalesce(records.venue, papers.venue) as venue,
    coalesce(records.year, papers.year) as year,
    coalesce(records.venue, papers.venue, 'unknown') || coalesce(' ' || coalesce(records.year, papers.year), '')
        as venue_label,
    coalesce(papers.papers, 0) / sum(coalesce(papers.papers, 0)) over () as share_of_papers
from records
full outer join papers
    on records.venue is not distinct from papers.venue and records.year is not distinct from papers.year
left join rejected
    on
        rejected.venue is not distinct from coalesce(records.venue, papers.venue)
        and rejected.year is not distinct from coalesce(records.year, papers.year)
