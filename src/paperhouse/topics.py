"""A deterministic topic model: NMF over the papers' term weights, its size chosen by coherence.

Determinism: papers and terms enter the matrix in sorted order, NMF starts from NNDSVD (no
random initialisation), and topics are numbered by size, then by their top term, so the
same input gives the same topics, ids and labels on every run.

The number of topics is measured, not fixed: NMF is fitted for a range of sizes and the
one whose topics are most coherent (mean NPMI of each topic's top ten terms over the
papers) wins, among those with no catch-all topic (none holding more than 40% of papers
once there are four or more; see max_topic_share). Large corpora choose on a fixed, hash-ordered sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.sparse import csc_matrix, csr_matrix

PAPER_TOPIC_SCHEMA = {"paper_id": pl.String, "topic_id": pl.Int32, "weight": pl.Float64}
TOPIC_TERM_SCHEMA = {"topic_id": pl.Int32, "term": pl.String, "weight": pl.Float64, "rank": pl.Int32}
TOPIC_SCHEMA = {"topic_id": pl.Int32, "label": pl.String, "n_papers": pl.Int32, "coherence": pl.Float64}
SELECTION_SCHEMA = {"n_topics": pl.Int32, "coherence": pl.Float64, "largest_share": pl.Float64, "chosen": pl.Boolean}
MAX_TOPIC_SHARE = 0.4
TOP_TERMS = 10
_SELECTION_SAMPLE = 4000
_LABEL_TERMS = 3


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


def fit_topics(paper_terms: pl.DataFrame, n_topics: int | None = None) -> TopicModel:
    """``paper_id``, ``term``, ``weight`` (e.g. TF-IDF) -> topics, chosen by coherence unless ``n_topics``."""
    from sklearn.decomposition import NMF

    paper_ids = paper_terms["paper_id"].unique().sort()
    n_papers = len(paper_ids)
    vocabulary = _topic_vocabulary(paper_terms, n_papers)
    if n_papers == 0:
        return _empty_model()
    rows = pl.DataFrame({"paper_id": paper_ids}).with_row_index("row")
    cells = paper_terms.join(rows, on="paper_id").join(vocabulary, on="term")
    matrix = csr_matrix(
        (cells["weight"].to_numpy(), (cells["row"].to_numpy(), cells["column"].to_numpy())),
        shape=(n_papers, vocabulary.height),
    )
    present = (matrix > 0).astype(np.float64).tocsc()

    def fit(k: int, on: csr_matrix):
        model = NMF(n_components=k, init="nndsvd", max_iter=300, tol=1e-4, random_state=0)
        return model.fit_transform(on), model.components_

    if n_papers < 4 or vocabulary.height < 2:
        # Too little to split: one topic holds every paper, so each still has a primary topic.
        selection = pl.DataFrame([(1, None, 1.0, True)], schema=SELECTION_SCHEMA, orient="row")
        terms = vocabulary["term"].to_numpy() if vocabulary.height else np.array(["(no shared terms)"])
        return _describe(paper_ids, terms, np.ones((n_papers, 1)), np.ones((1, len(terms))), present, selection)
    if n_topics:
        trials = [(n_topics, np.nan, np.nan)]
    else:
        # Choose on a sample fixed by the (hash) paper ids, so the choice does not depend on file order.
        sample = slice(None) if n_papers <= _SELECTION_SAMPLE else slice(0, n_papers, n_papers // _SELECTION_SAMPLE)
        trials = []
        for k in candidate_sizes(n_papers):
            weights, components = fit(k, matrix[sample])
            top = np.argsort(-components, axis=1, kind="stable")[:, :TOP_TERMS]
            coherence = float(npmi_coherence(present[sample], top).mean())
            shares = np.bincount(weights.argmax(axis=1), minlength=k) / weights.shape[0]
            trials.append((k, coherence, float(shares.max())))
    allowed = [t for t in trials if not t[2] > max_topic_share(t[0])] or [min(trials, key=lambda t: t[2])]
    chosen = max(allowed, key=lambda t: (np.nan_to_num(t[1], nan=-1), -t[0]))[0]
    weights, components = fit(chosen, matrix)
    selection = pl.DataFrame(
        [(k, c, s, k == chosen) for k, c, s in trials], schema=SELECTION_SCHEMA, orient="row"
    )
    return _describe(paper_ids, vocabulary["term"].to_numpy(), weights, components, present, selection)


def _topic_vocabulary(paper_terms: pl.DataFrame, n_papers: int) -> pl.DataFrame:
    """Terms shared by at least two papers but not by most of them carry the topics."""
    document_frequency = paper_terms.group_by("term").agg(df=pl.len())
    return (
        document_frequency.filter((pl.col("df") >= 2) & (pl.col("df") <= max(2, 0.5 * n_papers)))
        .select("term")
        .sort("term")
        .with_row_index("column")
    )


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
