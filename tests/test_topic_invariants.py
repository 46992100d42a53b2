"""The topic model's invariants hold by construction, whatever the weights (hypothesis): one primary
topic and one primary subtopic per paper, the primary subtopic under the primary topic, a topic's
``n_papers`` the papers whose primary it is, at both levels. Papers with no topic term (an even
share on every topic) and ties between shares are where the marts once re-derived another primary
than the one the papers were split by; the generated weights are full of both."""

from __future__ import annotations

import numpy as np
import polars as pl
from conftest import FUZZING
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix

from paperhouse.nlp.terms.weights import TermWeights
from paperhouse.nlp.topics.model import TOPIC_LEVEL, fit_topics


@st.composite
def weights(draw) -> TermWeights:
    n_papers = draw(st.integers(1, 60))
    n_terms = draw(st.integers(1, 25))
    levels = st.sampled_from([0.0, 0.0, 0.5, 1.0, 1.0, 2.0])  # repeated values: ties, and empty rows
    cells = draw(st.lists(levels, min_size=n_papers * n_terms, max_size=n_papers * n_terms))
    matrix = np.array(cells).reshape(n_papers, n_terms)
    empty = draw(st.sets(st.integers(0, n_papers - 1), max_size=n_papers // 3))
    matrix[sorted(empty)] = 0.0
    ids = pl.Series("paper_id", [f"p_{i:04d}" for i in range(n_papers)])
    return TermWeights(csr_matrix(matrix), ids, np.array([f"term {j:02d}" for j in range(n_terms)]))


@(settings(max_examples=400) if FUZZING else settings(max_examples=40))
@given(weights())
def test_every_paper_has_one_primary_topic_and_subtopic_under_it(term_weights):
    model = fit_topics(term_weights)
    shares = model.all_paper_topics()
    levels = model.all_topics().select("topic_id", "level", "parent_topic_id", "n_papers")
    primaries = shares.filter("is_primary").join(levels, on="topic_id")
    papers = set(term_weights.paper_ids)

    for level in (1, 2):
        at_level = primaries.filter(pl.col("level") == level)
        assert sorted(at_level["paper_id"]) == sorted(papers), f"one primary per paper at level {level}"

    topic_of = dict(primaries.filter(pl.col("level") == TOPIC_LEVEL).select("paper_id", "topic_id").iter_rows())
    for paper_id, parent in primaries.filter(pl.col("level") == 2).select("paper_id", "parent_topic_id").iter_rows():
        assert parent == topic_of[paper_id], f"{paper_id}: primary subtopic outside its primary topic"

    counted = primaries.group_by("topic_id").len()
    expected = dict(counted.iter_rows())
    for topic_id, n_papers in levels.select("topic_id", "n_papers").iter_rows():
        assert n_papers == expected.get(topic_id, 0), f"topic {topic_id} counts its primary papers"

    # The flagged primary is a largest share: the marts' weights never contradict it.
    largest = (
        shares.join(levels.select("topic_id", "level"), on="topic_id")
        .group_by("paper_id", "level")
        .agg(pl.col("weight").max().alias("largest"))
    )
    flagged = primaries.join(largest, on=["paper_id", "level"])
    assert (flagged["weight"] == flagged["largest"]).all()
