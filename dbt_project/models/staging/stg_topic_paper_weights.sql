select
    paper_id,
    topic_id,
    weight
from {{ source('raw', 'topic_paper_weights') }}
