{{ config(meta={'dagster': {'ref': {'name': 'topics'}}}) }}
-- Two levels and valid links: a topic (level 1) has no parent, a subtopic (level 2) has a topic as
-- its parent, and a paper's primary subtopic lies under its primary topic. Returns what breaks it.
select
    topic_id,
    'level is neither 1 nor 2' as problem
from {{ ref('topics') }}
where level not in (1, 2)
union all
select
    topic_id,
    'a topic with a parent' as problem
from {{ ref('topics') }}
where level = 1 and parent_topic_id is not null
union all
select
    subtopics.topic_id,
    'a subtopic whose parent is not a topic' as problem
from {{ ref('topics') }} as subtopics
left join {{ ref('topics') }} as parents on subtopics.parent_topic_id = parents.topic_id and parents.level = 1
where subtopics.level = 2 and parents.topic_id is null
union all
select
    papers.primary_subtopic_id,
    'a primary subtopic outside the primary topic of its paper' as problem
from {{ ref('papers') }} as papers
inner join {{ ref('topics') }} as subtopics on papers.primary_subtopic_id = subtopics.topic_id
where subtopics.parent_topic_id is distinct from papers.primary_topic_id
