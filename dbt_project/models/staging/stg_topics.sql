select
    topic_id,
    level,
    parent_topic_id,
    label,
    coherence
from {{ source('raw', 'topics') }}
