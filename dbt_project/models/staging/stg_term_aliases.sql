select
    alias,
    term,
    alias_kind,
    papers,
    {{ term_id('term') }} as term_id
from {{ source('raw', 'term_aliases') }}
