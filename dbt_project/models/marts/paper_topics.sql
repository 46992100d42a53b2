select
    paper_id,
    topic_id,
    weight,
    row_number() over (partition by paper_id order by weight desc, topic_id) = 1 as is_primary
from {{ ref('stg_topic_paper_weights') }}
