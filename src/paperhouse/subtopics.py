"""Subtopics (level 2): each topic's papers split again by an NMF of their own.

A topic with n papers in the sample splits into ``subtopic_count(n)`` subtopics (at least five
papers each); a topic too small to split has one subtopic, itself. The split is fitted on the
sample's papers of the topic, as the topics were, and then places every paper of the topic.
``paperhouse.topics`` numbers the subtopics and writes their tables.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
from scipy.sparse import csc_matrix, csr_matrix

from paperhouse.sklearn_setup import NMF_MAX_ITER, NMF_TOLERANCE
from paperhouse.topic_sizes import subtopic_count
from paperhouse.topic_terms import top_terms


class TopicSplit(NamedTuple):
    """One topic's subtopics."""

    described: list  # per subtopic: (term columns, weights, coherence), as top_terms gives them
    corpus_rows: np.ndarray  # the topic's papers (by primary topic), as rows of the corpus
    weights: np.ndarray  # their weights on the subtopics


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
    from sklearn.decomposition import non_negative_factorization

    sample_matrix = matrix[sample]
    sample_rows = np.arange(matrix.shape[0])[sample]

    def split(component: int) -> TopicSplit:
        rows = np.flatnonzero(sample_primary == component)
        corpus_rows = np.flatnonzero(corpus_primary == component)
        k = subtopic_count(len(rows))
        if k >= 2:
            part = sample_matrix[rows]
            columns = np.flatnonzero(part.getnnz(axis=0) >= 2)
            k = min(k, len(columns))
        if k < 2:
            return TopicSplit([described[component]], corpus_rows, np.ones((len(corpus_rows), 1)))
        fitted, parts, _ = non_negative_factorization(
            part[:, columns], n_components=k, init="nndsvd", max_iter=NMF_MAX_ITER, tol=NMF_TOLERANCE, random_state=0
        )
        if np.array_equal(sample_rows[rows], corpus_rows):
            weights = fitted
        else:
            weights, _, _ = non_negative_factorization(
                matrix[corpus_rows][:, columns],
                H=parts,
                update_H=False,
                n_components=k,
                init="custom",
                max_iter=NMF_MAX_ITER,
                tol=NMF_TOLERANCE,
                random_state=0,
            )
        components = np.zeros((k, len(terms)))
        components[:, columns] = parts
        return TopicSplit([top_terms(row, held, terms) for row in components], corpus_rows, weights)

    n_components = len(described)
    return list(pool.map(split, range(n_components)) if pool else map(split, range(n_components)))
