"""Terms, topics, similar papers and method names of a corpus, computed together on both cores."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import polars as pl

from paperhouse.nlp.names import SMALL_TEXTS_BYTES, extract_method_names
from paperhouse.nlp.similar import similar_papers
from paperhouse.nlp.sklearn_setup import import_sklearn
from paperhouse.nlp.terms.extraction import TermIndex, index_words, read_words
from paperhouse.nlp.topics.model import TopicModel, fit_topics, sample_texts


@dataclass(frozen=True)
class CorpusAnalysis:
    index: TermIndex  # terms, each paper's ranked terms, aliases and the weight matrix
    model: TopicModel
    similar: pl.DataFrame  # paperhouse.nlp.similar.SIMILAR_SCHEMA
    names: pl.DataFrame  # paperhouse.nlp.names.NAME_SCHEMA


def analyse(papers: pl.DataFrame, previous_topics: int | None = None) -> CorpusAnalysis:
    """``paper_id`` and ``text`` of each paper -> its terms, topics, most similar papers and the
    name of the method it introduces. ``previous_topics``: the last run's number of topics, which
    the topic model keeps when it still fits (``paperhouse.nlp.topics.sizes.choose``).

    While the terms are indexed here, a second thread finds the method names and then imports
    scikit-learn (1.2 s): much of the terms' indexing leaves the second core idle (a one-thread
    Polars kernel here, a Python loop there), and the names fill it. Then the topic model runs
    there and the neighbour search here: both release the GIL, so on two cores they overlap. The
    topic model's fits take both cores (see ``fit_topics``), so the search's k-means runs on one
    OpenMP thread beside them: its second thread only spun against the fits (at 10^5 papers both
    together took 11.6 s with it, 9.2-10.1 s without).

    Small texts (``SMALL_TEXTS_BYTES``) stay alive until the names are found, which
    start once the words are read: the reading keeps both cores busy on its own, the indexing
    does not (10^5 papers: the step took 24.7 s, the median of 7, against 26.5 s with the names
    found beside the reading). Larger texts must be gone before the counting of the terms, the
    step's peak (10^6 papers: the two side by side peaked at 10.8 GB): their names are found
    beside the reading, and the counting waits for them. The words are coded meanwhile: at 10^6
    papers the names end 7 s into that coding (15 s).
    """
    from threadpoolctl import threadpool_limits

    with ThreadPoolExecutor(max_workers=1) as pool:
        texts = papers.select("paper_id", "text")
        texts_are_small = texts.estimated_size() <= SMALL_TEXTS_BYTES
        names = None if texts_are_small else pool.submit(extract_method_names, texts)
        words = read_words(papers)
        # A caller that keeps its own reference keeps the texts: pass the frame, don't hold it.
        del papers
        if names is None:
            names = pool.submit(extract_method_names, texts)
        topic_texts = sample_texts(texts, words.paper_index["paper_id"])
        del texts
        # After the names: imported, scikit-learn holds 141 MB, which would sit under the reading
        # of the words beside the names.
        pool.submit(import_sklearn)
        index = index_words(words, before_counting=(lambda: None) if texts_are_small else names.result)
        topics = pool.submit(fit_topics, index.weights, texts=topic_texts, previous_size=previous_topics)
        import_sklearn()  # scikit-learn loads the OpenMP runtime that the limit sets
        with threadpool_limits(limits=1, user_api="openmp"):
            similar = similar_papers(index.weights)
        return CorpusAnalysis(index, topics.result(), similar, names.result())
