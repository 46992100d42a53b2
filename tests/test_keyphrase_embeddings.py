"""`paperhouse run --keyphrase-embeddings`: keyphrases ranked by weight, closeness in meaning to the
abstract and whole noun phrases, a paper's own noun phrases among them; off by default, and then
nothing of it is loaded."""

import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from corpus import SEEDS
from warehouses import imported_modules

from paperhouse.nlp.keyphrases import embeddings as keyphrase_embeddings
from paperhouse.nlp.keyphrases.embeddings import cosines, minilm, rank_by_embeddings, redundant
from paperhouse.nlp.keyphrases.noun_phrases import (
    own_noun_phrases,
    phrase_keys,
    phrase_runs,
    runs_by_paper,
    term_keys,
    wholeness,
)
from paperhouse.nlp.keyphrases.ranking import KEYPHRASE_SCHEMA, best_terms
from paperhouse.nlp.stems import stem_key

WEIGHT_ORDER = """
    select paper_id, term, weight, rank,
        row_number() over (partition by paper_id order by weight desc, term) as weight_rank
    from marts.paper_terms
"""


def keys(*phrases: str) -> set[str]:
    return {stem_key(phrase) for phrase in phrases}


def test_noun_phrases_break_at_verbs_and_end_in_a_noun():
    whole, inner = phrase_keys(phrase_runs("We pick independent money managers for the separate-account industry."))
    assert keys("independent money managers", "separate-account industry") <= whole
    assert stem_key("pick independent money managers") not in whole | inner  # "pick" is a verb
    assert keys("money managers", "managers", "industry") <= inner
    assert stem_key("independent") not in whole | inner  # an adjective ends no phrase


def test_wholeness_is_one_where_whole_else_the_root_of_the_corpus_share_of_whole_uses():
    texts = pl.DataFrame(
        {
            "paper_id": ["a", "b", "c"],
            "text": [
                "The money manager decides.",
                "An independent money manager decides.",
                "Graph neural networks learn.",
            ],
        }
    )
    rows = pl.DataFrame({"paper_id": ["a", "b", "c", "c"], "term": ["money manager"] * 2 + ["neural network"] * 2})
    assert wholeness(rows, runs_by_paper(texts)).to_list() == [1.0, pytest.approx(0.5**0.5), 0.0, 0.0]


def test_own_noun_phrases_are_the_papers_phrases_it_holds_no_term_for():
    texts = pl.DataFrame(
        {
            "paper_id": ["p"],
            "text": [
                "GANs are compared with generative adversarial networks for the proposed image synthesis on "
                "novel benchmark datasets, with a deep convolutional neural network architecture and spectral "
                "normalisation layers."
            ],
        }
    )
    paper_terms = pl.DataFrame({"paper_id": ["p"], "term": ["image synthesis"]})
    terms_by_key = term_keys(
        pl.Series(["generative adversarial network", "image synthesis"]),
        pl.DataFrame({"alias": ["GAN"], "term": ["generative adversarial network"]}),
    )
    own = own_noun_phrases(paper_terms, runs_by_paper(texts), terms_by_key)
    # "GANs" is a term by its alias, written as the term, and its long form the same term again;
    # "proposed image synthesis" is the paper's term; "benchmark dataset" is made of generic words
    # only; five words are more than a term has.
    assert own.rows() == [
        ("p", "generative adversarial network", "generative adversarial network"),
        ("p", "spectral normalisation layer", None),
    ]


def _fake_embed(texts: list[str]) -> np.ndarray:
    """Unit vectors: the abstract points at "policy gradient", every other text away from it."""
    return np.array([[1.0, 0.0] if "policy" in text else [0.0, 1.0] for text in texts])


