"""Topics that stay: their number grows with the corpus and holds when a few papers come, their ids
persist from run to run, they have subtopics, and their top terms say each idea once."""

import itertools
import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from corpus import SEEDS, seed_abstracts
from warehouses import in_process_build

from paperhouse.evaluation import real_data
from paperhouse.evaluation.real_measures import near_copies
from paperhouse.ingest.normalize import clean_text
from paperhouse.nlp.analysis import analyse
from paperhouse.nlp.terms.extraction import index_terms
from paperhouse.nlp.topics import ids as topic_ids
from paperhouse.nlp.topics.model import SUBTOPIC_LEVEL, TOPIC_LEVEL, fit_topics, sample_texts
from paperhouse.nlp.topics.sizes import SizeTrial, candidate_sizes, choose, topic_count
from paperhouse.nlp.topics.top_terms import label, near_copy, top_terms
from paperhouse.warehouse.database import write_table

NEW_ABSTRACTS = [
    "Tabular foundation models promise zero-shot prediction on unseen tables, yet their attention over rows "
    "scales quadratically. We introduce a sketching layer that summarises rows into a fixed number of prototypes, "
    "keeping accuracy on forty benchmark datasets while cutting memory by an order of magnitude.",
    "Sparse autoencoders trained on the residual stream of language models recover features, but many features "
    "split or absorb one another as the dictionary grows. We measure feature absorption across dictionary sizes "
    "and propose a hierarchical penalty that keeps parent features intact.",
    "Reasoning models write long chains of thought before answering. We show that a small probe on the hidden "
    "states predicts when the answer is already fixed, and stopping the reasoning trace there saves forty percent "
    "of the tokens with no loss of accuracy on math benchmarks.",
]
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def papers(texts: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"paper_id": [f"p_{i:03d}" for i in range(len(texts))], "text": texts}).select(
        "paper_id", text=clean_text(pl.col("text"))
    )


def fitted(corpus: pl.DataFrame, previous_size: int | None = None):
    weights = index_terms(corpus).weights
    return fit_topics(weights, texts=sample_texts(corpus, weights.paper_ids), previous_size=previous_size)


def persisted(
    identified: topic_ids.Identification, before: topic_ids.TopicHistory | None = None
) -> topic_ids.TopicHistory:
    """What the next run reads back, after this run's tables are written as the pipeline writes them
    (over the registry ``before`` had)."""
    with duckdb.connect() as con:
        if before is not None and before.registry.height:
            topic_ids.append(con, before.registry)
        write_table(con, "topics", identified.model.all_topics())
        write_table(con, "topic_paper_weights", identified.model.all_paper_topics())
        write_table(con, "topic_term_weights", identified.model.all_topic_terms())
        topic_ids.append(con, identified.new_entries)
        history = topic_ids.load(con)
        assert topic_ids.previous_size(con) == history.size == identified.model.topics.height
        return history


def primaries(paper_topics: pl.DataFrame) -> dict[str, int]:
    return dict(topic_ids._primaries(paper_topics).iter_rows())


@pytest.fixture(scope="module")
def seeds_model():
    return fitted(papers(seed_abstracts()))


# ---------------------------------------------------------------------------------------------
# How many topics


def test_the_number_of_topics_grows_with_the_corpus():
    counts = {n: topic_count(n) for n in (76, 2_900, 8_000, 100_000, 1_000_000)}
    assert counts[2_900] >= 15 and counts[8_000] > counts[2_900] > 11  # eleven years of two conferences: not 11
    assert list(counts.values()) == sorted(set(counts.values()))  # strictly growing
    assert all(topic_count(n) <= topic_count(n + 1) for n in range(1, 5_000))


def test_a_few_percent_more_papers_keep_the_previous_number_of_topics_a_candidate():
    for n in [*range(20, 3_000, 7), *range(3_000, 200_000, 997)]:
        previous = topic_count(n)
        for grown in (round(n * 1.03), round(n * 0.97)):
            assert previous in candidate_sizes(grown, previous), (n, grown)


def test_the_first_size_tried_without_a_catch_all_topic_is_kept():
    def trial(k, largest=0.1, coherence=0.3):
        return SizeTrial(k, coherence, largest, None, None)

    # Coherence decides nothing: a more coherent larger size does not displace the first that qualifies.
    assert choose([trial(15), trial(16, coherence=0.5), trial(18, coherence=0.6)]).n_topics == 15
    assert choose([trial(15, largest=0.35), trial(16), trial(18)]).n_topics == 16  # 15 has a catch-all
    assert choose([trial(15, largest=0.35), trial(16, largest=0.25)]).n_topics == 16  # else the least lopsided
    # The previous run's size is tried first, then topic_count and one topic more at a time.
    assert candidate_sizes(2_900, previous=16) == [16, 15, 17, 18, 22]
    assert candidate_sizes(2_900) == [15, 16, 17, 18, 22]


