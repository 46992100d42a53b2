from datetime import UTC, datetime

import polars as pl
from dagster import AssetExecutionContext, AssetSpec, Config, MaterializeResult, multi_asset
from pydantic import Field

from orchestration.assets import OWNERS, WRITER_POOL
from orchestration.engine import EngineResource
from orchestration.metadata import counts_table, frame_metadata
from orchestration.resources import WarehouseResource
from paperhouse.nlp.keyphrases.embeddings import rank_by_embeddings
from paperhouse.nlp.keyphrases.noun_phrases import term_keys
from paperhouse.nlp.keyphrases.ranking import best_terms
from paperhouse.nlp.terms.keywords import KEYWORDS_SQL, keyword_terms
from paperhouse.nlp.topics import ids as topic_ids
from paperhouse.settings import settings
from paperhouse.warehouse.database import write_table

_CANONICAL_TEXTS = """
    select assignments.paper_id, records.text
    from raw.paper_assignments as assignments
    inner join raw.source_records as records using (source_file, record_no)
    where assignments.match_kind = 'canonical'
"""


class AnalysisConfig(Config):
    keyphrase_embeddings: bool = Field(
        default_factory=lambda: settings().keyphrase_embeddings,
        description="Rank each paper's terms, and its own noun phrases as further keyphrases, by their weight "
        "blended with their closeness in meaning to the abstract (a packaged sentence-embedding model on the CPU; "
        "slow: docs/performance.md) and by whether they are whole noun phrases there. Topics and similar papers "
        "do not change. Default: $PAPERHOUSE_KEYPHRASE_EMBEDDINGS=1, else off.",
    )


def _specs(descriptions: dict[str, str], deps: list[list[str]], kinds: set[str]) -> list[AssetSpec]:
    return [
        AssetSpec(["raw", name], deps=deps, description=description, kinds=kinds, owners=OWNERS)
        for name, description in descriptions.items()
    ]