def test_rank_blends_weight_with_closeness_and_keeps_everything_else():
    paper_terms = pl.DataFrame(
        {
            "paper_id": ["p", "p", "p", "q"],
            "term": ["sample complexity", "policy gradient", "decision process", "sample complexity"],
            "occurrences": [3, 1, 1, 2],
            "weight": [0.8, 0.5, 0.3, 1.0],
            "rank": [1, 2, 3, 1],
        },
        schema_overrides={"occurrences": pl.Int32, "rank": pl.Int32},
    )
    texts = pl.DataFrame(
        {
            "paper_id": ["p", "q"],
            "text": ["The sample complexity of policy gradient for a decision process.", "Its sample complexity."],
        }
    )
    ranked, keyphrases = rank_by_embeddings(paper_terms, texts, {}, _fake_embed)
    assert ranked.schema == paper_terms.schema
    # "policy gradient" holds the whole cosine share and part of the weight share; the others no cosine.
    assert ranked.filter(pl.col("paper_id") == "p")["term"].to_list() == [
        "policy gradient",
        "sample complexity",
        "decision process",
    ]
    assert ranked.filter(pl.col("paper_id") == "p")["rank"].to_list() == [1, 2, 3]
    assert ranked.drop("rank").sort("paper_id", "term").equals(paper_terms.drop("rank").sort("paper_id", "term"))
    # The keyphrases: the same order, and the text's own noun phrases after them (no weight, far in meaning).
    assert keyphrases.schema == pl.Schema(KEYPHRASE_SCHEMA)
    assert keyphrases.filter(pl.col("paper_id") == "p")["keyphrase"].to_list()[:3] == [
        "policy gradient",
        "sample complexity",
        "decision process",
    ]
    assert keyphrases.filter(pl.col("term").is_not_null())["term"].to_list() == [
        "policy gradient",
        "sample complexity",
        "decision process",
        "sample complexity",
    ]
    empty = rank_by_embeddings(paper_terms.clear(), texts, {}, _fake_embed)
    assert empty.paper_terms.height == 0 and empty.keyphrases.schema == pl.Schema(KEYPHRASE_SCHEMA)


def test_a_term_around_a_higher_scored_term_of_its_paper_is_redundant():
    scored = pl.DataFrame(
        {
            "paper_id": ["p", "p", "p", "p", "p", "q"],
            "keyphrase": [
                "adversarial network",
                "generative adversarial networks",  # holds the words of a higher one: redundant
                "networks adversarial",  # the same words as a higher one, not more: kept
                "network",  # inside higher ones, not around them: kept
                "adversarial graph",  # shares a word only
                "adversarial network training",  # around "adversarial network" of another paper only
            ],
            "score": [0.9, 0.8, 0.7, 0.6, 0.5, 0.9],
        }
    )
    assert redundant(scored).to_list() == [False, True, False, False, False, False]
    assert redundant(scored.with_columns(score=pl.lit(0.5))).to_list() == [False] * 6  # none scores higher


def test_the_discount_lets_a_new_concept_pass_a_longer_phrase_of_a_listed_one():
    paper_terms = pl.DataFrame(
        {
            "paper_id": ["p"] * 3,
            "term": ["policy gradient", "policy gradient method", "sample complexity"],
            "weight": [1.0, 0.9, 0.7],
            "rank": [1, 2, 3],
        },
        schema_overrides={"rank": pl.Int32},
    )
    texts = pl.DataFrame({"paper_id": ["p"], "text": ["Policy gradient. A policy gradient method. Sample complexity."]})
    flat = lambda texts: np.array([[1.0, 0.0]] * len(texts))  # noqa: E731 - every cosine the same
    # All three whole noun phrases: the weights alone order them, until the discount.
    ranked = rank_by_embeddings(paper_terms, texts, {}, flat).paper_terms
    assert ranked["term"].to_list() == ["policy gradient", "sample complexity", "policy gradient method"]


def test_a_papers_own_noun_phrase_close_in_meaning_becomes_a_keyphrase():
    paper_terms = pl.DataFrame(
        {
            "paper_id": ["p", "p"],
            "term": ["policy gradient", "sample complexity"],
            "weight": [1.0, 0.9],
            "rank": [1, 2],
        },
        schema_overrides={"rank": pl.Int32},
    )
    texts = pl.DataFrame(
        {"paper_id": ["p"], "text": ["Policy gradient or trust-region policy optimisation: sample complexity."]}
    )
    ranked, keyphrases = rank_by_embeddings(paper_terms, texts, {}, _fake_embed)
    # The own phrase holds the whole cosine share and no weight; "sample complexity" only weight.
    assert keyphrases.select("keyphrase", "term", "rank").rows() == [
        ("policy gradient", "policy gradient", 1),
        ("trust-region policy optimisation", None, 2),
        ("sample complexity", "sample complexity", 3),
    ]
    assert ranked["rank"].to_list() == [1, 2]  # the terms' own order, the own phrase is none of them


def test_the_default_keyphrases_are_the_ten_best_terms():
    paper_terms = pl.DataFrame(
        {"paper_id": ["p"] * 12, "term": [f"t{i}" for i in range(12)], "weight": [1 - i / 20 for i in range(12)]}
    ).with_columns(rank=pl.int_range(1, 13, dtype=pl.Int32), occurrences=pl.lit(1, pl.Int32))
    keyphrases = best_terms(paper_terms.reverse())
    assert keyphrases.schema == pl.Schema(KEYPHRASE_SCHEMA)
    assert keyphrases.select("keyphrase", "term", "rank").rows() == [(f"t{i}", f"t{i}", i + 1) for i in range(10)]
    assert keyphrases["score"].to_list() == paper_terms["weight"].head(10).to_list()


