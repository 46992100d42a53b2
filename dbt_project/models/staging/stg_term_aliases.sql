select
    alias,
    'term_' || left(md5(term), 12) as term_id,
    term,
    alias_kind,
    papers
from {{ source('raw', 'term_aliases') }}
