select
    paper_id,
    similar_paper_id,
    score,
    similarity_rank as rank
from {{ ref('stg_similar_papers') }}
