"""The corpus step on Spark (``paperhouse.engines.spark.analysis``) against ``analyse`` on one machine, on
the bundled seeds and on a 10k synthetic corpus.

Exact: the terms (with ``doc_freq``, ``idf``, kinds), the aliases, each paper's ranked terms and
their occurrences, and which (paper, term) entries the weight matrix holds. The weights are the
same arithmetic in the same order per paper (``weighed_terms_of`` numbers a partition's terms in
sorted order, as the corpus' are), so they are held to 1e-12.

Topics are fitted on the same sample on the driver: the same topics, top terms and coherence.
Papers are placed per partition, and NMF's solver stops when its step falls under 1e-3 of its
first, measured per batch: shares to 0.005 (10k: at most 0.001 apart), the primary topic equal
except where a paper's two largest shares are that close. Similar papers of a corpus of up to
20,000 papers are searched whole in one task: the same rows. Past that (here, the search's limits
lowered for the 10k corpus), cells on Spark: the same LSA model and cells (fitted on the same
sample), profiles in float64 against float32: scores to one unit of their fourth decimal, and at
least 95% of the (paper, neighbour) pairs shared. Method names: the same rows.

Needs a JRE; a module-scoped session on local[2], stopped at the end.
"""

import hashlib

import polars as pl
import pytest
from corpus import seed_abstracts
from polars.testing import assert_frame_equal

from paperhouse.evaluation import real_data
from paperhouse.evaluation.synth import generate
from paperhouse.ingest.normalize import clean_text
from paperhouse.nlp.analysis import analyse
from paperhouse.nlp.names import NAME_SCHEMA, extract_method_names, introduced_names
from paperhouse.nlp.similar import SIMILAR_SCHEMA
from paperhouse.nlp.terms.extraction import ALIAS_SCHEMA, PAPER_TERM_SCHEMA, TERM_SCHEMA, index_terms

pytestmark = pytest.mark.spark

WEIGHT_TOLERANCE = 1e-12
SHARE_TOLERANCE = 0.005
SCORE_TOLERANCE = 1e-4 + 1e-9
NEIGHBOURS_SHARED = 0.95


def corpus(texts: list[str]) -> pl.DataFrame:
    """Papers as the corpus step reads them: distinct hash ids (not in file order), cleaned texts."""
    ids = [hashlib.sha256(text.encode()).hexdigest()[:16] for text in texts]
    return (
        pl.DataFrame({"paper_id": ids, "text": texts})
        .unique("paper_id", keep="first", maintain_order=True)
        .select("paper_id", text=clean_text(pl.col("text")))
    )


def both_engines(spark, papers: pl.DataFrame):
    from paperhouse.engines.spark.analysis import analyse_on_spark

    # Four partitions whatever the corpus's size: every partition holds papers of several lists.
    frame = spark.createDataFrame(papers.to_arrow()).repartition(4)
    on_spark = analyse_on_spark(spark, frame)
    return analyse(papers.clone()), on_spark


@pytest.fixture(scope="module")
def seeds(spark):
    return both_engines(spark, corpus(seed_abstracts()))


@pytest.fixture(scope="module")
def synthetic(spark):
    return both_engines(spark, corpus([text for text, _, _ in generate(seed_abstracts(), 10_000)]))


def polars_of(frame, schema: dict) -> pl.DataFrame:
    return pl.from_arrow(frame.toArrow()).cast(schema)


@pytest.fixture(params=["seeds", "synthetic"])
def engines(request):
    return request.getfixturevalue(request.param)


def test_the_terms_and_aliases_are_the_same(engines):
    single, on_spark = engines
    assert single.index.terms.height > 1000
    assert_frame_equal(polars_of(on_spark.index.terms, TERM_SCHEMA).sort("term"), single.index.terms)
    assert single.index.aliases.height > 0
    assert_frame_equal(polars_of(on_spark.index.aliases, ALIAS_SCHEMA).sort("alias", "term"), single.index.aliases)


def test_each_paper_ranks_the_same_terms_with_the_same_weights(engines):
    single, on_spark = engines
    expected = single.index.paper_terms.sort("paper_id", "rank")
    found = polars_of(on_spark.index.paper_terms, PAPER_TERM_SCHEMA).sort("paper_id", "rank")
    assert expected.height > 0
    assert_frame_equal(found.drop("weight"), expected.drop("weight"))
    assert (found["weight"] - expected["weight"]).abs().max() <= WEIGHT_TOLERANCE


