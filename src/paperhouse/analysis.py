"""Terms, topics, similar papers and method names of a corpus, computed together on both cores."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import polars as pl

from paperhouse.names import extract_method_names
from paperhouse.similar import similar_papers
from paperhouse.terms import TermIndex, index_words, read_words
from paperhouse.topics import TopicModel, fit_topics, import_sklearn


@dataclass(frozen=True)
class CorpusAnalysis:
    index: TermIndex  # terms, each paper's ranked terms, aliases and the weight matrix
    model: TopicModel
    similar: pl.DataFrame  # paperhouse.similar.SIMILAR_SCHEMA
    names: pl.DataFrame  # paperhouse.names.NAME_SCHEMA


def analyse(papers: pl.DataFrame) -> CorpusAnalysis:
    """``paper_id``, ``text`` and ``normalized_text`` of each paper -> its terms, topics, most
    similar papers and the name of the method it introduces.

    While the terms are indexed here, a second thread imports scikit-learn (1.2 s) and finds the
    method names: much of the terms' work leaves the second core idle (a one-thread Polars
    kernel here, a Python loop there), and the names fill it, 3-5 s of their 5 s at 10^5
    papers. Then the topic model runs there and the neighbour search here: both release the GIL,
    so on two cores they overlap. The topic model's fits take both cores (see ``fit_topics``), so
    the search's k-means runs on one OpenMP thread beside them: its second thread only spun
    against the fits (at 10^5 papers both together took 11.6 s with it, 9.2-10.1 s without).
    """
    from threadpoolctl import threadpool_limits

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(import_sklearn)
        names = pool.submit(extract_method_names, papers.select("paper_id", "text"))
        words = read_words(papers)
        # The texts go once the names are found too, so the counting, the step's peak, holds only
        # numbers: it waits for the names (10^6 papers: the two side by side peaked at 10.8 GB).
        # A caller that keeps its own reference keeps them: pass the frame, don't hold it.
        del papers
        method_names = names.result()
        index = index_words(words)
        topics = pool.submit(fit_topics, index.weights)
        import_sklearn()  # scikit-learn loads the OpenMP runtime that the limit sets
        with threadpool_limits(limits=1, user_api="openmp"):
            similar = similar_papers(index.weights)
        return CorpusAnalysis(index, topics.result(), similar, method_names)
