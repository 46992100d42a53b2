select
    source_file,
    record_no,
    reject_reason as reason,
    excerpt,
    file_sha256,
    encoding,
    external_id
from {{ ref('stg_source_records') }}
where not is_accepted
