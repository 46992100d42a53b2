select
    term,
    kind,
    n_words,
    doc_freq,
    idf,
    'term_' || left(md5(term), 12) as term_id
from {{ source('raw', 'terms') }}
