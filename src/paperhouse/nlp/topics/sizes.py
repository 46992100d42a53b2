"""How many topics: sizes to try, and which fitted size to keep; how many subtopics a topic splits into.

How many topics grows with the corpus, like the expected number of tables of a Chinese restaurant
process: ``topic_count(N) = ceil(2 ln(1 + N/2))`` (8 at 76 papers, 15 at 2,900, 17 at 8,000, 22 at
10^5, 27 at 10^6). That size is kept unless it has a catch-all topic (one over 20% of the papers, or
twice an even share below ten topics; see ``max_topic_share``); then one more topic, and another,
then 20% and 44% more, in that order, until one has none. The previous run's size is tried first
while the rule would give it for a corpus within 10%, so adding a few papers does not swing the
number of topics; nor does the noise of a coherence measure, which decides nothing here (on a few
dozen papers the mean NPMI of 8, 10 and 12 topics differs by less than its own standard error, and
choosing by it changed the number of topics of the bundled seeds when three papers were added).

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
    coherence: float  # mean NPMI of the topics' chosen top terms (reported, not chosen by)
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
    """Topic counts in the order they are tried, at most half the papers: the previous run's count
    while the rule would give it for a corpus within 10% of this one, then ``topic_count(n_papers)``,
    one and two more, and 20% and 44% more."""
    base = topic_count(n_papers)
    steps = [base, base + 1, base + 2, round(base * _SIZE_STEP), round(base * _SIZE_STEP**2)]
    tried = [previous] if previous and topic_count(n_papers / _KEEP_SIZE_WITHIN) <= previous <= max(steps) else []
    upper = max(2, n_papers // 2)
    return list(dict.fromkeys(min(max(2, size), upper) for size in [*tried, *sorted(steps)]))


def subtopic_count(n_papers: int) -> int:
    """Subtopics of a topic with ``n_papers`` papers in the sample: ``topic_count`` of concentration
    1 (a Chinese restaurant process among the topic's papers), each at least five papers; 1 (no
    split) for a topic too small."""
    return max(1, min(topic_count(n_papers, growth=1.0), n_papers // _MIN_SUBTOPIC_PAPERS))


def has_catch_all(trial: SizeTrial) -> bool:
    return trial.largest_share > max_topic_share(trial.n_topics)


def choose(trials: list[SizeTrial]) -> SizeTrial:
    """The size kept among ``trials`` (in the order tried): the first with no catch-all topic, else
    the one whose largest topic is smallest."""
    return next((t for t in trials if not has_catch_all(t)), min(trials, key=lambda t: (t.largest_share, t.n_topics)))
