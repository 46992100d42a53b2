{{ config(meta={'dagster': {'ref': {'name': 'papers'}}}) }}
-- Every paper counts the accepted records dedup put in it, and every such paper is there.
with accepted as (
    select
        paper_id,
        count(*) as records
    from {{ ref('int_accepted_records') }}
    group by paper_id
)

select
    paper_id,
    papers.n_sources,
    accepted.records
from {{ ref('papers') }} as papers
full join accepted using (paper_id)
where papers.n_sources is distinct from accepted.records
