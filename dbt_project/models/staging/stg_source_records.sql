select
    source_file,
    file_sha256,
    file_bytes,
    encoding,
    header,
    venue,
    year,
    record_no,
    text,
    normalized_text,
    excerpt,
    repairs,
    reject_reason,
    reject_reason is null as is_accepted
from {{ source('raw', 'source_records') }}
