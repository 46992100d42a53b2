import polars as pl
from dagster import AssetExecutionContext, AssetSpec, MaterializeResult, asset, multi_asset

from orchestration.assets import OWNERS, WRITER_POOL
from orchestration.metadata import counts_table, frame_metadata
from orchestration.resources import WarehouseResource
from paperhouse.terms import extract_terms
from paperhouse.topics import fit_topics
from paperhouse.warehouse import read_frame, write_table

_CANONICAL_TEXTS = """
    select assignments.paper_id, records.normalized_text
    from raw.paper_assignments as assignments
    inner join raw.source_records as records using (source_file, record_no)
    where assignments.match_kind = 'canonical'
"""


@asset(
    key=["raw", "term_occurrences"],
    deps=[["raw", "paper_assignments"]],
    group_name="nlp",
    kinds={"polars", "duckdb"},
    owners=OWNERS,
    pool=WRITER_POOL,
    description=(
        "Candidate terms (words and phrases of up to three words between stop words, singularised) of each "
        "paper's canonical text, with counts. dbt derives document frequencies and TF-IDF weights from them."
    ),
)
def term_occurrences(context: AssetExecutionContext, warehouse: WarehouseResource) -> MaterializeResult:
    with warehouse.build_connection() as con:
        occurrences = extract_terms(read_frame(con, _CANONICAL_TEXTS))
        write_table(con, "term_occurrences", occurrences)
    top_terms = (
        occurrences.group_by("term").agg(papers=pl.len()).sort(["papers", "term"], descending=[True, False]).head(15)
    )
    return MaterializeResult(
        metadata=frame_metadata(
            occurrences, distinct_terms=occurrences["term"].n_unique(), top_terms=counts_table(top_terms)
        )
    )


@multi_asset(
    specs=[
        AssetSpec(
            ["raw", name],
            deps=[["raw", "term_occurrences"]],
            description=description,
            kinds={"scikit-learn", "duckdb"},
            owners=OWNERS,
        )
        for name, description in (
            ("topic_paper_weights", "Share of each paper on each topic of an NMF model over TF-IDF of the papers' terms."),
            ("topic_term_weights", "The top terms of each topic with their NMF weights."),
        )
    ],
    group_name="nlp",
    pool=WRITER_POOL,
)
def topic_model(context: AssetExecutionContext, warehouse: WarehouseResource):
    with warehouse.build_connection() as con:
        model = fit_topics(read_frame(con, "select paper_id, term, count from raw.term_occurrences"))
        write_table(con, "topic_paper_weights", model.paper_topics)
        write_table(con, "topic_term_weights", model.topic_terms)
    sizes = (
        model.paper_topics.sort("weight", descending=True)
        .group_by("paper_id")
        .first()
        .group_by("topic_id")
        .agg(papers=pl.len())
        .join(
            model.topic_terms.filter(pl.col("rank") <= 4).group_by("topic_id").agg(pl.col("term").str.join(", ")),
            on="topic_id",
        )
        .sort("topic_id")
    )
    yield MaterializeResult(
        asset_key=["raw", "topic_paper_weights"],
        metadata=frame_metadata(model.paper_topics, topics=sizes.height, topic_sizes=counts_table(sizes)),
    )
    yield MaterializeResult(asset_key=["raw", "topic_term_weights"], metadata=frame_metadata(model.topic_terms))