def test_the_weight_matrix_holds_the_same_entries(engines):
    single, on_spark = engines
    matrix = single.index.weights.matrix.tocoo()
    expected = pl.DataFrame(
        {
            "paper_id": single.index.weights.paper_ids.gather(matrix.row),
            "term": single.index.weights.terms[matrix.col].astype(str),
            "weight": matrix.data,
        }
    ).sort("paper_id", "term")
    found = polars_of(on_spark.index.weights, {"paper_id": pl.String, "term": pl.String, "weight": pl.Float64})
    found = found.sort("paper_id", "term")
    assert expected.height > 0
    assert_frame_equal(found.drop("weight"), expected.drop("weight"))
    assert (found["weight"] - expected["weight"]).abs().max() <= WEIGHT_TOLERANCE


def test_topics_are_the_same_up_to_their_tolerance(engines):
    from paperhouse.engines.spark.topics import to_topic_model

    single, on_spark = engines
    expected, found = single.model, to_topic_model(on_spark.model)
    # The models are fitted on the same sample, so topics, labels, top terms and coherence agree.
    assert_frame_equal(found.selection, expected.selection)
    assert_frame_equal(found.all_topic_terms(), expected.all_topic_terms())
    assert_frame_equal(found.all_topics().drop("n_papers"), expected.all_topics().drop("n_papers"))
    # Papers are placed per partition: shares agree to the solver's tolerance, and a share row only
    # one engine keeps lies within it of the 5% cut (topics._MIN_PAPER_WEIGHT).
    shares = expected.all_paper_topics().join(found.all_paper_topics(), on=["paper_id", "topic_id"], how="full")
    both = shares.drop_nulls(["weight", "weight_right"])
    assert both.height >= 0.999 * shares.height
    assert (both["weight"] - both["weight_right"]).abs().max() <= SHARE_TOLERANCE
    one_side = shares.filter(pl.col("weight").is_null() | pl.col("weight_right").is_null())
    kept_by_one = one_side.select(pl.coalesce("weight", "weight_right"))
    assert ((kept_by_one.to_series() - 0.05).abs() <= SHARE_TOLERANCE).all()
    # A primary topic differs only where a paper's two largest shares are within twice the tolerance,
    # and a topic's size only by such papers.
    moved = 0
    for name in ("paper_topics", "paper_subtopics"):
        primary = [primary_topics(getattr(model, name)) for model in (expected, found)]
        differs = primary[0].join(primary[1], on="paper_id").filter(pl.col("topic_id") != pl.col("topic_id_right"))
        assert (differs["margin"] <= 2 * SHARE_TOLERANCE).all()
        moved += differs.height
    sizes = expected.all_topics().join(found.all_topics(), on="topic_id")
    assert (sizes["n_papers"] - sizes["n_papers_right"]).abs().sum() <= 2 * moved


def primary_topics(paper_topics: pl.DataFrame) -> pl.DataFrame:
    """``paper_id``, its primary ``topic_id`` and ``margin``: how far its largest share is above the next."""
    return (
        paper_topics.sort("paper_id", "weight", "topic_id", descending=[False, True, False])
        .group_by("paper_id", maintain_order=True)
        .agg(
            pl.col("topic_id").first(),
            margin=pl.col("weight").first() - pl.col("weight").get(1, null_on_oob=True).fill_null(0.0),
        )
    )


def test_similar_papers_are_the_same(engines):
    single, on_spark = engines
    found = pl.from_arrow(on_spark.similar.toArrow()).cast(SIMILAR_SCHEMA).sort("paper_id", "rank")
    assert single.similar.height > 0
    assert_frame_equal(found, single.similar.sort("paper_id", "rank"))


