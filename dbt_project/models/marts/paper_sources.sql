select
    source_file,
    record_no,
    paper_id,
    match_kind,
    matched_by,
    similarity,
    containment,
    word_jaccard,
    length_ratio,
    file_sha256,
    encoding,
    venue,
    year,
    repairs
from {{ ref('int_accepted_records') }}
