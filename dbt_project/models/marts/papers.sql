-- Counted from the assignments, one per accepted record: counted from int_accepted_records, whose
-- texts the canonical rows below read, DuckDB materialised every text once for both uses (at 10^6
-- records this model took 17-21 s, 10-12 s this way). tests/assert_papers_count_their_sources.sql
-- holds the two counts equal.
with sources as (
    select paper_id, count(*) as n_sources from {{ ref('stg_paper_assignments') }} group by paper_id
),

-- Without a title, a paper shows the name of what it introduces, else its two top terms.
top_terms as (
    select
        paper_id,
        -- Two filtered aggregates, not string_agg(... order by term_rank): an ordered aggregate
        -- sorts within every group, the slowest part of this model at 10^5 papers.
        max(term) filter (where term_rank = 1) || coalesce(' · ' || max(term) filter (where term_rank = 2), '') as top_terms
    from {{ ref('stg_paper_terms') }}
    where term_rank <= 2
    group by paper_id
),

primary_topics as (
    select paper_topics.paper_id, paper_topics.topic_id, topics.label
    from {{ ref('paper_topics') }} as paper_topics
    inner join {{ ref('topics') }} as topics using (topic_id)
    where paper_topics.is_primary
)

select
    canonical.paper_id,
    coalesce(
        names.method_name || coalesce(': ' || names.method_long_form, ''),
        upper(left(top_terms.top_terms, 1)) || substr(top_terms.top_terms, 2),
        left(canonical.text, 60)
    ) as display_name,
    names.method_name,
    names.method_long_form,
    canonical.text as abstract,
    canonical.venue,
    canonical.year,
    cast(sources.n_sources as integer) as n_sources,
    -- Ingest leaves single spaces between words (clean_text), so a plain split counts them.
    cast(len(string_split(canonical.text, ' ')) as integer) as word_count,
    canonical.source_file as canonical_source_file,
    canonical.record_no as canonical_record_no,
    primary_topics.topic_id as primary_topic_id,
    primary_topics.label as primary_topic_label
from {{ ref('int_accepted_records') }} as canonical
inner join sources using (paper_id)
left join {{ ref('stg_paper_names') }} as names using (paper_id)
left join top_terms using (paper_id)
left join primary_topics using (paper_id)
where canonical.match_kind = 'canonical'