def test_past_the_exact_search_the_cells_find_the_neighbours_one_machine_finds(spark, synthetic, monkeypatch):
    from paperhouse.engines.spark import similar as similar_on_spark
    from paperhouse.nlp import similar

    # The search's limits lowered to fit the 10k corpus: cells of 1,000 papers past 2,000, the
    # LSA model and cells fitted on 3,000 of them (by default: 2,000 past 20,000, on 20,000).
    for module in (similar, similar_on_spark):
        monkeypatch.setattr(module, "FIT_SAMPLE", 3000)
    single, on_spark = synthetic
    weights = single.index.weights
    expected = similar.similar_papers(weights, exact_limit=2000, cell_size=1000)
    papers = spark.createDataFrame([(paper_id,) for paper_id in weights.paper_ids], "paper_id string")
    found = similar_on_spark.similar_papers_on_spark(papers, on_spark.index.weights, exact_limit=2000, cell_size=1000)
    found = pl.from_arrow(found.toArrow()).cast(SIMILAR_SCHEMA)
    assert expected.height >= 4 * weights.matrix.shape[0]
    assert found.group_by("paper_id").len()["len"].max() <= 5
    pairs = expected.join(found, on=["paper_id", "similar_paper_id"], how="inner")
    assert pairs.height >= NEIGHBOURS_SHARED * expected.height
    assert (pairs["score"] - pairs["score_right"]).abs().max() <= SCORE_TOLERANCE
    assert_frame_equal(found.sort("paper_id", "rank").select("rank"), expected.sort("paper_id", "rank").select("rank"))


@pytest.mark.parametrize("size", [76, 10_000])
def test_method_names_are_the_same(spark, size):
    from paperhouse.engines.spark.names import method_names_on_spark

    texts = seed_abstracts() if size == 76 else [text for text, _, _ in generate(seed_abstracts(), size)]
    papers = corpus(texts)
    expected = extract_method_names(papers.clone()).sort("paper_id")
    found = method_names_on_spark(spark.createDataFrame(papers.to_arrow()).repartition(4))
    assert expected["method_name"].drop_nulls().len() > 0
    # The synthetic lists repeat the seeds' names: many are taken back as written by many papers.
    assert size == 76 or introduced_names(papers)["method_name"].drop_nulls().len() > expected["method_name"].count()
    assert_frame_equal(polars_of(found, NAME_SCHEMA).sort("paper_id"), expected)


@pytest.mark.skipif(not real_data.available(), reason="the real lists are missing (PAPERHOUSE_REALDATA)")
def test_on_the_real_conference_lists_the_terms_are_the_same(spark, tmp_path):
    from paperhouse.engines.spark.term_index import index_terms_on_spark

    # Real abstracts define and reuse acronyms, and spell terms several ways: the votes and merges.
    papers = corpus(real_data.write_half("conferences", "tune", tmp_path).labels["text"].to_list())
    expected = index_terms(papers.clone())
    found = index_terms_on_spark(spark.createDataFrame(papers.to_arrow()).repartition(4))
    assert expected.aliases.filter(pl.col("alias_kind") == "acronym").height > 10
    assert_frame_equal(polars_of(found.terms, TERM_SCHEMA).sort("term"), expected.terms)
    assert_frame_equal(polars_of(found.aliases, ALIAS_SCHEMA).sort("alias", "term"), expected.aliases)
    ranked = polars_of(found.paper_terms, PAPER_TERM_SCHEMA).sort("paper_id", "rank")
    assert_frame_equal(ranked.drop("weight"), expected.paper_terms.sort("paper_id", "rank").drop("weight"))
    assert (ranked["weight"] - expected.paper_terms.sort("paper_id", "rank")["weight"]).abs().max() <= WEIGHT_TOLERANCE
    found.unpersist()


@pytest.mark.parametrize(
    "texts",
    [
        ["the of and", "We study."],  # no word a term could start with
        ["Graph neural networks (GNNs) scale. GNNs help.", "We train graph neural networks.", "Sparse autoencoders."],
    ],
)
def test_a_corpus_of_a_few_papers_or_of_no_terms_gives_what_analyse_gives(spark, texts):
    from paperhouse.engines.spark.analysis import analyse_on_spark
    from paperhouse.engines.spark.topics import to_topic_model

    papers = pl.DataFrame({"paper_id": [f"p{i}" for i in range(len(texts))], "text": texts})
    expected = analyse(papers.clone())
    found = analyse_on_spark(spark, spark.createDataFrame(papers.to_arrow()).repartition(4))
    assert_frame_equal(polars_of(found.index.terms, TERM_SCHEMA).sort("term"), expected.index.terms)
    ranked = polars_of(found.index.paper_terms, PAPER_TERM_SCHEMA).sort("paper_id", "rank")
    assert_frame_equal(ranked, expected.index.paper_terms.sort("paper_id", "rank"))
    assert_frame_equal(to_topic_model(found.model).all_topics(), expected.model.all_topics())
    assert found.similar.count() == expected.similar.height
