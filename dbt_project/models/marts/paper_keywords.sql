-- One row per author keyword of an accepted record: what the paper's authors said it is about, as
-- exports give it (OpenReview, Inspec). Text lists have none. Each record's keywords come repaired,
-- in their order and once each (paperhouse.structured_inputs).
with keywords as (
    select
        paper_id,
        source_file,
        record_no,
        match_kind,
        unnest(keywords) as keyword,
        generate_subscripts(keywords, 1) as keyword_index
    from {{ ref('int_accepted_records') }}
    where keywords is not null
)

select
    paper_id,
    keyword,
    -- What groups spellings of one keyword across papers: lower case, single spaces.
    trim(regexp_replace(lower(keyword), '\s+', ' ', 'g')) as keyword_key,
    cast(keyword_index as integer) as keyword_no,
    source_file,
    record_no,
    match_kind
from keywords
