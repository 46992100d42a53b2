"""Subtopics (level 2): each topic's papers split again by an NMF of their own.

A topic with n papers in the sample splits into ``subtopic_count(n)`` subtopics (at least five
papers each); a topic too small to split has one subtopic, itself. The split is fitted on the
sample's papers of the topic, as the topics were, and then places every paper of the topic.
``paperhouse.nlp.topics.model`` numbers the subtopics and writes their tables.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
from scipy.sparse import csc_matrix, csr_matrix

from paperhouse.nlp.sklearn_setup import NMF_MAX_ITER, NMF_TOLERANCE
from paperhouse.nlp.topics.sizes import subtopic_count
from paperhouse.nlp.topics.top_terms import top_terms


class TopicSplit(NamedTuple):
    """One topic's subtopics."""

    described: list  # per subtopic: (term columns, weights, coherence), as top_terms gives them
    corpus_rows: np.ndarray  # the topic's papers (by primary topic), as rows of the corpus
    weights: np.ndarray  # their weights on the subtopics


class SplitModel(NamedTuple):
    """One topic's subtopic model, fitted on the sample's papers of the topic."""

    described: list  # per subtopic: (term columns, weights, coherence), as top_terms gives them
    columns: np.ndarray | None  # the terms it is fitted on (None: the topic is not split)
    parts: np.ndarray | None  # the subtopics' weights on those terms
    sample_weights: np.ndarray | None  # the sample papers' weights on the subtopics


def fit_split(sample_part: csr_matrix, described: list, terms: np.ndarray, held: csc_matrix) -> SplitModel:
    """The split of one topic, from its sample papers' rows (``sample_part``): ``subtopic_count`` of
    them by NMF, or, too small to split, the topic itself (``described``: its ``top_terms``).
    Bounded by the sample: the Spark engine fits it on the driver."""
    from sklearn.decomposition import non_negative_factorization

    k = subtopic_count(sample_part.shape[0])
    if k >= 2:
        columns = np.flatnonzero(sample_part.getnnz(axis=0) >= 2)
        k = min(k, len(columns))
    if k < 2:
        return SplitModel([described], None, None, None)
    fitted, parts, _ = non_negative_factorization(
        sample_part[:, columns], n_components=k, init="nndsvd", max_iter=NMF_MAX_ITER, tol=NMF_TOLERANCE, random_state=0
    )
    components = np.zeros((k, len(terms)))
    components[:, columns] = parts
    return SplitModel([top_terms(row, held, terms) for row in components], columns, parts, fitted)


def place_in_split(model: SplitModel, rows: csr_matrix) -> np.ndarray:
    """The weights on a topic's subtopics of papers (``rows``: their rows of the topic vocabulary),
    the subtopic model fixed. The solver's stopping rule is relative to these rows' first step, so
    papers placed in other batches agree to its tolerance, not bit for bit."""
    from sklearn.decomposition import non_negative_factorization

    if model.parts is None:
        return np.ones((rows.shape[0], 1))
    weights, _, _ = non_negative_factorization(
        rows[:, model.columns],
        H=model.parts,
        update_H=False,
        n_components=len(model.parts),
        init="custom",
        max_iter=NMF_MAX_ITER,
        tol=NMF_TOLERANCE,
        random_state=0,
    )
    return weights


def split_topics(
    matrix: csr_matrix,
    sample: slice,
    sample_primary: np.ndarray,
    corpus_primary: np.ndarray,
    described: list,
    terms: np.ndarray,
    held: csc_matrix,
    pool: ThreadPoolExecutor | None = None,
) -> list[TopicSplit]:
    """Each topic's split, in the order of its NMF component: the papers whose primary component
    it is (``sample_primary`` over the sample's rows, ``corpus_primary`` over every paper) split by
    an NMF of their own; a topic too small to split keeps its own description (``described``)."""
    sample_matrix = matrix[sample]
    sample_rows = np.arange(matrix.shape[0])[sample]

    def split(component: int) -> TopicSplit:
        rows = np.flatnonzero(sample_primary == component)
        corpus_rows = np.flatnonzero(corpus_primary == component)
        model = fit_split(sample_matrix[rows], described[component], terms, held)
        if model.parts is not None and np.array_equal(sample_rows[rows], corpus_rows):
            weights = model.sample_weights
        else:
            weights = place_in_split(model, matrix[corpus_rows])
        return TopicSplit(model.described, corpus_rows, weights)

    n_components = len(described)
    return list(pool.map(split, range(n_components)) if pool else map(split, range(n_components)))
