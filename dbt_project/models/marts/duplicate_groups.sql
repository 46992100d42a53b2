-- One row per record merged into a paper, beside the paper's canonical record, with the evidence.
-- Titles only support the text's evidence (same_title): records merge on their abstracts alone, as
-- different papers do share titles (and a revision may retitle its paper).
with titled as (
    -- The records of a paper that have a title, in the order papers.title is taken in.
    select
        paper_id,
        source_file,
        record_no,
        title,
        row_number() over (
            partition by paper_id order by match_kind != 'canonical', source_file, record_no
        ) as title_rank
    from {{ ref('int_accepted_records') }}
    where title is not null
),

merged as (
    select
        records.*,
        -- The paper's title as another record gives it: the first titled record, or the second when
        -- the first is this one.
        case
            when first_titled.source_file = records.source_file and first_titled.record_no = records.record_no
                then second_titled.title
            else first_titled.title
        end as compared_title
    from {{ ref('int_accepted_records') }} as records
    left join titled as first_titled
        on records.paper_id = first_titled.paper_id and first_titled.title_rank = 1
    left join titled as second_titled
        on records.paper_id = second_titled.paper_id and second_titled.title_rank = 2
    where records.match_kind != 'canonical'
)

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
    substr(merged.text, 1, 200) as excerpt,
    substr(papers.abstract, 1, 200) as canonical_excerpt,
    merged.title,
    merged.compared_title,
    -- Equal but for case, punctuation and spacing; null unless both titles are there.
    (
        trim({{ regexp_replace_all('lower(merged.title)', '[^\\pL\\pN]+', ' ') }})
        = trim({{ regexp_replace_all('lower(merged.compared_title)', '[^\\pL\\pN]+', ' ') }})
    ) as same_title
from merged
inner join {{ ref('papers') }} as papers on merged.paper_id = papers.paper_id
