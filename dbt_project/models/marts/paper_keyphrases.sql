select
    paper_id,
    keyphrase_rank as rank,
    keyphrase,
    term_id,
    score
from {{ ref('stg_paper_keyphrases') }}
