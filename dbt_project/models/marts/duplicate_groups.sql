-- One row per record merged into a paper, beside the paper's canonical record, with the evidence.
-- Titles only support the text's evidence (same_title): records merge on their abstracts alone, as
-- different papers do share titles.
select
    merged.paper_id,
    merged.source_file,
    merged.record_no,
    merged.match_kind,
    merged.matched_by,
    merged.similarity,
    merged.containment,
    merged.word_jaccard,
    merged.length_ratio,
    papers.canonical_source_file,
    papers.canonical_record_no,
    left(merged.text, 200) as excerpt,
    left(papers.abstract, 200) as canonical_excerpt,
    merged.title,
    canonical.title as canonical_title,
    -- Equal but for case, punctuation and spacing; null unless both records have a title.
    (
        trim(regexp_replace(lower(merged.title), '[^\pL\pN]+', ' ', 'g'))
        = trim(regexp_replace(lower(canonical.title), '[^\pL\pN]+', ' ', 'g'))
    ) as same_title
from {{ ref('int_accepted_records') }} as merged
inner join {{ ref('papers') }} as papers using (paper_id)
inner join {{ ref('int_accepted_records') }} as canonical
    on merged.paper_id = canonical.paper_id
    and canonical.match_kind = 'canonical'
where merged.match_kind != 'canonical'
