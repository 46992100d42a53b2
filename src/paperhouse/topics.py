"""A deterministic topic model: NMF on TF-IDF of the papers' terms.

Determinism: papers and terms enter the matrix in sorted order, NMF starts from NNDSVD
(no random initialisation), and topics are numbered by size, then by their top term.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix


PAPER_TOPIC_SCHEMA = {"paper_id": pl.String, "topic_id": pl.Int32, "weight": pl.Float64}
TOPIC_TERM_SCHEMA = {"topic_id": pl.Int32, "term": pl.String, "weight": pl.Float64, "rank": pl.Int32}


@dataclass(frozen=True)
class TopicModel:
    paper_topics: pl.DataFrame  # paper_id, topic_id, weight (weights of a paper sum to 1)
    topic_terms: pl.DataFrame  # topic_id, term, weight, rank


def choose_topic_count(n_papers: int) -> int:
    """About one topic per two dozen papers, at least two when there are two papers to split."""
    return int(np.clip(round(np.sqrt(n_papers / 4)), min(2, n_papers), 40))


def fit_topics(occurrences: pl.DataFrame, n_topics: int | None = None, top_terms: int = 10,
               min_paper_weight: float = 0.05) -> TopicModel:
    """``paper_id``, ``term``, ``count`` -> paper and term weights of each topic."""
    from sklearn.decomposition import NMF
    from sklearn.feature_extraction.text import TfidfTransformer

    paper_ids = occurrences["paper_id"].unique().sort()
    n_papers = len(paper_ids)
    if n_papers == 0:
        return TopicModel(pl.DataFrame(schema=PAPER_TOPIC_SCHEMA), pl.DataFrame(schema=TOPIC_TERM_SCHEMA))
    document_frequency = occurrences.group_by("term").agg(df=pl.len())
    # Terms shared by at least two papers but not by most of them carry the topics.
    vocabulary = (
        document_frequency.filter((pl.col("df") >= 2) & (pl.col("df") <= max(2, 0.5 * n_papers)))
        .select("term")
        .sort("term")
        .with_row_index("column")
    )
    rows = pl.DataFrame({"paper_id": paper_ids}).with_row_index("row")
    cells = occurrences.join(rows, on="paper_id").join(vocabulary, on="term")
    matrix = csr_matrix(
        (cells["count"].to_numpy().astype(float), (cells["row"].to_numpy(), cells["column"].to_numpy())),
        shape=(n_papers, vocabulary.height),
    )
    k = n_topics or choose_topic_count(n_papers)
    if vocabulary.height == 0 or k < 2:
        weights = np.ones((n_papers, 1))
        components = np.ones((1, max(vocabulary.height, 1)))
    else:
        tfidf = TfidfTransformer(sublinear_tf=True).fit_transform(matrix)
        model = NMF(n_components=k, init="nndsvd", max_iter=500, random_state=0)
        weights = model.fit_transform(tfidf)
        components = model.components_

    totals = weights.sum(axis=1, keepdims=True)
    shares = np.divide(weights, totals, out=np.full_like(weights, 1.0 / weights.shape[1]), where=totals > 0)
    primary = shares.argmax(axis=1)
    terms = vocabulary["term"].to_numpy() if vocabulary.height else np.array(["(no shared terms)"])
    top_term = [terms[row.argmax()] for row in components]
    order = sorted(range(len(components)), key=lambda t: (-(primary == t).sum(), top_term[t]))
    topic_id = np.empty(len(order), dtype=np.int32)
    topic_id[order] = np.arange(1, len(order) + 1, dtype=np.int32)

    paper_index, topic_index = np.nonzero((shares >= min_paper_weight) | (np.arange(shares.shape[1]) == primary[:, None]))
    paper_topics = pl.DataFrame(
        {
            "paper_id": paper_ids.gather(paper_index),
            "topic_id": topic_id[topic_index],
            "weight": np.round(shares[paper_index, topic_index], 6),
        },
        schema=PAPER_TOPIC_SCHEMA,
    ).sort("paper_id", "topic_id")

    ranked = np.argsort(-components, axis=1, kind="stable")[:, :top_terms]
    topic_terms = pl.DataFrame(
        {
            "topic_id": np.repeat(topic_id, ranked.shape[1]),
            "term": terms[ranked.ravel()],
            "weight": np.round(np.take_along_axis(components, ranked, axis=1).ravel(), 6),
            "rank": np.tile(np.arange(1, ranked.shape[1] + 1, dtype=np.int32), len(components)),
        },
        schema=TOPIC_TERM_SCHEMA,
    ).filter(pl.col("weight") > 0).sort("topic_id", "rank")
    return TopicModel(paper_topics=paper_topics, topic_terms=topic_terms)
