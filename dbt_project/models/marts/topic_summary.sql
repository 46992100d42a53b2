-- One row per topic (both levels) and list (venue, year): how much of each list a topic covers, by
-- primary topic (level 1) or primary subtopic (level 2); a list's shares sum to 1 per level.
with lists as (
    select
        venue,
        year,
        count(*) as list_papers
    from {{ ref('papers') }}
    group by venue, year
),

topic_lists as (
    select
        primary_topic_id as topic_id,
        venue,
        year,
        count(*) as papers
    from {{ ref('papers') }}
    group by primary_topic_id, venue, year
    union all
    select
        primary_subtopic_id as topic_id,
        venue,
        year,
        count(*) as papers
    from {{ ref('papers') }}
    group by primary_subtopic_id, venue, year
)

select
    topics.topic_id,
    topics.level,
    topics.parent_topic_id,
    topics.label,
    topics.top_terms,
    topics.n_papers as topic_papers,
    topics.coherence,
    lists.venue,
    lists.year,
    cast(coalesce(topic_lists.papers, 0) as integer) as papers,
    coalesce(topic_lists.papers, 0) / lists.list_papers as share_of_list
from {{ ref('topics') }} as topics
cross join lists
left join topic_lists
    on
        topics.topic_id = topic_lists.topic_id
        and topic_lists.venue is not distinct from lists.venue
        and topic_lists.year is not distinct from lists.year
