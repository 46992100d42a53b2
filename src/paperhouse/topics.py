"""A deterministic topic model: NMF over the papers' term weights, its size chosen by coherence.

Determinism: papers and terms enter the matrix in sorted order, NMF starts from NNDSVD (no
random initialisation), and topics are numbered by size, then by their top term, so the
same input gives the same topics, ids and labels on every run.

The number of topics is measured, not fixed: NMF is fitted for a range of sizes and the
one whose topics are most coherent (mean NPMI of each topic's top ten terms over the
papers) wins, among those with no catch-all topic (none holding more than 40% of papers
once there are four or more; see max_topic_share).

Cost does not grow with the corpus: past 4,000 papers the models are fitted on a sample
taken in paper-id (hash) order, so it does not depend on file order, and the chosen model
then places every paper; the vocabulary is capped to the 5,000 most widely shared terms.
The sample's shares are the ones the catch-all rule judges, so the chosen model keeps them.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import polars as pl
from scipy.sparse import csc_matrix, csr_matrix

from paperhouse.terms import TermWeights

PAPER_TOPIC_SCHEMA = {"paper_id": pl.String, "topic_id": pl.Int32, "weight": pl.Float64}
TOPIC_TERM_SCHEMA = {"topic_id": pl.Int32, "term": pl.String, "weight": pl.Float64, "rank": pl.Int32}
TOPIC_SCHEMA = {"topic_id": pl.Int32, "label": pl.String, "n_papers": pl.Int32, "coherence": pl.Float64}
SELECTION_SCHEMA = {"n_topics": pl.Int32, "coherence": pl.Float64, "largest_share": pl.Float64, "chosen": pl.Boolean}
MAX_TOPIC_SHARE = 0.4
TOP_TERMS = 10
_SAMPLE = 4000
_MAX_VOCABULARY = 5000
# Stop when an iteration improves the fit by under 0.1% of the first: the top terms and primary
# topics have long settled by then (measured on the bundled seeds), and it makes fits 2-3x faster.
_TOLERANCE = 1e-3
_LABEL_TERMS = 3


class _Trial(NamedTuple):
    """One candidate number of topics, fitted on the sample."""

    n_topics: int
    coherence: float  # mean NPMI of the topics' top terms
    largest_share: float  # of sample papers in the biggest topic
    model: Any  # the fitted sklearn NMF
    sample_weights: np.ndarray


@dataclass(frozen=True)
class TopicModel:
    paper_topics: pl.DataFrame  # paper_id, topic_id, weight (weights of a paper sum to 1)
    topic_terms: pl.DataFrame  # topic_id, term, weight, rank
    topics: pl.DataFrame  # topic_id, label, n_papers (primary), coherence (NPMI of the top terms)
    selection: pl.DataFrame  # every size tried: n_topics, coherence, largest_share, chosen


def npmi_coherence(present: csc_matrix, top_terms: np.ndarray) -> np.ndarray:
    """Mean NPMI over pairs of each topic's top terms; ``present`` is papers x terms, 1 where used.

    NPMI(i, j) = log(P(i,j) / (P(i) P(j))) / -log P(i,j), from document co-occurrence; -1 for
    pairs that never meet (Bouma 2009; Röder et al. 2015's C_NPMI without a sliding window).
    """
    n = present.shape[0]
    scores = []
    for terms in top_terms:
        columns = present[:, terms]
        together = (columns.T @ columns).toarray() / n
        alone = np.diag(together)
        i, j = np.triu_indices(len(terms), k=1)
        joint = together[i, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            npmi = np.where(joint > 0, np.log(joint / (alone[i] * alone[j])) / -np.log(joint), -1.0)
            npmi = np.where(joint >= 1, 1.0, npmi)
        scores.append(float(npmi.mean()) if len(npmi) else 0.0)
    return np.array(scores)


def max_topic_share(n_topics: int) -> float:
    """The largest share of papers one topic may hold before it is a catch-all: 40% from four
    topics up, a little over an even split below that (60% of two, 43% of three)."""
    return max(MAX_TOPIC_SHARE, 1 / n_topics + 0.1)


def candidate_sizes(n_papers: int) -> list[int]:
    """Topic counts worth trying: 2 up to about one topic per 8 papers, at most 40, on a log grid."""
    upper = int(np.clip(n_papers // 8, 2, 40))
    return sorted({int(k) for k in np.unique(np.round(np.geomspace(2, upper, num=min(upper - 1, 10))))})


_SKLEARN_IMPORT = threading.Lock()


def import_sklearn() -> None:
    """Import the parts of scikit-learn paperhouse uses (1.2 s, on first use), one thread at a time:
    the topic model and the neighbour search run side by side, and two threads importing
    scikit-learn at once fail on a partially initialised ``sklearn.base``."""
    with _SKLEARN_IMPORT:
        import sklearn.cluster  # noqa: F401
        import sklearn.decomposition  # noqa: F401


def fit_topics(weights: TermWeights, n_topics: int | None = None) -> TopicModel:
    """Papers' term weights (e.g. TF-IDF) -> topics, their number chosen by coherence unless ``n_topics``."""
    import_sklearn()
    from sklearn.decomposition import NMF
    from threadpoolctl import threadpool_limits

    paper_ids = weights.paper_ids
    n_papers = len(paper_ids)
    if n_papers == 0:
        return _empty_model()
    columns = _topic_vocabulary(weights.matrix)
    matrix = weights.matrix[:, columns]
    terms = weights.terms[columns]
    present = (matrix > 0).astype(np.float64).tocsc()

    if n_papers < 4 or len(terms) < 2:
        # Too little to split: one topic holds every paper, so each still has a primary topic.
        selection = pl.DataFrame([(1, None, 1.0, True)], schema=SELECTION_SCHEMA, orient="row")
        terms = terms if len(terms) else np.array(["(no shared terms)"])
        return _describe(paper_ids, terms, np.ones((n_papers, 1)), np.ones((1, len(terms))), present, selection)
    # Fit on a sample fixed by the (hash) paper ids, so nothing depends on file order.
    sample = spread_sample(n_papers, _SAMPLE)

    def trial(k: int) -> _Trial:
        model = NMF(n_components=k, init="nndsvd", max_iter=300, tol=_TOLERANCE, random_state=0)
        sample_weights = model.fit_transform(matrix[sample])
        top = np.argsort(-model.components_, axis=1, kind="stable")[:, :TOP_TERMS]
        shares = np.bincount(sample_weights.argmax(axis=1), minlength=k) / sample_weights.shape[0]
        coherence = float(npmi_coherence(present[sample], top).mean())
        return _Trial(k, coherence, float(shares.max()), model, sample_weights)

    # The solver's matrix products are small: OpenBLAS threads cost more to wake than they save
    # (3x slower fits measured with two threads on two cores). The cores fit sizes side by side
    # instead: the solver releases the GIL, and each fit is independent, so results do not change.
    # Largest first, as a fit's cost grows with its size: taken smallest first, the largest fit
    # (a third of the work at 10^4 papers) started last and ran alone.
    sizes = [n_topics] if n_topics else candidate_sizes(n_papers)
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        trials = sorted(pool.map(trial, sorted(sizes, reverse=True)), key=lambda t: t.n_topics)
    allowed = [t for t in trials if not t.largest_share > max_topic_share(t.n_topics)] or [
        min(trials, key=lambda t: t.largest_share)
    ]
    best = max(allowed, key=lambda t: (t.coherence, -t.n_topics))
    paper_weights = best.sample_weights if n_papers <= _SAMPLE else best.model.transform(matrix)
    selection = pl.DataFrame(
        [(t.n_topics, t.coherence, t.largest_share, t is best) for t in trials], schema=SELECTION_SCHEMA, orient="row"
    )
    return _describe(paper_ids, terms, paper_weights, best.model.components_, present, selection)


def spread_sample(n_papers: int, size: int) -> slice:
    """All rows, or about ``size`` of them evenly spread; over papers sorted by their (hash) ids
    this is a fixed sample that does not depend on file order."""
    return slice(None) if n_papers <= size else slice(0, n_papers, n_papers // size)


def _topic_vocabulary(matrix: csr_matrix) -> np.ndarray:
    """Columns of the terms that carry topics, in term order: shared by at least two papers but
    not by most of them; of those, the ``_MAX_VOCABULARY`` most widely shared."""
    document_frequency = matrix.getnnz(axis=0)
    usable = np.flatnonzero((document_frequency >= 2) & (document_frequency <= max(2, 0.5 * matrix.shape[0])))
    widest = usable[np.argsort(-document_frequency[usable], kind="stable")[:_MAX_VOCABULARY]]
    return np.sort(widest)


def _describe(paper_ids: pl.Series, terms: np.ndarray, weights: np.ndarray, components: np.ndarray,
              present: csc_matrix, selection: pl.DataFrame, min_paper_weight: float = 0.05) -> TopicModel:
    totals = weights.sum(axis=1, keepdims=True)
    shares = np.divide(weights, totals, out=np.full_like(weights, 1.0 / weights.shape[1]), where=totals > 0)
    primary = shares.argmax(axis=1)
    ranked = np.argsort(-components, axis=1, kind="stable")[:, :TOP_TERMS]
    sizes = np.bincount(primary, minlength=len(components))
    order = sorted(range(len(components)), key=lambda t: (-sizes[t], terms[ranked[t, 0]]))
    topic_id = np.empty(len(order), dtype=np.int32)
    topic_id[order] = np.arange(1, len(order) + 1, dtype=np.int32)

    keep = (shares >= min_paper_weight) | (np.arange(shares.shape[1]) == primary[:, None])
    paper_index, topic_index = np.nonzero(keep)
    paper_topics = pl.DataFrame(
        {
            "paper_id": paper_ids.gather(paper_index),
            "topic_id": topic_id[topic_index],
            "weight": np.round(shares[paper_index, topic_index], 6),
        },
        schema=PAPER_TOPIC_SCHEMA,
    ).sort("paper_id", "topic_id")
    topic_terms = pl.DataFrame(
        {
            "topic_id": np.repeat(topic_id, ranked.shape[1]),
            "term": terms[ranked.ravel()],
            "weight": np.round(np.take_along_axis(components, ranked, axis=1).ravel(), 6),
            "rank": np.tile(np.arange(1, ranked.shape[1] + 1, dtype=np.int32), len(components)),
        },
        schema=TOPIC_TERM_SCHEMA,
    ).filter(pl.col("weight") > 0).sort("topic_id", "rank")
    topics = pl.DataFrame(
        {
            "topic_id": topic_id,
            "label": [label([terms[i] for i in row]) for row in ranked],
            "n_papers": sizes.astype(np.int32),
            "coherence": np.round(npmi_coherence(present, ranked), 6),
        },
        schema=TOPIC_SCHEMA,
    ).sort("topic_id")
    return TopicModel(paper_topics, topic_terms, topics, selection)


def label(top_terms: list[str]) -> str:
    """Two to four readable top terms: a term inside one already shown ("autoencoder" after
    "sparse autoencoder") or containing one (then it replaces it) says nothing new."""
    chosen: list[str] = []
    for term in top_terms:
        words = f" {term} "
        if any(f" {c} " in words for c in chosen):
            chosen = [c for c in chosen if f" {c} " not in words] + [term]
        elif not any(words in f" {c} " for c in chosen):
            chosen.append(term)
        if len(chosen) == _LABEL_TERMS:
            break
    return ", ".join(chosen)


def _empty_model() -> TopicModel:
    return TopicModel(
        pl.DataFrame(schema=PAPER_TOPIC_SCHEMA), pl.DataFrame(schema=TOPIC_TERM_SCHEMA),
        pl.DataFrame(schema=TOPIC_SCHEMA), pl.DataFrame(schema=SELECTION_SCHEMA),
    )
