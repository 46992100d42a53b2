-- One row per record merged into a paper, beside the paper's canonical record, with the evidence.
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
    left(papers.abstract, 200) as canonical_excerpt
from {{ ref('int_accepted_records') }} as merged
inner join {{ ref('papers') }} as papers using (paper_id)
where merged.match_kind != 'canonical'