def test_three_percent_more_papers_keep_the_number_of_topics(seeds_model):
    grown = papers(seed_abstracts() + NEW_ABSTRACTS)  # 76 -> 79 papers
    assert fitted(grown).topics.height == seeds_model.topics.height
    assert fitted(grown, previous_size=seeds_model.topics.height).topics.height == seeds_model.topics.height


@pytest.mark.slow
def test_five_percent_more_real_papers_move_the_number_of_topics_by_one_at_most(tmp_path):
    """The tune half of the conference lists, then with a slice of the other half (5% more papers):
    fresh fits, and a fit with the first run's history, differ by one topic at most."""
    assert real_data.available(), f"the real lists are missing at {real_data.realdata_dir()}"
    tune = real_data.write_half("conferences", "tune", tmp_path).labels["text"].to_list()
    report = real_data.write_half("conferences", "report", tmp_path).labels["text"].to_list()
    grown = papers(tune + report[: len(tune) // 20])
    first = topic_ids.assign(fitted(papers(tune)), topic_ids.empty_history(), "run-1", NOW)
    assert abs(fitted(grown).topics.height - first.model.topics.height) <= 1
    history = persisted(first)
    second = topic_ids.assign(fitted(grown, history.size), history, "run-2", NOW)
    assert abs(second.model.topics.height - first.model.topics.height) <= 1


# ---------------------------------------------------------------------------------------------
# Top terms


def test_near_copies_are_caught_wherever_the_evaluation_stems_find_them():
    assert near_copy("generative adversarial network", "adversarial network")
    assert near_copy("generative adversarial network training", "generative adversarial network")
    assert near_copy("masked language modeling", "masking") and near_copy("policy", "policies")
    assert not near_copy("graph neural network", "node classification")
    terms = index_terms(papers(seed_abstracts())).terms["term"].to_list()
    words = {}
    for term in terms:
        for word in set(term.replace("-", " ").split()):
            words.setdefault(word[:4], []).append(term)
    pairs = {tuple(sorted(p)) for group in words.values() for p in itertools.combinations(group[:15], 2)}
    judged = [pair for pair in pairs if near_copies(list(pair))]
    assert len(judged) > 100  # the sample has content
    assert [pair for pair in judged if not near_copy(*pair)] == []


def test_no_topic_or_subtopic_lists_near_copies_among_its_top_terms(seeds_model):
    for frame in (seeds_model.topic_terms, seeds_model.subtopic_terms):
        lists = frame.sort("topic_id", "rank").group_by("topic_id", maintain_order=True).agg("term")
        assert lists.height > 0
        for topic, terms in lists.iter_rows():
            assert near_copies(terms) == [], (topic, terms)
            assert len(terms) >= 5
    labels = seeds_model.all_topics()["label"].to_list()
    assert all(2 <= len(text.split(", ")) <= 4 for text in labels)
    ranked = seeds_model.topic_terms.sort("topic_id", "rank")
    assert (
        ranked.group_by("topic_id", maintain_order=True)
        .agg(ok=pl.col("weight").diff().drop_nulls().le(0).all())["ok"]
        .all()
    )


def test_a_near_copy_is_skipped_and_its_weight_folds_into_the_term_it_copies():
    assert label(["generative adversarial network", "mode collapse", "discriminator"]) == (
        "generative adversarial network, mode collapse, discriminator"
    )
    from scipy.sparse import csc_matrix

    terms = np.array(["generative adversarial network", "adversarial network", "discriminator", "mode collapse"])
    held = csc_matrix(np.array([[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 1], [0, 0, 1, 1]], dtype=float))
    columns, weights, _ = top_terms(np.array([0.9, 0.5, 0.3, 0.2]), held, terms)
    assert list(terms[columns]) == ["generative adversarial network", "discriminator", "mode collapse"]
    assert weights[0] == pytest.approx(1.4)


# ---------------------------------------------------------------------------------------------
# Two levels


def test_every_paper_has_a_primary_topic_and_a_primary_subtopic_under_it(seeds_model):
    topics, subtopics = seeds_model.topics, seeds_model.subtopics
    assert set(topics["level"]) == {TOPIC_LEVEL} and topics["parent_topic_id"].null_count() == topics.height
    assert set(subtopics["level"]) == {SUBTOPIC_LEVEL}
    assert set(subtopics["parent_topic_id"]) == set(topics["topic_id"])  # every topic has a subtopic
    assert subtopics.height > topics.height  # some topics split
    assert not set(topics["topic_id"]) & set(subtopics["topic_id"])  # one sequence of ids
    parent = dict(subtopics.select("topic_id", "parent_topic_id").iter_rows())
    topic_of, subtopic_of = primaries(seeds_model.paper_topics), primaries(seeds_model.paper_subtopics)
    assert len(topic_of) == len(subtopic_of) == 76
    assert all(parent[subtopic_of[paper]] == topic for paper, topic in topic_of.items())
    for frame in (seeds_model.paper_topics, seeds_model.paper_subtopics):
        sums = frame.group_by("paper_id").agg(pl.col("weight").sum())["weight"]  # shares under 5% are left out
        assert sums.len() == 76 and (sums <= 1 + 1e-5).all() and (sums > 0.5).all()
    sizes = (
        seeds_model.paper_subtopics.join(topic_ids._primaries(seeds_model.paper_subtopics), on=["paper_id", "topic_id"])
        .group_by("topic_id")
        .len()
    )
    assert dict(sizes.iter_rows()) == {t: n for t, n in subtopics.select("topic_id", "n_papers").iter_rows() if n}


# ---------------------------------------------------------------------------------------------
# Stable ids


def test_the_same_input_gives_the_same_topics_ids_and_no_registry_rows():
    corpus = papers(seed_abstracts())
    first = analyse(corpus).model
    again = analyse(corpus.sample(fraction=1.0, shuffle=True, seed=5)).model
    for name in ("topics", "paper_topics", "topic_terms", "subtopics", "paper_subtopics", "subtopic_terms"):
        assert getattr(first, name).equals(getattr(again, name)), name
    identified = topic_ids.assign(first, topic_ids.empty_history(), "run-1", NOW)
    history = persisted(identified)
    assert history.registry.height == identified.model.all_topics().height  # every id given out is recorded
    rerun = topic_ids.assign(analyse(corpus, previous_topics=history.size).model, history, "run-2", NOW)
    assert rerun.new_entries.height == 0 and rerun.minted == rerun.retired == 0
    assert rerun.model.all_topics().equals(identified.model.all_topics())
    assert rerun.model.all_paper_topics().equals(identified.model.all_paper_topics())


def test_a_warehouse_written_before_primaries_were_flagged_reads_them_off_the_weights(seeds_model):
    identified = topic_ids.assign(seeds_model, topic_ids.empty_history(), "run-1", NOW)
    flagged = persisted(identified)
    with duckdb.connect() as con:
        write_table(con, "topics", identified.model.all_topics())
        write_table(con, "topic_paper_weights", identified.model.all_paper_topics().drop("is_primary"))
        write_table(con, "topic_term_weights", identified.model.all_topic_terms())
        legacy = topic_ids.load(con)
    order = ["paper_id", "level"]
    assert legacy.primaries.height == 2 * seeds_model.paper_topics["paper_id"].n_unique()
    assert legacy.primaries.sort(order).equals(flagged.primaries.sort(order))


def test_a_list_bringing_three_papers_keeps_every_topic_id(seeds_model):
    first = topic_ids.assign(seeds_model, topic_ids.empty_history(), "run-1", NOW)
    history = persisted(first)
    assert history.size == seeds_model.topics.height
    grown = fitted(papers(seed_abstracts() + NEW_ABSTRACTS), history.size)
    second = topic_ids.assign(grown, history, "run-2", NOW)
    before, after = first.model.topics, second.model.topics
    assert after["topic_id"].to_list() == before["topic_id"].to_list()
    # An id keeps its meaning: most papers keep their topic id, and each topic's papers go to no
    # other topic more than they stay under its id.
    old, new = primaries(first.model.paper_topics), primaries(second.model.paper_topics)
    assert sum(new[paper] == topic for paper, topic in old.items()) >= 0.75 * len(old)
    for topic in before["topic_id"]:
        went = pl.Series([new[p] for p, t in old.items() if t == topic]).value_counts(sort=True)
        assert went.filter(pl.col("") == topic)["count"].item() == went["count"].max(), (topic, went)
    assert second.new_entries.filter(pl.col("level") == TOPIC_LEVEL).height == 0  # subtopics may re-form


def test_a_topic_that_disappears_is_retired_and_its_id_never_given_out_again(seeds_model):
    first = topic_ids.assign(seeds_model, topic_ids.empty_history(), "run-1", NOW)
    history = persisted(first)
    # The papers of the smallest topic leave, and their subject with them.
    gone = first.model.topics.sort("n_papers", "topic_id").row(0, named=True)["topic_id"]
    leaving = {p for p, t in primaries(first.model.paper_topics).items() if t == gone}
    corpus = papers(seed_abstracts()).filter(~pl.col("paper_id").is_in(sorted(leaving)))
    second = topic_ids.assign(fitted(corpus, history.size), history, "run-2", NOW)
    assert gone not in second.model.topics["topic_id"].to_list()
    retired = second.new_entries.filter(pl.col("event") == "retired")
    assert gone in retired["topic_id"].to_list() and second.retired == retired.height
    assert set(retired["level"]) <= {TOPIC_LEVEL, SUBTOPIC_LEVEL}
    ever_given = set(first.model.all_topics()["topic_id"])
    minted = second.new_entries.filter(pl.col("event") == "minted")["topic_id"].to_list()
    assert minted and min(minted) > max(ever_given)
    # Successors are live topics of the run that retired them.
    live = set(second.model.all_topics()["topic_id"])
    assert set(retired["successor_topic_id"].drop_nulls()) <= live
    kept = set(second.model.all_topics()["topic_id"]) - set(minted)
    assert kept <= ever_given and len(kept) >= seeds_model.topics.height // 2
    # A third run never hands the retired id out again, nor any minted one.
    after = persisted(second, history)
    assert after.registry.height == history.registry.height + second.new_entries.height
    third = topic_ids.assign(fitted(papers(seed_abstracts()), after.size), after, "run-3", NOW)
    new_ids = third.new_entries.filter(pl.col("event") == "minted")["topic_id"].to_list()
    assert not set(new_ids) & (ever_given | set(minted))


# ---------------------------------------------------------------------------------------------
# The pipeline: a real `paperhouse run`, then three more papers, then a lost build database


def _topic_marts(warehouse: Path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return {
            mart: con.execute(f"select * from marts.{mart} order by all").fetchall()
            for mart in (
                "topics",
                "paper_topics",
                "paper_subtopics",
                "topic_terms",
                "subtopic_terms",
                "topic_id_aliases",
                "topic_summary",
            )
        }


def _query(warehouse: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute(sql).fetchall()


@pytest.mark.slow
def test_topic_ids_persist_through_runs_a_new_list_and_a_lost_build_database(tmp_path: Path):
    seeds = tmp_path / "seeds"
    shutil.copytree(SEEDS, seeds)
    warehouse = tmp_path / "data" / "paperhouse.duckdb"
    # Runs in this process (warehouses.in_process_build, each asserting its success): what is
    # tested is what a run keeps of the last one, not the `paperhouse` process.
    in_process_build(seeds, warehouse)
    topics_before = _query(warehouse, "select topic_id, label from marts.topics where level = 1 order by topic_id")
    marts_before = _topic_marts(warehouse)
    in_process_build(seeds, warehouse)
    assert _topic_marts(warehouse) == marts_before  # the same input: the same topics, ids and rows

    (seeds / "new_list.txt").write_text("NeurIPS 2026 Papers\n\n" + "\n\n".join(NEW_ABSTRACTS) + "\n")
    in_process_build(seeds, warehouse)
    topics_after = _query(warehouse, "select topic_id, label from marts.topics where level = 1 order by topic_id")
    assert [t for t, _ in topics_after] == [t for t, _ in topics_before]
    assert _query(warehouse, "select count(*) from marts.topic_id_aliases where level = 1") == [(0,)]
    # Each level: exactly one primary per paper, and subtopics under the paper's topic.
    assert _query(
        warehouse,
        """
        select count(*) from marts.papers p
        join marts.topics s on s.topic_id = p.primary_subtopic_id
        where s.level != 2 or s.parent_topic_id != p.primary_topic_id""",
    ) == [(0,)]
    assert _query(
        warehouse, "select count(*), count(distinct paper_id) from marts.paper_subtopics where is_primary"
    ) == _query(warehouse, "select count(*), count(*) from marts.papers")
    registry = _query(warehouse, "select count(*) from raw.topic_id_registry where event = 'minted'")[0][0]
    assert registry >= _query(warehouse, "select count(*) from marts.topics")[0][0]
    assert marts_before != _topic_marts(warehouse)  # three more papers show

    # A lost build database is restored from the published warehouse, which carries the registry.
    marts_grown = _topic_marts(warehouse)
    shutil.rmtree(warehouse.parent / f".{warehouse.name}.build")
    in_process_build(seeds, warehouse)
    assert _topic_marts(warehouse) == marts_grown
