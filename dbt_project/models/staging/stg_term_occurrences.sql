select
    paper_id,
    term,
    n_words,
    "count" as occurrences
from {{ source('raw', 'term_occurrences') }}
