select
    topic_id,
    label,
    coherence
from {{ source('raw', 'topics') }}
