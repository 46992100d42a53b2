"""A deterministic two-level topic model: NMF over the papers' term weights.

**Topics (level 1).** NMF over the papers' term weights. How many grows with the corpus, like the
expected number of tables of a Chinese restaurant process: ``topic_count(N) = ceil(2 ln(1 + N/2))``
(8 at 76 papers, 15 at 2,900, 17 at 8,000, 22 at 10^5, 27 at 10^6). That size and the next two on a
20% grid are fitted; among those with no catch-all topic (none over 20% of the papers, or twice an
even share below ten topics; see ``max_topic_share``) the one kept is the smallest that the most
coherent does not beat by more than the standard error of the difference of their mean coherences
(a one-standard-error rule: a larger model must be clearly better, not better by the noise of ten
terms' co-occurrences). The previous run's size is kept instead when it is still one the rule would
give within 10% of the corpus and it qualifies, so adding a few papers does not swing the number of
topics.

**Subtopics (level 2).** Each topic's papers are split again by NMF, into ``ceil(ln(1 + n))``
subtopics for a topic with n papers in the sample (at least five papers each); a topic too small to
split has one subtopic, itself. Every paper has one primary subtopic, under its primary topic.

**Top terms.** A topic's ten top terms are read off its NMF weights, but chosen to be coherent and
distinct: from the topic's 100 heaviest terms, greedily, the one with the best mean NPMI with the
terms already chosen plus its weight relative to the topic's heaviest term. A term that is a
near-copy of one already chosen ("adversarial network" after "generative adversarial network",
"graph" after "graph neural network": one's words, stemmed, inside the other's, or sharing half of
them; see ``near_copy``) is skipped and its weight folds into the term it copies. NPMI is measured
on whether each sample paper's text holds the term (its words in a row, singular), when the texts
are given; on the term weights otherwise.

Determinism: papers and terms enter the matrix in sorted order, NMF starts from NNDSVD (no random
initialisation), and topics are numbered by level, size, then top term. Stable ids across runs
are ``paperhouse.topic_ids``' work.

Cost hardly grows with the corpus: past 4,000 papers the models are fitted on a sample taken in
paper-id (hash) order, so it does not depend on file order, and the chosen models then place every
paper; the vocabulary is capped to the 5,000 most widely shared terms.
"""

from __future__ import annotations

import math
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np
import polars as pl
from scipy.sparse import csc_matrix, csr_matrix

from paperhouse.terms import TermWeights, singular

PAPER_TOPIC_SCHEMA = {"paper_id": pl.String, "topic_id": pl.Int32, "weight": pl.Float64}
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
MAX_TOPIC_SHARE = 0.2
TOP_TERMS = 10
# topic_count's concentration: the expected number of topics grows by two per e-fold of papers.
_GROWTH = 2.0
# Candidate sizes: topic_count(N), then 20% and 44% more.
_SIZE_STEP = 1.2
# The previous run's size stays a candidate while the rule would give it for a corpus within 10%.
_KEEP_SIZE_WITHIN = 1.1
_MIN_SUBTOPIC_PAPERS = 5
_CANDIDATE_TERMS = 100
_SAMPLE = 4000
_MAX_VOCABULARY = 5000
# Stop when an iteration improves the fit by under 0.1% of the first: the top terms and primary
# topics have long settled by then (measured on the bundled seeds), and it makes fits 2-3x faster.
_TOLERANCE = 1e-3
_MAX_ITER = 300
_LABEL_TERMS = 3
_MIN_PAPER_WEIGHT = 0.05
_WORD = re.compile(r"[a-z0-9]+")


class _Trial(NamedTuple):
    """One candidate number of topics, fitted on the sample."""

    n_topics: int
    coherence: float  # mean NPMI of the topics' chosen top terms
    spread: float  # its standard error over the topics
    largest_share: float  # of sample papers in the biggest topic
    model: Any  # the fitted sklearn NMF
    sample_weights: np.ndarray


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
        """Both levels' shares, as ``raw.topic_paper_weights`` holds them (a paper's sum to 1 per level)."""
        return pl.concat([self.paper_topics, self.paper_subtopics]).sort("paper_id", "topic_id")

    def all_topic_terms(self) -> pl.DataFrame:
        return pl.concat([self.topic_terms, self.subtopic_terms]).sort("topic_id", "rank")


