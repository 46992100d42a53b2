{{ config(meta={'dagster': {'ref': {'name': 'paper_subtopics'}}}) }}
-- Every paper has exactly one primary subtopic; returns the papers that do not.
select
    papers.paper_id,
    count(paper_subtopics.topic_id) filter (where paper_subtopics.is_primary) as primary_subtopics
from {{ ref('papers') }} as papers
left join {{ ref('paper_subtopics') }} as paper_subtopics on papers.paper_id = paper_subtopics.paper_id
group by papers.paper_id
having count(paper_subtopics.topic_id) filter (where paper_subtopics.is_primary) != 1
