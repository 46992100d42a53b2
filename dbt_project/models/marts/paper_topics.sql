-- The topics (level 1); the subtopics are in paper_subtopics.
select
    weights.paper_id,
    weights.topic_id,
    weights.weight,
    -- Decided by the topic model, from the argmax that placed the paper: never re-derived here.
    weights.is_primary
from {{ ref('stg_topic_paper_weights') }} as weights
inner join {{ ref('stg_topics') }} as topics on weights.topic_id = topics.topic_id
where topics.level = 1
