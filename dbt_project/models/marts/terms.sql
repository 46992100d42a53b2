select distinct
    'term_' || left(md5(term), 12) as term_id,
    term,
    case when n_words = 1 then 'word' else 'phrase' end as kind,
    n_words,
    cast(doc_freq as integer) as doc_freq,
    idf
from {{ ref('int_paper_term_weights') }}
