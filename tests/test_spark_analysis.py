"""The corpus step on Spark (``paperhouse.spark.analysis``) against ``analyse`` on one machine, on
the bundled seeds and on a 10k synthetic corpus.

Exact: the terms (with ``doc_freq``, ``idf``, kinds), the aliases, each paper's ranked terms and
their occurrences, and which (paper, term) entries the weight matrix holds. The weights are the
same arithmetic in the same order per paper (``weighed_terms_of`` numbers a partition's terms in
sorted order, as the corpus' are), so they are held to 1e-12. Topics and similar papers are fitted
on the driver from the collected matrix: topic shares to 1e-6 (they are rounded to 6 decimals),
the primary topic equal except where a paper's two largest shares are within 1e-6; similar papers'
scores to 1e-5 (float32 profiles), and at least 95% of each corpus's (paper, neighbour) pairs
shared: past the exact search the LSA projection is a randomized SVD over the matrix's columns,
which on Spark are only the terms the matrix uses.

Needs a JRE; a module-scoped session on local[2], stopped at the end.
"""

import hashlib
import shutil

import polars as pl
import pytest
from corpus import seed_abstracts
from polars.testing import assert_frame_equal

from paperhouse.analysis import analyse
from paperhouse.normalize import clean_text
from paperhouse.synth import generate
from paperhouse.terms import ALIAS_SCHEMA, PAPER_TERM_SCHEMA, TERM_SCHEMA

pytest.importorskip("pyspark")
pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs a JRE")

WEIGHT_TOLERANCE = 1e-12
SHARE_TOLERANCE = 1e-6
SCORE_TOLERANCE = 1e-5
NEIGHBOURS_SHARED = 0.95


def corpus(texts: list[str]) -> pl.DataFrame:
    """Papers as the corpus step reads them: distinct hash ids (not in file order), cleaned texts."""
    ids = [hashlib.sha256(text.encode()).hexdigest()[:16] for text in texts]
    return (
        pl.DataFrame({"paper_id": ids, "text": texts})
        .unique("paper_id", keep="first", maintain_order=True)
        .select("paper_id", text=clean_text(pl.col("text")))
    )


@pytest.fixture(scope="module")
def spark():
    from paperhouse.spark.session import spark_session

    session = spark_session("local[2]", shuffle_partitions=4)
    yield session
    session.stop()


def both_engines(spark, papers: pl.DataFrame):
    from paperhouse.spark.analysis import analyse_on_spark

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
    single, on_spark = engines
    expected, found = single.model, on_spark.model
    assert_frame_equal(found.all_topics().drop("coherence"), expected.all_topics().drop("coherence"))
    assert_frame_equal(found.all_topic_terms().drop("weight"), expected.all_topic_terms().drop("weight"))
    shares = expected.all_paper_topics().join(found.all_paper_topics(), on=["paper_id", "topic_id"], how="full")
    assert shares["weight"].null_count() == 0 and shares["weight_right"].null_count() == 0
    assert (shares["weight"] - shares["weight_right"]).abs().max() <= SHARE_TOLERANCE
    primary = (
        expected.paper_topics.sort("weight", descending=True)
        .group_by("paper_id", maintain_order=True)
        .agg(topic=pl.col("topic_id").first(), margin=pl.col("weight").first() - pl.col("weight").get(1, null_on_oob=True))
    )
    chosen = found.paper_topics.sort("weight", descending=True).group_by("paper_id").agg(pl.col("topic_id").first())
    differs = primary.join(chosen, on="paper_id").filter(pl.col("topic") != pl.col("topic_id"))
    assert differs.filter(pl.col("margin").fill_null(1.0) > SHARE_TOLERANCE).height == 0


def test_similar_papers_are_the_same_up_to_their_tolerance(engines):
    single, on_spark = engines
    expected = single.similar
    found = pl.from_arrow(on_spark.similar.toArrow()).cast(expected.schema)
    assert expected.height > 0 and found.height > 0
    assert found.group_by("paper_id").len()["len"].max() <= 5
    pairs = expected.join(found, on=["paper_id", "similar_paper_id"], how="inner")
    assert pairs.height >= NEIGHBOURS_SHARED * expected.height
    assert (pairs["score"] - pairs["score_right"]).abs().max() <= SCORE_TOLERANCE
