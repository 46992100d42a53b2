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
    canonical_source_file,
    canonical_record_no,
    text_hash
from {{ source('raw', 'paper_assignments') }}
