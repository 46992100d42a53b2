"""A deterministic two-level topic model: NMF over the papers' term weights.

**Topics (level 1).** NMF over the papers' term weights; how many grows with the corpus, and the
size kept is the first tried without a catch-all topic (``paperhouse.nlp.topics.sizes``).

**Subtopics (level 2).** Each topic's papers are split again by NMF (``paperhouse.nlp.topics.subtopics``).
Every paper has one primary subtopic, under its primary topic.

**Top terms.** A topic's ten top terms are read off its NMF weights, but chosen to be coherent and
distinct (``paperhouse.nlp.topics.top_terms``); coherence is NPMI (``paperhouse.nlp.topics.coherence``).

Determinism: papers and terms enter the matrix in sorted order, NMF starts from NNDSVD (no random
initialisation), and topics are numbered by level, size, then top term. Stable ids across runs
are ``paperhouse.nlp.topics.ids``' work.

Cost hardly grows with the corpus: past 4,000 papers the models are fitted on a sample taken in
paper-id (hash) order, so it does not depend on file order, and the chosen models then place every
paper; the vocabulary is capped to the 5,000 most widely shared terms.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import polars as pl
from scipy.sparse import csc_matrix, csr_matrix

from paperhouse.nlp.sklearn_setup import NMF_MAX_ITER, NMF_TOLERANCE, import_sklearn
from paperhouse.nlp.terms.extraction import TermWeights
from paperhouse.nlp.topics.coherence import text_presence
from paperhouse.nlp.topics.sizes import SizeTrial, candidate_sizes, choose, has_catch_all
from paperhouse.nlp.topics.subtopics import split_topics
from paperhouse.nlp.topics.top_terms import label, top_terms

# ``is_primary`` is decided here, once, from the same argmax that places a paper in its topic's
# split: the marts read it instead of re-deriving it from rounded weights, whose ties (an even
# share for a paper with no topic term) broke the other way and put subtopics under another topic.
PAPER_TOPIC_SCHEMA = {"paper_id": pl.String, "topic_id": pl.Int32, "weight": pl.Float64, "is_primary": pl.Boolean}
TOPIC_TERM_SCHEMA = {"topic_id": pl.Int32, "term": pl.String, "weight": pl.Float64, "rank": pl.Int32}
TOPIC_SCHEMA = {
    "topic_id": pl.Int32,
    "level": pl.Int32,
    "parent_topic_id": pl.Int32,
    "label": pl.String,
    "n_papers": pl.Int32,
    "coherence": pl.Float64,
}
SELECTION_SCHEMA = {"n_topics": pl.Int32, "coherence": pl.Float64, "largest_share": pl.Float64, "chosen": pl.Boolean}
TOPIC_LEVEL, SUBTOPIC_LEVEL = 1, 2
TOPIC_SAMPLE = 4000  # papers the models are fitted on, spread over the sorted ids (spread_sample)
MAX_VOCABULARY = 5000
_MIN_PAPER_WEIGHT = 0.05


@dataclass(frozen=True)
class TopicModel:
    paper_topics: pl.DataFrame  # paper_id, topic_id, weight (weights of a paper sum to 1): topics
    topic_terms: pl.DataFrame  # topic_id, term, weight, rank: the topics' top terms
    topics: pl.DataFrame  # TOPIC_SCHEMA, level 1: label, n_papers (primary), coherence (NPMI of the top terms)
    selection: pl.DataFrame  # every size tried: n_topics, coherence, largest_share, chosen
    subtopics: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=TOPIC_SCHEMA))  # level 2
    paper_subtopics: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=PAPER_TOPIC_SCHEMA))
    subtopic_terms: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=TOPIC_TERM_SCHEMA))

    def all_topics(self) -> pl.DataFrame:
        """Both levels, as ``raw.topics`` holds them."""
        return pl.concat([self.topics, self.subtopics]).sort("topic_id")

    def all_paper_topics(self) -> pl.DataFrame:
        """Both levels' shares, as ``raw.topic_paper_weights`` holds them (a paper's sum to 1 per level,
        one ``is_primary`` per paper and level)."""
        return pl.concat([self.paper_topics, self.paper_subtopics]).sort("paper_id", "topic_id")

    def all_topic_terms(self) -> pl.DataFrame:
        return pl.concat([self.topic_terms, self.subtopic_terms]).sort("topic_id", "rank")


def sample_texts(papers: pl.DataFrame, paper_ids: pl.Series | None = None) -> pl.DataFrame:
    """The ``paper_id`` and ``text`` of the papers the topic model is fitted on (its sample of the
    sorted ``paper_ids``, all of them up to 4,000), copied out of ``papers``: small, and holding
    none of its buffers."""
    chosen = sample_ids(paper_ids if paper_ids is not None else papers["paper_id"].unique())
    picked = papers.filter(pl.col("paper_id").is_in(chosen.implode()))
    return pl.DataFrame(
        {"paper_id": picked["paper_id"].to_list(), "text": picked["text"].to_list()},
        schema={"paper_id": pl.String, "text": pl.String},
    )


def sample_ids(paper_ids: pl.Series) -> pl.Series:
    """The ids of the papers the topic model is fitted on: its sample of the sorted (distinct) ids."""
    ids = paper_ids.sort()
    return ids[spread_sample(len(ids), TOPIC_SAMPLE)]


def fit_topics(
    weights: TermWeights,
    n_topics: int | None = None,
    texts: pl.DataFrame | None = None,
    previous_size: int | None = None,
) -> TopicModel:
    """Papers' term weights (e.g. TF-IDF) -> topics and subtopics, the number of topics chosen by
    ``paperhouse.nlp.topics.sizes`` unless ``n_topics``. ``texts`` (``paper_id``, ``text``;
    ``sample_texts``) are what the top terms' coherence is measured on; ``previous_size`` is the
    last run's number of topics."""
    import_sklearn()
    from threadpoolctl import threadpool_limits

    paper_ids = weights.paper_ids
    n_papers = len(paper_ids)
    if n_papers == 0:
        return _empty_model()
    columns = _topic_vocabulary(weights.matrix)
    matrix = weights.matrix[:, columns]
    terms = weights.terms[columns]
    # Fit on a sample fixed by the (hash) paper ids, so nothing depends on file order.
    sample = spread_sample(n_papers, TOPIC_SAMPLE)
    sample_matrix = matrix[sample]

    if n_papers < 4 or len(terms) < 2:
        # Too little to split: one topic holds every paper, so each still has a primary topic.
        selection = pl.DataFrame([(1, None, 1.0, True)], schema=SELECTION_SCHEMA, orient="row")
        terms = terms if len(terms) else np.array(["(no shared terms)"])
        components = np.ones((1, len(terms)))
        held = (matrix > 0).astype(np.float64).tocsc() if len(columns) else csc_matrix((n_papers, 1))
        level = _describe(paper_ids, terms, np.ones((n_papers, 1)), components, held, selection)
        ones = np.ones((n_papers, 1))
        return _with_subtopics(level, paper_ids, matrix, slice(None), ones, ones, terms, held)

    # The solver's matrix products are small: OpenBLAS threads cost more to wake than they save
    # (3x slower fits measured with two threads on two cores). The pool's threads read which texts
    # hold which terms beside the fits, and fit the subtopics side by side.
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        sample_texts = None if texts is None else _aligned_texts(texts, paper_ids[sample])
        fit = fit_sample(sample_matrix, terms, n_papers, sample_texts, previous_size, n_topics, pool)
        best = fit.best
        paper_weights = best.sample_weights if n_papers <= TOPIC_SAMPLE else best.model.transform(matrix)
        level = _describe(paper_ids, terms, paper_weights, best.model.components_, fit.held, fit.selection)
        return _with_subtopics(
            level, paper_ids, matrix, sample, best.sample_weights, paper_weights, terms, fit.held, pool
        )


