with sources as (
    select paper_id, count(*) as n_sources from {{ ref('int_accepted_records') }} group by paper_id
)

select
    canonical.paper_id,
    canonical.text as abstract,
    canonical.venue,
    canonical.year,
    cast(sources.n_sources as integer) as n_sources,
    cast(len(regexp_split_to_array(canonical.text, '\s+')) as integer) as word_count,
    canonical.source_file as canonical_source_file,
    canonical.record_no as canonical_record_no
from {{ ref('int_accepted_records') }} as canonical
inner join sources using (paper_id)
where canonical.match_kind = 'canonical'
