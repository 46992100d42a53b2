select
    term_id,
    term,
    kind,
    n_words,
    doc_freq,
    idf
from {{ ref('stg_terms') }}
