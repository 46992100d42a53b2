select
    paper_id,
    term,
    occurrences,
    weight,
    {{ adapter.quote('rank') }} as term_rank,
    {{ term_id('term') }} as term_id
from {{ source('raw', 'paper_terms') }}
