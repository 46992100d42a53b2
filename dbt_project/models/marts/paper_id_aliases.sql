-- Ids that no longer name a paper of their own (two papers merged, the older id won), and the
-- paper that holds their texts now: what a bookmark or a foreign key with an old id resolves to.
with current_ids as (
    select distinct paper_id from {{ ref('stg_paper_assignments') }}
),

alias_age as (
    select
        paper_id as alias_id,
        min(first_seen_at) as alias_first_seen_at
    from {{ ref('stg_paper_id_registry') }}
    group by paper_id
)

select distinct
    registry.paper_id as alias_id,
    assignments.paper_id,
    alias_age.alias_first_seen_at
from {{ ref('stg_paper_assignments') }} as assignments
inner join {{ ref('stg_paper_id_registry') }} as registry on assignments.text_hash = registry.text_hash
inner join alias_age on registry.paper_id = alias_age.alias_id
where
    registry.paper_id != assignments.paper_id
    and registry.paper_id not in (select current_ids.paper_id from current_ids)
