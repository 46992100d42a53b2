select
    alias,
    term,
    alias_kind,
    papers,
    'term_' || left(md5(term), 12) as term_id
from {{ source('raw', 'term_aliases') }}
