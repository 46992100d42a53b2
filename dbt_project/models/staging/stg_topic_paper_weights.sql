select
    paper_id,
    topic_id,
    weight,
    is_primary
from {{ source('raw', 'topic_paper_weights') }}
