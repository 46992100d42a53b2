-- Accepted records with their dedup decision: the base of papers and paper_sources.
select
    records.source_file,
    records.record_no,
    records.file_sha256,
    records.encoding,
    records.header,
    records.venue,
    records.year,
    records.external_id,
    records.link,
    records.title,
    records.authors,
    records.keywords,
    records.decision,
    records.text,
    records.repairs,
    assignments.paper_id,
    assignments.match_kind,
    assignments.matched_by,
    assignments.similarity,
    assignments.containment,
    assignments.word_jaccard,
    assignments.length_ratio
from {{ ref('stg_source_records') }} as records
inner join {{ ref('stg_paper_assignments') }} as assignments
    on
        records.source_file = assignments.source_file
        and records.record_no = assignments.record_no
where records.is_accepted
