-- One row per topic (both levels) and list with a year: the share of the list's papers whose primary
-- topic (level 1) or primary subtopic (level 2) it is, and its change from the venue's previous list.
-- Every topic has a row for every list (0 papers where it has none), so each paper counts once per
-- level and a list's shares sum to 1 per level (tests/assert_topic_trend_shares_sum_to_one.sql).
with lists as (
    select
        venue,
        year,
        papers,
        previous_year,
        previous_papers
    from {{ ref('int_venue_years') }}
),

topic_lists as (
    select
        primary_topic_id as topic_id,
        venue,
        year,
        count(*) as papers
    from {{ ref('papers') }}
    where year is not null
    group by primary_topic_id, venue, year
    union all
    select
        primary_subtopic_id as topic_id,
        venue,
        year,
        count(*) as papers
    from {{ ref('papers') }}
    where year is not null
    group by primary_subtopic_id, venue, year
),

shares as (
    select
        topics.topic_id,
        topics.level,
        topics.parent_topic_id,
        topics.label,
        lists.venue,
        lists.year,
        lists.papers as list_papers,
        lists.previous_year,
        lists.previous_papers as previous_list_papers,
        coalesce(topic_lists.papers, 0) as papers,
        coalesce(topic_lists.papers, 0) / lists.papers as share_of_list
    from {{ ref('topics') }} as topics
    cross join lists
    left join topic_lists
        on
            topics.topic_id = topic_lists.topic_id
            and lists.venue is not distinct from topic_lists.venue
            and lists.year = topic_lists.year
),

-- Every topic has a row in every list, so the row before a list's (by year, within the topic and
-- venue) is the venue's previous list.
with_previous as (
    select
        *,
        lag(papers) over (partition by topic_id, venue order by year) as previous_papers,
        lag(share_of_list) over (partition by topic_id, venue order by year) as previous_share_of_list
    from shares
)

select
    topic_id,
    level,
    parent_topic_id,
    label,
    venue,
    year,
    cast(list_papers as integer) as list_papers,
    cast(papers as integer) as papers,
    share_of_list,
    previous_year,
    cast(previous_list_papers as integer) as previous_list_papers,
    cast(previous_papers as integer) as previous_papers,
    previous_share_of_list,
    share_of_list - previous_share_of_list as share_change
from with_previous
