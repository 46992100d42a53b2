select
    topic_id,
    term,
    weight,
    rank as term_rank
from {{ source('raw', 'topic_term_weights') }}