def test_cosines_come_out_in_row_order_whatever_the_batches(monkeypatch):
    texts = pl.DataFrame({"paper_id": ["p", "q", "r"], "text": ["policy", "other", "policy again"]})
    rows = pl.DataFrame({"paper_id": ["r", "p", "q", "p"], "term": ["policy gradient", "bound", "policy", "policy"]})
    expected = [1.0, 0.0, 0.0, 1.0]  # "policy" texts point at "policy" terms
    assert cosines(rows, texts, _fake_embed).to_list() == expected
    monkeypatch.setattr(keyphrase_embeddings, "_PAPERS_PER_BATCH", 1)
    assert cosines(rows, texts, _fake_embed).to_list() == expected


def test_the_packaged_model_embeds_offline_and_tells_meanings_apart():
    embed = minilm()
    text, near, far = embed(
        ["Graph neural networks pass messages between the nodes of a graph.", "graph neural network", "tax law"]
    )
    assert np.linalg.norm(text) == pytest.approx(1.0, abs=1e-5)
    assert text @ near > text @ far + 0.3


def _run(warehouse: Path, *flags: str) -> subprocess.CompletedProcess:
    """`paperhouse run` on the bundled seeds; prints whether torch was imported by the end."""
    code = (
        "import sys; from paperhouse.cli import main; "
        f"code = main(['run', '--seeds', {str(SEEDS)!r}, '--warehouse', {str(warehouse)!r}, *{list(flags)!r}]); "
        "print('torch imported:', 'torch' in sys.modules); sys.exit(code)"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_the_option_reranks_keyphrases_only_and_is_not_loaded_when_off(seeds_build, tmp_path):
    # Off: the suite's `paperhouse run` of the bundled seeds, whose processes list what they import.
    default, embedded = seeds_build.warehouse, tmp_path / "embedded" / "paperhouse.duckdb"
    on = _run(embedded, "--keyphrase-embeddings")
    assert on.returncode == 0, on.stderr[-2000:]
    imported = imported_modules(seeds_build.process)
    assert {"dagster", "duckdb", "polars", "sklearn"} <= imported and "torch" not in imported
    assert "torch imported: True" in on.stdout

    def read(warehouse: Path, sql: str) -> pl.DataFrame:
        with duckdb.connect(str(warehouse), read_only=True) as con:
            return con.execute(sql).pl()

    by_weight, by_blend = read(default, WEIGHT_ORDER), read(embedded, WEIGHT_ORDER)
    assert (by_weight["rank"] == by_weight["weight_rank"]).all()  # off: rank is the weight's order
    same_terms = ["paper_id", "term", "weight"]
    assert by_blend.select(same_terms).sort(same_terms).equals(by_weight.select(same_terms).sort(same_terms))
    counts = by_blend.group_by("paper_id").agg(pl.col("rank").sort(), n=pl.len())
    assert all(ranks == list(range(1, n + 1)) for ranks, n in counts.select("rank", "n").iter_rows())
    firsts = {
        name: dict(frame.filter(pl.col("rank") == 1).select("paper_id", "term").iter_rows())
        for name, frame in (("off", by_weight), ("on", by_blend))
    }
    changed = sum(firsts["off"][paper] != term for paper, term in firsts["on"].items())
    assert changed >= len(firsts["on"]) // 10, changed
    # The keyphrases: off, the ten best terms; on, some are the papers' own noun phrases, no term.
    keyphrases = "select paper_id, rank, keyphrase, term_id from marts.paper_keyphrases"
    off_keyphrases, on_keyphrases = read(default, keyphrases), read(embedded, keyphrases)
    assert off_keyphrases.sort("paper_id", "rank")["keyphrase"].equals(
        by_weight.filter(pl.col("rank") <= 10).sort("paper_id", "rank")["term"], check_names=False
    )
    assert off_keyphrases["term_id"].null_count() == 0
    own = on_keyphrases.filter(pl.col("term_id").is_null())
    assert own.height >= on_keyphrases.height // 50 and own["paper_id"].n_unique() >= 10, own
    assert on_keyphrases["paper_id"].n_unique() == off_keyphrases["paper_id"].n_unique()
    # Topics and similar papers compare the weights, which the option leaves alone.
    for table in ("topic_terms", "similar_papers"):
        assert read(default, f"select * from marts.{table} order by all").equals(
            read(embedded, f"select * from marts.{table} order by all")
        ), table
