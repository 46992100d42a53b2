with primaries as (
    select topic_id, count(*) as n_papers from {{ ref('paper_topics') }} where is_primary group by topic_id
),

top_terms as (
    select topic_id, string_agg(term, ', ' order by rank) as top_terms
    from {{ ref('topic_terms') }}
    group by topic_id
)

select
    topics.topic_id,
    topics.label,
    cast(coalesce(primaries.n_papers, 0) as integer) as n_papers,
    topics.coherence,
    top_terms.top_terms
from {{ ref('stg_topics') }} as topics
left join primaries using (topic_id)
left join top_terms using (topic_id)
