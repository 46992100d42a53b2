select
    topic_id,
    'term_' || left(md5(term), 12) as term_id,
    term,
    weight,
    term_rank as rank
from {{ ref('stg_topic_term_weights') }}
