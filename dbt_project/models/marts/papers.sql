-- Counted from the assignments, one per accepted record: counted from int_accepted_records, whose
-- texts the canonical rows below read, DuckDB materialised every text once for both uses (at 10^6
-- records this model took 17-21 s, 10-12 s this way). tests/assert_papers_count_their_sources.sql
-- holds the two counts equal.
with sources as (
    select
        paper_id,
        count(*) as n_sources
    from {{ ref('stg_paper_assignments') }}
    group by paper_id
),

-- What structured inputs say of a paper (title, authors, decision, link), each from the first of
-- its records that says it: the canonical record first, then by file and position. Text lists say
-- none of it, so only the records of exports are aggregated.
metadata as (
    select
        paper_id,
        {{ first_in_order('title', ["match_kind != 'canonical'", 'source_file', 'record_no']) }} filter (
            where title is not null
        ) as title,
        {{ first_in_order('authors', ["match_kind != 'canonical'", 'source_file', 'record_no']) }} filter (
            where authors is not null
        ) as authors,
        {{ first_in_order('decision', ["match_kind != 'canonical'", 'source_file', 'record_no']) }} filter (
            where decision is not null
        ) as decision,
        {{ first_in_order('link', ["match_kind != 'canonical'", 'source_file', 'record_no']) }} filter (
            where link is not null
        ) as link
    from {{ ref('int_accepted_records') }}
    where title is not null or authors is not null or decision is not null or link is not null
    group by paper_id
),

-- Without a title, a paper is named by its subject: the most repeated of its five top terms, a
-- phrase of n words counting sqrt(n) times its repeats (titles name ideas in phrases), the better
-- ranked on a tie. On real lists the subject was in the real title more often than the top-ranked
-- term (docs/evaluation.md).
subjects as (
    select
        paper_id,
        max_by(term, occurrences * sqrt({{ word_count('term') }}) * 1000 - term_rank) as subject
    from {{ ref('stg_paper_terms') }}
    where term_rank <= 5
    group by paper_id
),

names as (
    select
        *,
        -- Written as a word when it holds a run of three lower-case letters ("Lorsa", "AudioScope",
        -- not "BCPReLU", "EGRL").
        {{ regexp_contains('method_name', '[a-z]{3}') }} as is_word_name
    from {{ ref('stg_paper_names') }}
),

primary_topics as (
    select
        paper_topics.paper_id,
        paper_topics.topic_id,
        topics.label
    from {{ ref('paper_topics') }} as paper_topics
    inner join {{ ref('topics') }} as topics on paper_topics.topic_id = topics.topic_id
    where paper_topics.is_primary
),

primary_subtopics as (
    select
        paper_subtopics.paper_id,
        paper_subtopics.topic_id,
        topics.label
    from {{ ref('paper_subtopics') }} as paper_subtopics
    inner join {{ ref('topics') }} as topics on paper_subtopics.topic_id = topics.topic_id
    where paper_subtopics.is_primary
)

select
    canonical.paper_id,
    -- A real title, where an export gave one, names the paper; without one, a method's long form
    -- names it best ("Low-Rank Sparse Attention"); a name written as a word ("Lorsa") leads it,
    -- but an acronym ("BCPReLU") stays in method_name: titles spell it out.
    coalesce(
        metadata.title,
        case when names.is_word_name then names.method_name || ': ' end || names.method_long_form,
        names.method_long_form,
        case
            when names.is_word_name and {{ dbt.position('lower(subjects.subject)', 'lower(names.method_name)') }} = 0
                then names.method_name || ' · ' || subjects.subject
            when names.is_word_name then names.method_name
        end,
        upper(substr(subjects.subject, 1, 1)) || substr(subjects.subject, 2),
        substr(canonical.text, 1, 60)
    ) as display_name,
    metadata.title,
    names.method_name,
    names.method_long_form,
    canonical.text as abstract,
    canonical.venue,
    canonical.year,
    cast(sources.n_sources as integer) as n_sources,
    -- Ingest leaves single spaces between words (clean_text), so a plain split counts them.
    cast({{ word_count('canonical.text') }} as integer) as word_count,
    canonical.source_file as canonical_source_file,
    canonical.record_no as canonical_record_no,
    primary_topics.topic_id as primary_topic_id,
    primary_topics.label as primary_topic_label,
    primary_subtopics.topic_id as primary_subtopic_id,
    primary_subtopics.label as primary_subtopic_label,
    metadata.authors,
    metadata.decision,
    metadata.link
from {{ ref('int_accepted_records') }} as canonical
inner join sources on canonical.paper_id = sources.paper_id
left join metadata on canonical.paper_id = metadata.paper_id
left join names on canonical.paper_id = names.paper_id
left join subjects on canonical.paper_id = subjects.paper_id
left join primary_topics on canonical.paper_id = primary_topics.paper_id
left join primary_subtopics on canonical.paper_id = primary_subtopics.paper_id
where canonical.match_kind = 'canonical'
