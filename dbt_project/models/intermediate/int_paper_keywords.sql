-- One row per author keyword of an accepted record, with the term it joins (raw.keyword_terms,
-- matched in Python by the term's key or an acronym): the base of marts.paper_keywords and of the
-- keyword side of marts.terms, term_aliases, term_summary and term_trends. Text lists have none.
with keywords as (
    select
        paper_id,
        source_file,
        record_no,
        match_kind,
        {{ unnest_with_position('keywords', 'keyword', 'keyword_index') }}
    from {{ ref('int_accepted_records') }}
    where keywords is not null
),

keyed as (
    select
        paper_id,
        keyword,
        -- What groups spellings of one keyword across papers: lower case, single spaces. The corpus
        -- step keys raw.keyword_terms with the same expression (paperhouse.nlp.terms.keywords).
        trim({{ regexp_replace_all('lower(keyword)', '\\s+', ' ') }}) as keyword_key,
        cast(keyword_index as integer) as keyword_no,
        source_file,
        record_no,
        match_kind
    from keywords
)

select
    keyed.paper_id,
    keyed.keyword,
    keyed.keyword_key,
    keyed.keyword_no,
    keyed.source_file,
    keyed.record_no,
    keyed.match_kind,
    keyword_terms.term_id,
    keyword_terms.term,
    keyword_terms.kind as term_kind,
    keyword_terms.n_words as term_words,
    keyword_terms.matched_by
from keyed
left join {{ ref('stg_keyword_terms') }} as keyword_terms on keyed.keyword_key = keyword_terms.keyword_key