class SampleFit(NamedTuple):
    """The topic model chosen on the sample, and what its topics' coherence is measured on."""

    best: SizeTrial
    selection: pl.DataFrame  # SELECTION_SCHEMA: every size tried
    held: csc_matrix  # which of the sample's texts (or rows, without texts) hold which terms


def fit_sample(
    sample_matrix: csr_matrix,
    terms: np.ndarray,
    n_papers: int,
    sample_texts: list[str] | None,
    previous_size: int | None,
    n_topics: int | None,
    pool: ThreadPoolExecutor,
) -> SampleFit:
    """The sizes of ``candidate_sizes(n_papers)`` (or ``n_topics``) fitted on the sample's rows of
    the topic vocabulary's columns, in order until one has no catch-all topic (``choose``).
    ``sample_texts``: the sample's texts in row order. Bounded by the sample: the Spark engine runs
    it on the driver."""
    from sklearn.decomposition import NMF

    used = (sample_matrix > 0).astype(np.float64).tocsc()

    def trial(k: int) -> SizeTrial:
        model = NMF(n_components=k, init="nndsvd", max_iter=NMF_MAX_ITER, tol=NMF_TOLERANCE, random_state=0)
        sample_weights = model.fit_transform(sample_matrix)
        shares = np.bincount(sample_weights.argmax(axis=1), minlength=k) / sample_weights.shape[0]
        coherence = np.array([top_terms(row, used, terms)[2] for row in model.components_])
        return SizeTrial(k, float(coherence.mean()), float(shares.max()), model, sample_weights)

    # NNDSVD needs no more components than the sample has rows and terms: a list whose papers
    # share only a few terms is fitted at that many topics at most.
    most = min(sample_matrix.shape)
    sizes = [n_topics] if n_topics else candidate_sizes(n_papers, previous_size)
    # Which texts hold which terms is read beside the fits (it is only needed after them).
    reading = None if sample_texts is None else pool.submit(text_presence, sample_texts, terms)
    trials: list[SizeTrial] = []
    for k in dict.fromkeys(min(size, most) for size in sizes):
        trials.append(trial(k))
        if not has_catch_all(trials[-1]):
            break
    held = used if reading is None else reading.result()
    best = choose(trials)
    selection = pl.DataFrame(
        [(t.n_topics, t.coherence, t.largest_share, t is best) for t in sorted(trials, key=lambda t: t.n_topics)],
        schema=SELECTION_SCHEMA,
        orient="row",
    )
    return SampleFit(best, selection, held)


