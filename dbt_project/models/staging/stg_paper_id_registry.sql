select
    text_hash,
    paper_id,
    generation,
    first_run_id,
    first_seen_at
from {{ source('raw', 'paper_id_registry') }}
