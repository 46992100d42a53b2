"""Terms, topics and similar papers of a corpus, computed together on both cores."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import polars as pl

from paperhouse.similar import similar_papers
from paperhouse.terms import TermIndex, index_terms
from paperhouse.topics import TopicModel, fit_topics, import_sklearn


@dataclass(frozen=True)
class CorpusAnalysis:
    index: TermIndex  # terms, each paper's ranked terms, aliases and the weight matrix
    model: TopicModel
    similar: pl.DataFrame  # paperhouse.similar.SIMILAR_SCHEMA


def analyse(papers: pl.DataFrame) -> CorpusAnalysis:
    """``paper_id``, ``text`` and ``normalized_text`` of each paper -> its terms, topics and most
    similar papers.

    scikit-learn (1.2 s to import) loads on a second thread while the terms are indexed here. Then
    the topic model runs there and the neighbour search here: both release the GIL, so on two
    cores they overlap.
    """
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(import_sklearn)
        index = index_terms(papers)
        topics = pool.submit(fit_topics, index.weights)
        similar = similar_papers(index.weights)
        return CorpusAnalysis(index, topics.result(), similar)