def spread_sample(n_papers: int, size: int) -> slice:
    """All rows, or about ``size`` of them evenly spread; over papers sorted by their (hash) ids
    this is a fixed sample that does not depend on file order."""
    return slice(None) if n_papers <= size else slice(0, n_papers, n_papers // size)


def _aligned_texts(texts: pl.DataFrame, paper_ids: pl.Series) -> list[str]:
    """The texts of ``paper_ids``, in their order ("" for a paper without one)."""
    found = pl.DataFrame({"paper_id": paper_ids}).join(
        texts.select("paper_id", "text"), on="paper_id", how="left", maintain_order="left"
    )
    return found["text"].fill_null("").to_list()


def _topic_vocabulary(matrix: csr_matrix) -> np.ndarray:
    """Columns of the terms that carry topics, in term order: shared by at least two papers but
    not by most of them; of those, the ``MAX_VOCABULARY`` most widely shared."""
    document_frequency = matrix.getnnz(axis=0)
    usable = np.flatnonzero((document_frequency >= 2) & (document_frequency <= max(2, 0.5 * matrix.shape[0])))
    widest = usable[np.argsort(-document_frequency[usable], kind="stable")[:MAX_VOCABULARY]]
    return np.sort(widest)


class _Level(NamedTuple):
    """One level's tables, and for each NMF component its topic id and chosen terms."""

    model: TopicModel
    topic_id: np.ndarray
    described: list  # per component: (term columns, weights, coherence), as top_terms gives them


def _describe(
    paper_ids: pl.Series,
    terms: np.ndarray,
    weights: np.ndarray,
    components: np.ndarray,
    held: csc_matrix,
    selection: pl.DataFrame,
) -> _Level:
    """The level-1 tables of a model: topics numbered 1.. by size, then top term."""
    shares = topic_shares(weights)
    described = [top_terms(row, held, terms) for row in components]
    sizes = np.bincount(shares.argmax(axis=1), minlength=len(components))
    topic_id = number_topics(sizes, described, terms, 1)
    topics = topic_rows(topic_id, TOPIC_LEVEL, [None] * len(topic_id), described, terms, sizes)
    model = TopicModel(
        paper_rows(paper_ids, np.arange(len(paper_ids)), shares, topic_id),
        term_rows(topic_id, described, terms),
        topics,
        selection,
    )
    return _Level(model, topic_id, described)


def number_topics(sizes: np.ndarray, described: list, terms: np.ndarray, first_id: int) -> np.ndarray:
    """Each component's topic id, from ``first_id`` on: by size (``sizes``: papers whose primary
    component it is), then by top term (``described``: ``top_terms`` of each component)."""
    order = sorted(range(len(described)), key=lambda t: (-sizes[t], terms[described[t][0][0]]))
    topic_id = np.empty(len(order), dtype=np.int32)
    topic_id[order] = np.arange(first_id, first_id + len(order), dtype=np.int32)
    return topic_id


def topic_shares(weights: np.ndarray) -> np.ndarray:
    """Each paper's weights on the components as shares summing to 1 (even shares for a zero row)."""
    totals = weights.sum(axis=1, keepdims=True)
    return np.divide(weights, totals, out=np.full_like(weights, 1.0 / max(weights.shape[1], 1)), where=totals > 0)


def paper_rows(paper_ids: pl.Series, rows: np.ndarray, shares: np.ndarray, topic_id: np.ndarray) -> pl.DataFrame:
    """A paper's shares of at least 5%, and always its primary one (``is_primary``: the argmax of
    ``shares``, the component the paper is placed under)."""
    if len(rows) == 0:
        return pl.DataFrame(schema=PAPER_TOPIC_SCHEMA)
    primary = shares.argmax(axis=1)
    keep = (shares >= _MIN_PAPER_WEIGHT) | (np.arange(shares.shape[1]) == primary[:, None])
    paper_index, topic_index = np.nonzero(keep)
    return pl.DataFrame(
        {
            "paper_id": paper_ids.gather(rows[paper_index]),
            "topic_id": topic_id[topic_index],
            "weight": np.round(shares[paper_index, topic_index], 6),
            "is_primary": topic_index == primary[paper_index],
        },
        schema=PAPER_TOPIC_SCHEMA,
    ).sort("paper_id", "topic_id")


def term_rows(topic_id: np.ndarray, described: list, terms: np.ndarray) -> pl.DataFrame:
    return (
        pl.DataFrame(
            {
                "topic_id": np.concatenate([np.repeat(topic_id[t], len(d[0])) for t, d in enumerate(described)]),
                "term": np.concatenate([terms[d[0]] for d in described]),
                "weight": np.round(np.concatenate([d[1] for d in described]), 6),
                "rank": np.concatenate([np.arange(1, len(d[0]) + 1, dtype=np.int32) for d in described]),
            },
            schema=TOPIC_TERM_SCHEMA,
        )
        .filter(pl.col("weight") > 0)
        .sort("topic_id", "rank")
    )


def topic_rows(
    topic_id: np.ndarray, level: int, parents: list, described: list, terms: np.ndarray, sizes: np.ndarray
) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "topic_id": topic_id,
            "level": np.full(len(topic_id), level, dtype=np.int32),
            "parent_topic_id": parents,
            "label": [label(list(terms[d[0]])) for d in described],
            "n_papers": np.asarray(sizes, dtype=np.int32),
            "coherence": [round(d[2], 6) for d in described],
        },
        schema=TOPIC_SCHEMA,
    ).sort("topic_id")


