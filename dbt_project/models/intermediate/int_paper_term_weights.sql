-- TF-IDF of each paper's terms: (1 + ln count) * smoothed idf, L2-normalised per paper.
with corpus as (
    select count(distinct paper_id) as n_papers from {{ ref('int_accepted_records') }}
),

document_frequency as (
    select term, count(*) as doc_freq from {{ ref('stg_term_occurrences') }} group by term
),

scored as (
    select
        occurrences.paper_id,
        occurrences.term,
        occurrences.n_words,
        occurrences.occurrences,
        document_frequency.doc_freq,
        ln((1 + corpus.n_papers) / (1 + document_frequency.doc_freq)) + 1 as idf,
        (1 + ln(occurrences.occurrences)) * (ln((1 + corpus.n_papers) / (1 + document_frequency.doc_freq)) + 1) as tfidf
    from {{ ref('stg_term_occurrences') }} as occurrences
    inner join document_frequency using (term)
    cross join corpus
)

select
    paper_id,
    term,
    n_words,
    occurrences,
    doc_freq,
    idf,
    tfidf / sqrt(sum(tfidf * tfidf) over (partition by paper_id)) as weight
from scored
