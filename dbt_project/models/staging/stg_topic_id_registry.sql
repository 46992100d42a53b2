select
    topic_id,
    event,
    level,
    successor_topic_id,
    generation,
    run_id,
    recorded_at
from {{ source('raw', 'topic_id_registry') }}
