select
    paper_id,
    'term_' || left(md5(term), 12) as term_id,
    term,
    occurrences,
    weight,
    "rank" as term_rank
from {{ source('raw', 'paper_terms') }}
