-- The history of every check evaluation, as the quality asset appended it run after run.
select
    run_id,
    evaluated_at,
    asset,
    check_name,
    passed,
    severity,
    observed,
    description
from {{ source('raw', 'check_evaluations') }}
