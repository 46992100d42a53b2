select
    paper_id,
    'term_' || left(md5(term), 12) as term_id,
    term,
    weight,
    cast(row_number() over (partition by paper_id order by weight desc, term) as integer) as rank,
    occurrences
from {{ ref('int_paper_term_weights') }}
