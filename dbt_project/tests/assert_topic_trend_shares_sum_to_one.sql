-- Every paper has one primary topic and one primary subtopic, so in topic_trends the topics of each
-- level share out every list with a year: their papers add up to the list's papers and their shares
-- to 1. Fails with each list and level that does not add up.
select
    venue,
    year,
    level,
    max(list_papers) as list_papers,
    sum(papers) as papers,
    sum(share_of_list) as share_total
from {{ ref('topic_trends') }}
group by venue, year, level
having sum(papers) <> max(list_papers) or abs(sum(share_of_list) - 1) > 1e-9
