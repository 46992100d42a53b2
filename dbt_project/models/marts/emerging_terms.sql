-- The fastest-growing terms of each list that has a previous list of the same venue (docs/trends.md).
-- Growth is the change of the term's share of the list's papers from the previous list, in share
-- points. A term is tested when it has support: at least ceil(sqrt(n)) of the list's n papers use it
-- (half-way, on a log scale, between one paper and the whole list, so a smaller list asks a larger
-- share). A tested term emerges when its share rose by more than sampling noise, over every term
-- tested in the list at once: its two-proportion z statistic (pooled share) is at least
-- sqrt(2 ln(m / 0.05)) for the list's m tested terms. The normal tail beyond z is below exp(-z^2 / 2),
-- so each term passes by chance with probability under 0.05 / m, and the list's m terms together
-- under 0.05 (a union bound). Ranked within the list by growth, then papers, then the term.
with tested as (
    select
        term_id,
        term,
        kind,
        venue,
        year,
        previous_year,
        list_papers,
        papers,
        share_of_list,
        previous_list_papers,
        previous_papers,
        previous_share_of_list,
        share_change,
        first_year_in_venue,
        first_year_overall,
        cast(ceil(sqrt(list_papers)) as integer) as min_papers,
        count(*) over (partition by venue, year) as tested_terms,
        (papers + previous_papers) / (list_papers + previous_list_papers) as pooled_share
    from {{ ref('term_trends') }}
    where previous_year is not null and papers >= ceil(sqrt(list_papers))
),

-- A rise means the pooled share lies strictly between 0 and 1, so the standard error is positive.
scored as (
    select
        *,
        share_change / sqrt(
            pooled_share * (1 - pooled_share) * (1 / list_papers + 1 / previous_list_papers)
        ) as growth_z,
        sqrt(2 * ln(tested_terms / 0.05)) as min_growth_z
    from tested
    where share_change > 0
)

select
    venue,
    year,
    previous_year,
    cast(
        row_number() over (partition by venue, year order by share_change desc, papers desc, term asc) as integer
    ) as rank,
    term_id,
    term,
    kind,
    papers,
    list_papers,
    share_of_list,
    previous_papers,
    previous_list_papers,
    previous_share_of_list,
    share_change,
    growth_z,
    min_papers,
    cast(tested_terms as integer) as tested_terms,
    min_growth_z,
    first_year_in_venue,
    first_year_overall
from scored
where growth_z >= min_growth_z
