select
    paper_id,
    keyphrase,
    score,
    {{ adapter.quote('rank') }} as keyphrase_rank,
    case when term is not null then {{ term_id('term') }} end as term_id
from {{ source('raw', 'paper_keyphrases') }}
