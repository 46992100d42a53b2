select
    paper_id,
    term_id,
    term,
    weight,
    term_rank as rank,
    occurrences
from {{ ref('stg_paper_terms') }}
