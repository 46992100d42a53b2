select
    term,
    kind,
    n_words,
    doc_freq,
    idf,
    {{ term_id('term') }} as term_id
from {{ source('raw', 'terms') }}