# ---------------------------------------------------------------------------------------------
# Near-copies


_ENDINGS = frozenset(
    "s es e ed d ing y ies ied ying er ers ly ion ions ation ations ative atives ate ated ates ating ive ives al als "
    "ally ality alities ity ities ize ized izes izing izer izers ization izations ise ised ises ising iser isation "
    "ment ments ness ful fully fulness ic ics ical ically icity ism isms ist ists ance ances ence ences ant ants ent "
    "ents able ible ably ibly ibility ability bility ous ously ousness iveness ivity ivities or ors ator ators ency "
    "ancy ings edly ingly ial ially ian ians iness ier iest est alism".split()
)


@lru_cache(maxsize=1 << 16)
def _is_ending(rest: str, pieces: int) -> bool:
    """Whether ``rest`` is at most ``pieces`` inflectional or derivational endings in a row."""
    if not rest:
        return True
    return pieces > 0 and any(
        rest.startswith(ending) and _is_ending(rest[len(ending) :], pieces - 1) for ending in _ENDINGS
    )


@lru_cache(maxsize=1 << 16)
def same_word(a: str, b: str) -> bool:
    """Whether two words are forms of one (``masked``/``masking``, ``generative``/``generalization``):
    they share six letters, or a stem that both complete with endings (a stem of two or three
    letters with one ending only; a doubled last letter may start it). Meant to hold wherever
    Porter's stemmer gives the two words one stem, and then some."""
    if a == b:
        return True
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    if common >= 6:
        return True
    for stem in range(common, 1, -1):
        pieces, last = (3 if stem >= 4 else 1), a[stem - 1]
        if all(
            _is_ending(rest, pieces) or (rest[:1] == last and _is_ending(rest[1:], pieces))
            for rest in (a[stem:], b[stem:])
        ):
            return True
    return False


@lru_cache(maxsize=1 << 16)
def _words(term: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_WORD.findall(term.lower())))


def near_copy(a: str, b: str) -> bool:
    """Whether two terms say one idea twice: one's words (as ``same_word`` matches them) all inside
    the other's, or sharing at least half of their words."""
    words_a, words_b = _words(a), _words(b)
    if not words_a or not words_b:
        return False
    in_b = sum(any(same_word(x, y) for y in words_b) for x in words_a)
    in_a = sum(any(same_word(y, x) for x in words_a) for y in words_b)
    if in_b == len(words_a) or in_a == len(words_b):
        return True
    shared = max(in_a, in_b)
    return shared / (len(words_a) + len(words_b) - shared) >= 0.5


# ---------------------------------------------------------------------------------------------
# Coherence


def npmi_coherence(present: csc_matrix, top_terms: np.ndarray) -> np.ndarray:
    """Mean NPMI over pairs of each topic's top terms; ``present`` is papers x terms, 1 where used.

    NPMI(i, j) = log(P(i,j) / (P(i) P(j))) / -log P(i,j), from document co-occurrence; -1 for
    pairs that never meet (Bouma 2009; Röder et al. 2015's C_NPMI without a sliding window).
    """
    scores = []
    for terms in top_terms:
        npmi = _npmi_matrix(present, np.asarray(terms))
        i, j = np.triu_indices(len(terms), k=1)
        scores.append(float(npmi[i, j].mean()) if len(i) else 0.0)
    return np.array(scores)


def _npmi_matrix(present: csc_matrix, columns: np.ndarray) -> np.ndarray:
    """NPMI of every pair of the given columns of ``present`` (papers x terms, 1 where used)."""
    n = max(present.shape[0], 1)
    held = present[:, columns]
    together = (held.T @ held).toarray() / n
    alone = np.diag(together)
    with np.errstate(divide="ignore", invalid="ignore"):
        npmi = np.where(together > 0, np.log(together / np.outer(alone, alone)) / -np.log(together), -1.0)
    return np.where(together >= 1, 1.0, npmi)


