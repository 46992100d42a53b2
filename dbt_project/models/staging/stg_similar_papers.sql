select
    paper_id,
    similar_paper_id,
    score,
    {{ adapter.quote('rank') }} as similarity_rank
from {{ source('raw', 'similar_papers') }}