# Terms, topics and similar papers are one step: the topic model and the neighbour search read
# every paper's weight on every term, a sparse matrix held in memory that the tables (a paper's
# best 30 terms) do not carry. Method names join them: they read the same texts, and find them on
# the core the terms leave idle (see paperhouse.nlp.analysis). The graph still shows each table and
# what it is made from.
@multi_asset(
    specs=[
        *_specs(
            {
                "terms": "Every keyphrase (1-4 words, singular, spelling variants and acronyms merged, stock "
                "phrases dropped) with its kind, document frequency and idf.",
                "paper_terms": "Each paper's 30 most characteristic terms with occurrences, weight (TF-IDF scaled "
                "by phrase-headedness, L2-normalised over all its terms) and rank (1 = most characteristic).",
                "paper_keyphrases": "Each paper's ten keyphrases: its ten best terms, or with the keyphrase "
                "embeddings option, its terms and own noun phrases ranked by meaning too (term null for a phrase "
                "no other paper shares).",
                "term_aliases": "Acronyms defined in the abstracts (SAE -> sparse autoencoder) and spelling "
                "variants (finetuning -> fine-tuning), each with the term it was merged into.",
                "keyword_terms": "The term each distinct author keyword of the exports joins: the mined term of "
                "the same key (lower case, singular, spelling key) or acronym (GAN -> generative adversarial "
                "network), else a term of its own, kind keyword. Empty when no input gives keywords.",
            },
            deps=[["raw", "paper_assignments"]],
            kinds={"polars", "duckdb"},
        ),
        *_specs(
            {
                "topics": "Topics (level 1) of an NMF model over the papers' term weights, and their subtopics "
                "(level 2, each topic's papers split again), with readable labels, primary papers and NPMI "
                "coherence; the number of topics grows with the corpus and is chosen by coherence (see the "
                "selection metadata). Ids stay from run to run for the topics that persist (raw.topic_id_registry).",
                "topic_paper_weights": "Share of each paper on each topic and on each subtopic of its primary topic "
                "(a paper's shares sum to 1 per level).",
                "topic_term_weights": "The top ten terms of each topic and subtopic (no two near-copies) with their "
                "NMF weights, a skipped near-copy's weight folded into the term it copies.",
                "topic_id_registry": "Every topic id ever given out (minted) and every one retired, with the topic "
                "that took most of its papers. Rows are only added; it travels in every published warehouse, so "
                "no id is given out twice.",
            },
            deps=[["raw", "paper_terms"]],
            kinds={"scikit-learn", "duckdb"},
        ),
        *_specs(
            {
                "similar_papers": "The five most similar papers of each paper (cosine of LSA term profiles), for "
                "'more like this'."
            },
            deps=[["raw", "paper_terms"]],
            kinds={"scikit-learn", "numpy", "duckdb"},
        ),
        *_specs(
            {
                "paper_names": "The named method, model, dataset or benchmark each abstract introduces (`we propose "
                "Low-Rank Sparse Attention (Lorsa)` -> Lorsa), null when none: a stand-in for the missing titles."
            },
            deps=[["raw", "paper_assignments"]],
            kinds={"python", "duckdb"},
        ),
    ],
    group_name="nlp",
    pool=WRITER_POOL,
)
def corpus_analysis(
    context: AssetExecutionContext, config: AnalysisConfig, warehouse: WarehouseResource, engine: EngineResource
):
    with warehouse.build_connection() as con:
        size = topic_ids.previous_size(con)
    # The previous run's number of topics, which the model keeps while it still fits (none on a
    # first run). The texts are not held here: the analysis frees them early.
    compute = engine.compute(warehouse.paths.warehouse)
    analysis = compute.analyse(warehouse.read_frame(_CANONICAL_TEXTS, large=("text",)), size)
    index, neighbours, names = analysis.index, analysis.similar, analysis.names
    # Author keywords (exports only; text lists have none, and then nothing is matched) and their terms.
    keywords = keyword_terms(warehouse.read_frame(KEYWORDS_SQL), index.terms, index.aliases)
    # The previous run's topics, to keep the ids of those that persist: read after the analysis,
    # whose peak they would otherwise add to.
    with warehouse.build_connection() as con:
        history = topic_ids.load(con)
    identified = topic_ids.assign(analysis.model, history, context.run.run_id, datetime.now(UTC))
    model = identified.model
    paper_terms, keyphrases = index.paper_terms, best_terms(index.paper_terms)
    if config.keyphrase_embeddings:  # the texts again: the analysis let go of them early
        texts = warehouse.read_frame(_CANONICAL_TEXTS, large=("text",))
        paper_terms, keyphrases = rank_by_embeddings(paper_terms, texts, term_keys(index.terms["term"], index.aliases))
    with warehouse.build_connection() as con:
        for table, frame in {
            "terms": index.terms,
            "paper_terms": paper_terms,
            "paper_keyphrases": keyphrases,
            "term_aliases": index.aliases,
            "keyword_terms": keywords,
            "similar_papers": neighbours,
            "paper_names": names,
        }.items():
            write_table(con, table, frame)
        # The topics and the registry of their ids change together or not at all.
        con.begin()
        for table, frame in {
            "topics": model.all_topics(),
            "topic_paper_weights": model.all_paper_topics(),
            "topic_term_weights": model.all_topic_terms(),
        }.items():
            write_table(con, table, frame)
        topic_ids.append(con, identified.new_entries)
        con.commit()

    top_terms = index.terms.sort(["doc_freq", "term"], descending=[True, False]).head(15)
    yield MaterializeResult(
        asset_key=["raw", "terms"],
        metadata=frame_metadata(
            index.terms,
            top_terms=counts_table(top_terms.select("term", "kind", "doc_freq")),
            terms_by_kind=counts_table(index.terms.group_by("kind").len("terms").sort("kind")),
        ),
    )
    ranking = "weight and embeddings" if config.keyphrase_embeddings else "weight"
    yield MaterializeResult(asset_key=["raw", "paper_terms"], metadata=frame_metadata(paper_terms, ranked_by=ranking))
    yield MaterializeResult(
        asset_key=["raw", "paper_keyphrases"],
        metadata=frame_metadata(
            keyphrases,
            ranked_by=ranking,
            papers=keyphrases["paper_id"].n_unique(),
            own_noun_phrases=keyphrases["term"].null_count(),
        ),
    )
    yield MaterializeResult(
        asset_key=["raw", "term_aliases"],
        metadata=frame_metadata(
            index.aliases.sort("papers", "alias", descending=[True, False]),
            aliases_by_kind=counts_table(index.aliases.group_by("alias_kind").len("aliases").sort("alias_kind")),
        ),
    )
    yield MaterializeResult(
        asset_key=["raw", "keyword_terms"],
        metadata=frame_metadata(
            keywords,
            keyword_terms=keywords.filter(pl.col("matched_by").is_null())["term"].n_unique(),
            keywords_by_match=counts_table(
                keywords.group_by(matched_by=pl.col("matched_by").fill_null("none")).len("keywords").sort("matched_by")
            ),
        ),
    )
    yield MaterializeResult(
        asset_key=["raw", "topics"],
        metadata=frame_metadata(
            model.all_topics(),
            topics=model.topics.height,
            subtopics=model.subtopics.height,
            topic_sizes=counts_table(model.topics.drop("parent_topic_id")),
            sizes_tried=counts_table(model.selection),
            topics_keeping_their_id=identified.kept,
            topics_with_new_id=identified.minted,
            topics_retired=identified.retired,
        ),
    )
    yield MaterializeResult(asset_key=["raw", "topic_paper_weights"], metadata=frame_metadata(model.all_paper_topics()))
    yield MaterializeResult(asset_key=["raw", "topic_term_weights"], metadata=frame_metadata(model.all_topic_terms()))
    yield MaterializeResult(
        asset_key=["raw", "topic_id_registry"],
        metadata={
            "dagster/row_count": history.registry.height + identified.new_entries.height,
            "entries_added": identified.new_entries.height,
        },
    )
    yield MaterializeResult(
        asset_key=["raw", "similar_papers"],
        metadata=frame_metadata(
            neighbours, mean_top_score=float(neighbours.filter(pl.col("rank") == 1)["score"].mean() or 0)
        ),
    )
    named = names.drop_nulls("method_name")
    yield MaterializeResult(
        asset_key=["raw", "paper_names"],
        metadata=frame_metadata(named, papers=names.height, papers_with_a_name=named.height),
    )