def text_presence(texts: list[str], terms: np.ndarray) -> csc_matrix:
    """Texts x terms, 1 where a text holds the term: its words in a row, lower case and singular,
    as in the text (hyphens and punctuation split words)."""
    keys = [" " + " ".join(singular(word) for word in _WORD.findall(term.lower())) + " " for term in terms]
    if not texts or not keys:
        return csc_matrix((len(texts), len(keys)))
    words = (
        pl.DataFrame(
            {"row": np.arange(len(texts), dtype=np.int64), "text": texts}, schema={"row": pl.Int64, "text": pl.String}
        )
        .select("row", word=pl.col("text").str.to_lowercase().str.extract_all(_WORD.pattern))
        .explode("word")
        .drop_nulls("word")
    )
    spellings = words["word"].unique()
    singulars = pl.DataFrame({"word": spellings, "singular": [singular(word) for word in spellings.to_list()]})
    texts_read = (
        words.with_row_index("position")
        .join(singulars, on="word", how="left")
        .sort("position")
        .group_by("row", maintain_order=True)
        .agg(text=pl.lit(" ") + pl.col("singular").str.join(" ") + pl.lit(" "))
    )
    found = (
        texts_read.select("row", key=pl.col("text").str.extract_many(keys, overlapping=True))
        .explode("key")
        .drop_nulls("key")
        .unique()
    )
    columns = pl.DataFrame({"key": keys, "column": np.arange(len(keys), dtype=np.int64)})
    pairs = found.join(columns, on="key")  # terms of one key (spellings merged alike) all count
    return csc_matrix(
        (np.ones(pairs.height), (pairs["row"].to_numpy(), pairs["column"].to_numpy())), shape=(len(texts), len(keys))
    )


def sample_texts(papers: pl.DataFrame, paper_ids: pl.Series | None = None) -> pl.DataFrame:
    """The ``paper_id`` and ``text`` of the papers the topic model is fitted on (its sample of the
    sorted ``paper_ids``, all of them up to 4,000), copied out of ``papers``: small, and holding
    none of its buffers."""
    ids = (paper_ids if paper_ids is not None else papers["paper_id"].unique()).sort()
    chosen = ids[spread_sample(len(ids), _SAMPLE)]
    picked = papers.filter(pl.col("paper_id").is_in(chosen.implode()))
    return pl.DataFrame(
        {"paper_id": picked["paper_id"].to_list(), "text": picked["text"].to_list()},
        schema={"paper_id": pl.String, "text": pl.String},
    )


# ---------------------------------------------------------------------------------------------
# Sizes


def topic_count(n_papers: float, growth: float = _GROWTH) -> int:
    """The number of topics a corpus of ``n_papers`` starts from: the expected number of tables of a
    Chinese restaurant process of concentration ``growth`` after ``n_papers`` customers, rounded up."""
    return max(1, math.ceil(growth * math.log1p(n_papers / growth)))


def max_topic_share(n_topics: int) -> float:
    """The largest share of papers one topic may hold before it is a catch-all: 20% from ten topics
    up, twice an even split below that (40% of five, 100% of two)."""
    return max(MAX_TOPIC_SHARE, 2 / max(n_topics, 1))


