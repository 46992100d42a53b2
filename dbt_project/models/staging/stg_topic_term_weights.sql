select
    topic_id,
    term,
    weight,
    {{ adapter.quote('rank') }} as term_rank
from {{ source('raw', 'topic_term_weights') }}
