-- One row per author keyword of an accepted record: what the paper's authors said it is about, as
-- exports give it (OpenReview, Inspec). Text lists have none. Each record's keywords come repaired,
-- in their order and once each (paperhouse.ingest.structured_inputs), each with the term it joins.
select
    paper_id,
    keyword,
    keyword_key,
    keyword_no,
    source_file,
    record_no,
    match_kind,
    term_id,
    term,
    matched_by
from {{ ref('int_paper_keywords') }}
