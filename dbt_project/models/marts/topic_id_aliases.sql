-- Topic ids that no longer name a topic (a re-fit split, merged or dropped it), and the live topic
-- of the same level that holds most of its papers now: each retired id records the topic that
-- took most of its papers then, and a successor retired since is followed to its own.
with recursive retired as (
    select
        topic_id as alias_id,
        level,
        successor_topic_id,
        recorded_at as retired_at
    from {{ ref('stg_topic_id_registry') }}
    where event = 'retired'
),

chain (alias_id, current_id, steps) as (
    select
        alias_id,
        successor_topic_id,
        1
    from retired
    where successor_topic_id is not null
    union all
    select
        chain.alias_id,
        retired.successor_topic_id,
        chain.steps + 1
    from chain
    inner join retired on chain.current_id = retired.alias_id
    where retired.successor_topic_id is not null and chain.steps < 10000
),

resolved as (
    select
        chain.alias_id,
        min(chain.current_id) as topic_id
    from chain
    inner join {{ ref('stg_topics') }} as topics on chain.current_id = topics.topic_id
    group by chain.alias_id
)

select
    retired.alias_id,
    resolved.topic_id,
    retired.level,
    retired.retired_at
from retired
left join resolved on retired.alias_id = resolved.alias_id
