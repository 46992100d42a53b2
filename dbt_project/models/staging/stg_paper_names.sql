select
    paper_id,
    method_name,
    method_long_form
from {{ source('raw', 'paper_names') }}
