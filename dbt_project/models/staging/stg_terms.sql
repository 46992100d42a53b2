select
    'term_' || left(md5(term), 12) as term_id,
    term,
    kind,
    n_words,
    doc_freq,
    idf
from {{ source('raw', 'terms') }}