def _with_subtopics(
    level: _Level,
    paper_ids: pl.Series,
    matrix: csr_matrix,
    sample: slice,
    sample_weights: np.ndarray,
    paper_weights: np.ndarray,
    terms: np.ndarray,
    held: csc_matrix,
    pool: ThreadPoolExecutor | None = None,
) -> TopicModel:
    """Level 2: each topic's papers (by primary topic) split by an NMF of their own
    (``paperhouse.nlp.topics.subtopics``); subtopics numbered after the topics, a topic's by size, then top term."""
    sample_primary = topic_shares(sample_weights).argmax(axis=1)
    corpus_primary = topic_shares(paper_weights).argmax(axis=1)
    splits = split_topics(matrix, sample, sample_primary, corpus_primary, level.described, terms, held, pool)
    shares = [topic_shares(split.weights) for split in splits]
    sizes = [
        np.bincount(s.argmax(axis=1), minlength=len(split.described)) for s, split in zip(shares, splits, strict=True)
    ]
    subtopics, subtopic_terms, subtopic_ids = subtopic_tables(
        level.topic_id, [split.described for split in splits], sizes, terms
    )
    paper_parts = [
        paper_rows(paper_ids, split.corpus_rows, s, ids)
        for split, s, ids in zip(splits, shares, subtopic_ids, strict=True)
    ]
    coarse = level.model
    return TopicModel(
        coarse.paper_topics,
        coarse.topic_terms,
        coarse.topics,
        coarse.selection,
        subtopics,
        pl.concat(paper_parts).sort("paper_id", "topic_id"),
        subtopic_terms,
    )


def subtopic_tables(
    topic_id: np.ndarray, described: list[list], sizes: list[np.ndarray], terms: np.ndarray
) -> tuple[pl.DataFrame, pl.DataFrame, list[np.ndarray]]:
    """The subtopics' rows and top terms, and each component's subtopic ids: numbered after the
    topics, topic by topic in id order, a topic's by size (``sizes``: per component, the papers
    whose primary subtopic each is), then top term (``described``: per component, its subtopics')."""
    next_id = len(topic_id) + 1
    ids: list[np.ndarray] = [np.array([], dtype=np.int32)] * len(topic_id)
    topics, term_parts = [], []
    for component in np.argsort(topic_id, kind="stable"):
        ids[component] = number_topics(sizes[component], described[component], terms, next_id)
        next_id += len(ids[component])
        parents = [int(topic_id[component])] * len(ids[component])
        topics.append(
            topic_rows(ids[component], SUBTOPIC_LEVEL, parents, described[component], terms, sizes[component])
        )
        term_parts.append(term_rows(ids[component], described[component], terms))
    return pl.concat(topics).sort("topic_id"), pl.concat(term_parts).sort("topic_id", "rank"), ids


def _empty_model() -> TopicModel:
    return TopicModel(
        pl.DataFrame(schema=PAPER_TOPIC_SCHEMA),
        pl.DataFrame(schema=TOPIC_TERM_SCHEMA),
        pl.DataFrame(schema=TOPIC_SCHEMA),
        pl.DataFrame(schema=SELECTION_SCHEMA),
    )
