-- Both levels: the topics (level 1) and their subtopics (level 2, parent_topic_id their topic).
with primaries as (
    select
        topic_id,
        count(*) as n_papers
    from {{ ref('paper_topics') }}
    where is_primary
    group by topic_id
    union all
    select
        topic_id,
        count(*) as n_papers
    from {{ ref('paper_subtopics') }}
    where is_primary
    group by topic_id
),

top_terms as (
    select
        topic_id,
        {{ dbt.listagg('term', "', '", 'order by term_rank') }} as top_terms
    from {{ ref('stg_topic_term_weights') }}
    group by topic_id
),

minted as (
    select
        topic_id,
        min(recorded_at) as first_seen_at
    from {{ ref('stg_topic_id_registry') }}
    where event = 'minted'
    group by topic_id
)

select
    topics.topic_id,
    topics.level,
    topics.parent_topic_id,
    topics.label,
    cast(coalesce(primaries.n_papers, 0) as integer) as n_papers,
    topics.coherence,
    top_terms.top_terms,
    minted.first_seen_at
from {{ ref('stg_topics') }} as topics
left join primaries on topics.topic_id = primaries.topic_id
left join top_terms on topics.topic_id = top_terms.topic_id
left join minted on topics.topic_id = minted.topic_id
