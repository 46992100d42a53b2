select
    alias,
    term_id,
    term,
    alias_kind,
    papers
from {{ ref('stg_term_aliases') }}
