"""How many topics: sizes to try, and which fitted size to keep; how many subtopics a topic splits into.

How many topics grows with the corpus, like the expected number of tables of a Chinese restaurant
process: ``topic_count(N) = ceil(2 ln(1 + N/2))`` (8 at 76 papers, 15 at 2,900, 17 at 8,000, 22 at
10^5, 27 at 10^6). That size and the next two on a 20% grid are fitted; among those with no catch-all
topic (none over 20% of the papers, or twice an even share below ten topics; see
``max_topic_share``) the one kept is the smallest that the most coherent does not beat by more than
the standard error of the difference of their mean coherences (a one-standard-error rule: a larger
model must be clearly better, not better by the noise of ten terms' co-occurrences). The previous
run's size is kept instead when it is still one the rule would give within 10% of the corpus and it
qualifies, so adding a few papers does not swing the number of topics.

A topic with n papers in the sample splits into ``ceil(ln(1 + n))`` subtopics (at least five papers
each); a topic too small to split has one subtopic, itself.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

MAX_TOPIC_SHARE = 0.2
# topic_count's concentration: the expected number of topics grows by two per e-fold of papers.
_GROWTH = 2.0
# Candidate sizes: topic_count(N), then 20% and 44% more.
_SIZE_STEP = 1.2
# The previous run's size stays a candidate while the rule would give it for a corpus within 10%.
_KEEP_SIZE_WITHIN = 1.1
_MIN_SUBTOPIC_PAPERS = 5


class SizeTrial(NamedTuple):
    """One candidate number of topics, fitted on the sample."""

    n_topics: int
    coherence: float  # mean NPMI of the topics' chosen top terms
    spread: float  # its standard error over the topics
    largest_share: float  # of sample papers in the biggest topic
    model: Any  # the fitted sklearn NMF
    sample_weights: np.ndarray


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


def choose(trials: list[SizeTrial], previous: int | None = None) -> SizeTrial:
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
