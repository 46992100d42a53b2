select
    paper_id,
    term,
    occurrences,
    weight,
    rank as term_rank,
    'term_' || left(md5(term), 12) as term_id
from {{ source('raw', 'paper_terms') }}
