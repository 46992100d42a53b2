select
    keyword_key,
    {{ term_id('term') }} as term_id,
    term,
    kind,
    n_words,
    matched_by
from {{ source('raw', 'keyword_terms') }}