def candidate_sizes(n_papers: int, previous: int | None = None) -> list[int]:
    """Topic counts worth trying: ``topic_count(n_papers)`` and two steps of 20% above it, at most
    half the papers; and the previous run's count while the rule would give it for a corpus within
    10% of this one."""
    base = topic_count(n_papers)
    sizes = {base, max(base + 1, round(base * _SIZE_STEP)), max(base + 2, round(base * _SIZE_STEP**2))}
    if previous and topic_count(n_papers / _KEEP_SIZE_WITHIN) <= previous <= max(sizes):
        sizes.add(previous)
    upper = max(2, n_papers // 2)
    return sorted({min(max(2, size), upper) for size in sizes})


def subtopic_count(n_papers: int) -> int:
    """Subtopics of a topic with ``n_papers`` papers in the sample: ``topic_count`` of concentration
    1 (a Chinese restaurant process among the topic's papers), each at least five papers; 1 (no
    split) for a topic too small."""
    return max(1, min(topic_count(n_papers, growth=1.0), n_papers // _MIN_SUBTOPIC_PAPERS))


def choose(trials: list[_Trial], previous: int | None = None) -> _Trial:
    """The size kept: among trials with no catch-all topic (else the one whose largest topic is
    smallest), those the most coherent does not beat by more than the standard error of the
    difference of their mean coherences; of those the previous run's size, else the smallest."""
    allowed = [t for t in trials if t.largest_share <= max_topic_share(t.n_topics)] or [
        min(trials, key=lambda t: (t.largest_share, t.n_topics))
    ]
    best = max(allowed, key=lambda t: (t.coherence, -t.n_topics))
    qualifying = [t for t in allowed if best.coherence - t.coherence <= math.hypot(best.spread, t.spread)]
    kept = [t for t in qualifying if t.n_topics == previous]
    return kept[0] if kept else min(qualifying, key=lambda t: t.n_topics)


# ---------------------------------------------------------------------------------------------
# The model


_SKLEARN_IMPORT = threading.Lock()


def import_sklearn() -> None:
    """Import the parts of scikit-learn paperhouse uses (1.2 s, on first use), one thread at a time:
    the topic model and the neighbour search run side by side, and two threads importing
    scikit-learn at once fail on a partially initialised ``sklearn.base``."""
    with _SKLEARN_IMPORT:
        import sklearn.cluster
        import sklearn.decomposition  # noqa: F401


def fit_topics(
    weights: TermWeights,
    n_topics: int | None = None,
    texts: pl.DataFrame | None = None,
    previous_size: int | None = None,
) -> TopicModel:
    """Papers' term weights (e.g. TF-IDF) -> topics and subtopics, the number of topics chosen by
    coherence unless ``n_topics``. ``texts`` (``paper_id``, ``text``; ``sample_texts``) are what
    the top terms' coherence is measured on; ``previous_size`` is the last run's number of topics."""
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
    # Fit on a sample fixed by the (hash) paper ids, so nothing depends on file order.
    sample = spread_sample(n_papers, _SAMPLE)
    sample_matrix = matrix[sample]
    used = (sample_matrix > 0).astype(np.float64).tocsc()

    if n_papers < 4 or len(terms) < 2:
        # Too little to split: one topic holds every paper, so each still has a primary topic.
        selection = pl.DataFrame([(1, None, 1.0, True)], schema=SELECTION_SCHEMA, orient="row")
        terms = terms if len(terms) else np.array(["(no shared terms)"])
        components = np.ones((1, len(terms)))
        held = (matrix > 0).astype(np.float64).tocsc() if len(columns) else csc_matrix((n_papers, 1))
        level = _describe(paper_ids, terms, np.ones((n_papers, 1)), components, held, selection)
        ones = np.ones((n_papers, 1))
        return _with_subtopics(level, paper_ids, matrix, slice(None), ones, ones, terms, held)

    def trial(k: int) -> _Trial:
        model = NMF(n_components=k, init="nndsvd", max_iter=_MAX_ITER, tol=_TOLERANCE, random_state=0)
        sample_weights = model.fit_transform(sample_matrix)
        shares = np.bincount(sample_weights.argmax(axis=1), minlength=k) / sample_weights.shape[0]
        # The size is judged on the term weights' own co-occurrences, whether or not texts are given,
        # so the texts never change which model is kept.
        coherence = np.array([_top_terms(row, used, terms)[2] for row in model.components_])
        return _Trial(
            k,
            float(coherence.mean()),
            float(coherence.std() / math.sqrt(k)),
            float(shares.max()),
            model,
            sample_weights,
        )

    # The solver's matrix products are small: OpenBLAS threads cost more to wake than they save
    # (3x slower fits measured with two threads on two cores). The cores fit sizes side by side
    # instead: the solver releases the GIL, and each fit is independent, so results do not change.
    # Largest first, as a fit's cost grows with its size: taken smallest first, the largest fit
    # started last and ran alone.
    sizes = [n_topics] if n_topics else candidate_sizes(n_papers, previous_size)
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        # Which texts hold which terms is read beside the first fits (it is only needed after them).
        reading = None if texts is None else pool.submit(text_presence, _aligned_texts(texts, paper_ids[sample]), terms)
        trials = sorted(pool.map(trial, sorted(sizes, reverse=True)), key=lambda t: t.n_topics)
        held = used if reading is None else reading.result()
        best = choose(trials, previous_size)
        paper_weights = best.sample_weights if n_papers <= _SAMPLE else best.model.transform(matrix)
        selection = pl.DataFrame(
            [(t.n_topics, t.coherence, t.largest_share, t is best) for t in trials],
            schema=SELECTION_SCHEMA,
            orient="row",
        )
        level = _describe(paper_ids, terms, paper_weights, best.model.components_, held, selection)
        return _with_subtopics(level, paper_ids, matrix, sample, best.sample_weights, paper_weights, terms, held, pool)


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
    not by most of them; of those, the ``_MAX_VOCABULARY`` most widely shared."""
    document_frequency = matrix.getnnz(axis=0)
    usable = np.flatnonzero((document_frequency >= 2) & (document_frequency <= max(2, 0.5 * matrix.shape[0])))
    widest = usable[np.argsort(-document_frequency[usable], kind="stable")[:_MAX_VOCABULARY]]
    return np.sort(widest)


def _top_terms(component: np.ndarray, held: csc_matrix, terms: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """A topic's top terms (columns), their weights and their coherence (mean NPMI over ``held``).

    From the topic's heaviest terms, greedily: the heaviest first, then the term whose mean NPMI with
    those chosen plus its weight relative to the heaviest is best. A near-copy of a chosen term is
    skipped and its weight added to that term's. The terms are returned heaviest first."""
    order = np.argsort(-component, kind="stable")[:_CANDIDATE_TERMS]
    candidates = order[component[order] > 0]
    if len(candidates) == 0:
        return order[:1], component[order[:1]], 0.0
    npmi = _npmi_matrix(held, candidates)
    relative = component[candidates] / component[candidates[0]]
    folded = component[candidates].astype(np.float64)
    chosen = [0]
    closed = np.zeros(len(candidates), dtype=bool)
    closed[0] = True
    together = npmi[:, 0].copy()
    while len(chosen) < TOP_TERMS:
        score = np.where(closed, -np.inf, together / len(chosen) + relative)
        pick = int(np.argmax(score))
        if score[pick] == -np.inf:
            break
        closed[pick] = True
        copied = next((c for c in chosen if near_copy(terms[candidates[pick]], terms[candidates[c]])), None)
        if copied is not None:
            folded[copied] += folded[pick]
            continue
        chosen.append(pick)
        together += npmi[:, pick]
    chosen = np.array(chosen)
    pairs = np.triu_indices(len(chosen), k=1)
    coherence = float(npmi[np.ix_(chosen, chosen)][pairs].mean()) if len(chosen) > 1 else 0.0
    ranked = chosen[np.argsort(-folded[chosen], kind="stable")]
    return candidates[ranked], folded[ranked], coherence


class _Level(NamedTuple):
    """One level's tables, and for each NMF component its topic id and chosen terms."""

    model: TopicModel
    topic_id: np.ndarray
    described: list  # per component: (term columns, weights, coherence), as _top_terms gives them


def _describe(
    paper_ids: pl.Series,
    terms: np.ndarray,
    weights: np.ndarray,
    components: np.ndarray,
    held: csc_matrix,
    selection: pl.DataFrame,
) -> _Level:
    """The level-1 tables of a model: topics numbered 1.. by size, then top term."""
    shares = _shares(weights)
    described = [_top_terms(row, held, terms) for row in components]
    sizes = np.bincount(shares.argmax(axis=1), minlength=len(components))
    order = sorted(range(len(components)), key=lambda t: (-sizes[t], terms[described[t][0][0]]))
    topic_id = np.empty(len(order), dtype=np.int32)
    topic_id[order] = np.arange(1, len(order) + 1, dtype=np.int32)
    topics = _topic_rows(topic_id, TOPIC_LEVEL, [None] * len(order), described, terms, sizes)
    model = TopicModel(
        _paper_rows(paper_ids, np.arange(len(paper_ids)), shares, topic_id),
        _term_rows(topic_id, described, terms),
        topics,
        selection,
    )
    return _Level(model, topic_id, described)


def _shares(weights: np.ndarray) -> np.ndarray:
    totals = weights.sum(axis=1, keepdims=True)
    return np.divide(weights, totals, out=np.full_like(weights, 1.0 / max(weights.shape[1], 1)), where=totals > 0)


def _paper_rows(paper_ids: pl.Series, rows: np.ndarray, shares: np.ndarray, topic_id: np.ndarray) -> pl.DataFrame:
    """A paper's shares of at least 5%, and always its primary one."""
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
        },
        schema=PAPER_TOPIC_SCHEMA,
    ).sort("paper_id", "topic_id")


def _term_rows(topic_id: np.ndarray, described: list, terms: np.ndarray) -> pl.DataFrame:
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


def _topic_rows(
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
    """Level 2: each topic's papers (by primary topic) split by an NMF of their own, on the sample
    as the topics were; subtopics numbered after the topics, a topic's by size, then top term."""
    from sklearn.decomposition import non_negative_factorization

    sample_primary = _shares(sample_weights).argmax(axis=1)
    corpus_primary = _shares(paper_weights).argmax(axis=1)
    sample_matrix = matrix[sample]
    sample_rows = np.arange(matrix.shape[0])[sample]

    def split(component: int) -> tuple[list, np.ndarray, np.ndarray]:
        """(the subtopics described, the topic's corpus rows, their weights on the subtopics)."""
        rows = np.flatnonzero(sample_primary == component)
        corpus_rows = np.flatnonzero(corpus_primary == component)
        k = subtopic_count(len(rows))
        if k >= 2:
            part = sample_matrix[rows]
            columns = np.flatnonzero(part.getnnz(axis=0) >= 2)
            k = min(k, len(columns))
        if k < 2:
            return [level.described[component]], corpus_rows, np.ones((len(corpus_rows), 1))
        fitted, parts, _ = non_negative_factorization(
            part[:, columns], n_components=k, init="nndsvd", max_iter=_MAX_ITER, tol=_TOLERANCE, random_state=0
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
                max_iter=_MAX_ITER,
                tol=_TOLERANCE,
                random_state=0,
            )
        components = np.zeros((k, len(terms)))
        components[:, columns] = parts
        return [_top_terms(row, held, terms) for row in components], corpus_rows, weights

    n_components = len(level.topic_id)
    splits = list(pool.map(split, range(n_components)) if pool else map(split, range(n_components)))
    next_id = n_components + 1
    topics, paper_parts, term_parts = [], [], []
    for component in np.argsort(level.topic_id, kind="stable"):
        described, corpus_rows, weights = splits[component]
        shares = _shares(weights)
        sizes = np.bincount(shares.argmax(axis=1), minlength=len(described))
        order = sorted(range(len(described)), key=lambda s: (-sizes[s], terms[described[s][0][0]]))
        topic_id = np.empty(len(order), dtype=np.int32)
        topic_id[order] = np.arange(next_id, next_id + len(order), dtype=np.int32)
        next_id += len(order)
        parent = int(level.topic_id[component])
        topics.append(_topic_rows(topic_id, SUBTOPIC_LEVEL, [parent] * len(order), described, terms, sizes))
        paper_parts.append(_paper_rows(paper_ids, corpus_rows, shares, topic_id))
        term_parts.append(_term_rows(topic_id, described, terms))
    coarse = level.model
    return TopicModel(
        coarse.paper_topics,
        coarse.topic_terms,
        coarse.topics,
        coarse.selection,
        pl.concat(topics).sort("topic_id"),
        pl.concat(paper_parts).sort("paper_id", "topic_id"),
        pl.concat(term_parts).sort("topic_id", "rank"),
    )


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
        pl.DataFrame(schema=PAPER_TOPIC_SCHEMA),
        pl.DataFrame(schema=TOPIC_TERM_SCHEMA),
        pl.DataFrame(schema=TOPIC_SCHEMA),
        pl.DataFrame(schema=SELECTION_SCHEMA),
    )
