{{ config(meta={'dagster': {'ref': {'name': 'paper_sources'}}}) }}
-- Every paragraph read lands in exactly one of paper_sources and rejected_records.
with sides as (
    select
        source_file,
        record_no,
        'read' as side
    from {{ ref('stg_source_records') }}
    where record_no is not null
    union all
    select
        source_file,
        record_no,
        'landed' as side
    from {{ ref('paper_sources') }}
    union all
    select
        source_file,
        record_no,
        'landed' as side
    from {{ ref('rejected_records') }}
    where record_no is not null
)

select
    source_file,
    record_no,
    count(*) filter (where side = 'read') as times_read,
    count(*) filter (where side = 'landed') as times_landed
from sides
group by source_file, record_no
having count(*) filter (where side = 'read') != 1 or count(*) filter (where side = 'landed') != 1
