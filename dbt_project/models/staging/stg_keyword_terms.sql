select
    keyword_key,
    'term_' || left(md5(term), 12) as term_id,
    term,
    kind,
    n_words,
    matched_by
from {{ source('raw', 'keyword_terms') }}
