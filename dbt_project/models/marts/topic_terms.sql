-- The topics' (level 1) top terms; the subtopics' are in subtopic_terms.
select
    terms.topic_id,
    terms.term,
    terms.weight,
    terms.term_rank as rank,
    {{ term_id('terms.term') }} as term_id
from {{ ref('stg_topic_term_weights') }} as terms
inner join {{ ref('stg_topics') }} as topics on terms.topic_id = topics.topic_id
where topics.level = 1
