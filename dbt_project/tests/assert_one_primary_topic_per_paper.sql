{{ config(meta={'dagster': {'ref': {'name': 'paper_topics'}}}) }}
-- Every paper has exactly one primary topic; returns the papers that do not.
select
    papers.paper_id,
    count(paper_topics.topic_id) filter (where paper_topics.is_primary) as primary_topics
from {{ ref('papers') }} as papers
left join {{ ref('paper_topics') }} as paper_topics on papers.paper_id = paper_topics.paper_id
group by papers.paper_id
having count(paper_topics.topic_id) filter (where paper_topics.is_primary) != 1
