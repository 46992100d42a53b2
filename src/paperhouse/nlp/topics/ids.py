"""Topic ids that stay: a re-fit keeps the id of every topic that persists.

The topic model (``paperhouse.nlp.topics.model``) numbers its topics afresh on every fit. Before they are
written, each level's new topics are matched to the previous run's topics of that level (the
``raw.topics`` and ``raw.topic_*_weights`` the build database still holds), one to one:

- **Overlap.** Over the papers both runs have, a new topic B and an old topic A overlap by the
  Jaccard index of their primary papers; their top terms by the Jaccard index of the terms. Their
  score is the mean of the two.
- **Persists.** A pair may match when each is the other's best: of the papers the runs share, the
  new topic holds more of the old one's than any other new topic, and the old one more of the new
  one's than any other old topic. When either has no such paper (its papers all new, or all gone),
  when they share at least a third of their top terms (half of each, for lists of one length).
  Among the pairs that may match, the one-to-one assignment with the highest total score (Hungarian
  method) is kept: a topic that splits keeps its id on the part holding most of its papers, two that
  merge leave the id of the one holding more of the result.
- **New ids.** A new topic that matches none gets the next id never given out (topics and
  subtopics share one sequence), in the model's order (level, then size), so a first run numbers
  topics 1.. by size and subtopics after them. A retired id is never given out again.
- **Retired ids.** An old topic that matches none is recorded as retired, with the new topic of its
  level that took most of its papers (``marts.topic_id_aliases`` resolves it).

``raw.topic_id_registry`` records every id given out (``minted``) and every id retired
(``retired``): rows are only ever added, in the same transaction as the topic tables, and it travels
with the published warehouse as ``raw.paper_id_registry`` does, so a recovered build database gives
out no id twice. The same input twice gives the same topics, so the same ids and no new rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

import duckdb
import numpy as np
import polars as pl

from paperhouse.nlp.topics.model import SUBTOPIC_LEVEL, TOPIC_LEVEL, TopicModel
from paperhouse.warehouse.database import RAW_SCHEMA, append_rows, column_names, registered, table_exists

TABLE = "topic_id_registry"
MINTED, RETIRED = "minted", "retired"
EVENTS = (MINTED, RETIRED)
REGISTRY_SCHEMA = {
    "topic_id": pl.Int32,
    "event": pl.String,  # minted | retired
    "level": pl.Int32,
    "successor_topic_id": pl.Int32,  # retired: the topic of its level that took most of its papers
    "generation": pl.Int64,  # a counter of the runs that added rows
    "run_id": pl.String,
    "recorded_at": pl.Datetime("us"),  # UTC
}
_PRIMARY_SCHEMA = {"paper_id": pl.String, "topic_id": pl.Int32, "level": pl.Int32}
_TERMS_SCHEMA = {"topic_id": pl.Int32, "term": pl.String}
_TOPICS_SCHEMA = {"topic_id": pl.Int32, "level": pl.Int32}
# Without papers to compare, a pair may match when they share a third of their top terms (half of
# each, for lists of one length).
_TERM_JACCARD = 1 / 3


@dataclass(frozen=True)
class TopicHistory:
    """What the previous run left: its topics, each paper's primary topic per level, the top terms."""

    topics: pl.DataFrame  # topic_id, level
    primaries: pl.DataFrame  # paper_id, topic_id, level
    terms: pl.DataFrame  # topic_id, term
    registry: pl.DataFrame  # REGISTRY_SCHEMA

    @property
    def size(self) -> int | None:
        """The previous run's number of topics (level 1), None on a first run."""
        count = self.topics.filter(pl.col("level") == TOPIC_LEVEL).height
        return count or None


@dataclass(frozen=True)
class Identification:
    model: TopicModel  # the model with stable ids
    new_entries: pl.DataFrame  # REGISTRY_SCHEMA rows to add
    kept: int  # topics (both levels) keeping a previous id
    minted: int
    retired: int


def empty_history() -> TopicHistory:
    return TopicHistory(
        pl.DataFrame(schema=_TOPICS_SCHEMA),
        pl.DataFrame(schema=_PRIMARY_SCHEMA),
        pl.DataFrame(schema=_TERMS_SCHEMA),
        pl.DataFrame(schema=REGISTRY_SCHEMA),
    )


def load(con: duckdb.DuckDBPyConnection) -> TopicHistory:
    """The previous run's topics and the registry, from the build database (empty on a first run).
    A warehouse written before topics had levels reads as level 1 throughout."""
    history = empty_history()
    if table_exists(con, RAW_SCHEMA, TABLE):
        registry = con.execute(f"select * from {RAW_SCHEMA}.{TABLE}").pl()
        history = replace(history, registry=_cast(registry, REGISTRY_SCHEMA))
    if not all(table_exists(con, RAW_SCHEMA, t) for t in ("topics", "topic_paper_weights", "topic_term_weights")):
        return history
    topics = con.execute(f"select * from {RAW_SCHEMA}.topics").pl()
    if "level" not in topics.columns:
        topics = topics.with_columns(level=pl.lit(TOPIC_LEVEL))
    topics = topics.select("topic_id", "level")
    # A warehouse written before the topic model flagged primaries reads them off the weights.
    flagged = "is_primary" in column_names(con, RAW_SCHEMA, "topic_paper_weights")
    with registered(con, "previous_topics", topics):
        if flagged:
            primaries = con.execute(f"""
                select weights.paper_id, weights.topic_id, topics.level
                from {RAW_SCHEMA}.topic_paper_weights as weights
                inner join previous_topics as topics using (topic_id)
                where weights.is_primary
            """).pl()
        else:
            primaries = con.execute(f"""
                select paper_id, topic_id, level from (
                    select weights.paper_id, weights.topic_id, topics.level,
                           row_number() over (partition by weights.paper_id, topics.level
                                              order by weights.weight desc, weights.topic_id) as position
                    from {RAW_SCHEMA}.topic_paper_weights as weights
                    inner join previous_topics as topics using (topic_id)
                ) where position = 1
            """).pl()
    terms = con.execute(f"select topic_id, term from {RAW_SCHEMA}.topic_term_weights").pl()
    return replace(
        history,
        topics=_cast(topics, _TOPICS_SCHEMA),
        primaries=_cast(primaries, _PRIMARY_SCHEMA),
        terms=_cast(terms, _TERMS_SCHEMA),
    )


def _cast(frame: pl.DataFrame, schema: dict) -> pl.DataFrame:
    return frame.select([pl.col(column).cast(dtype) for column, dtype in schema.items()])


def previous_size(con: duckdb.DuckDBPyConnection) -> int | None:
    """The previous run's number of topics (level 1), without reading its papers: what the topic
    model needs before it fits (``load`` reads the rest after, so the corpus step's peak does not
    hold the previous run's paper rows)."""
    if not table_exists(con, RAW_SCHEMA, "topics"):
        return None
    columns = {
        row[0]
        for row in con.execute(
            "select column_name from duckdb_columns() where schema_name = ? and table_name = 'topics'", [RAW_SCHEMA]
        ).fetchall()
    }
    if "level" not in columns:
        return con.execute(f"select count(*) from {RAW_SCHEMA}.topics").fetchone()[0] or None
    return con.execute(f"select count(*) from {RAW_SCHEMA}.topics where level = ?", [TOPIC_LEVEL]).fetchone()[0] or None


def append(con: duckdb.DuckDBPyConnection, entries: pl.DataFrame) -> None:
    """Add registry rows (inside the caller's transaction); existing rows are never touched."""
    append_rows(con, TABLE, entries, key=("topic_id", "event"))


def assign(model: TopicModel, history: TopicHistory, run_id: str | None, now: datetime) -> Identification:
    """The model renumbered: persisting topics keep their ids, new ones get new ids, and the
    registry rows recording what was given out and retired."""
    minted_before = history.registry.filter(pl.col("event") == MINTED)["topic_id"]
    retired_before = set(history.registry.filter(pl.col("event") == RETIRED)["topic_id"].to_list())
    previous = history.topics.filter(~pl.col("topic_id").is_in(list(retired_before)))
    next_id = max([0, *minted_before.to_list(), *history.topics["topic_id"].to_list(), *retired_before]) + 1

    mapping: dict[int, int] = {}
    retired_rows: list[tuple[int, int, int | None]] = []
    for level, topics, papers, terms in (
        (TOPIC_LEVEL, model.topics, model.paper_topics, model.topic_terms),
        (SUBTOPIC_LEVEL, model.subtopics, model.paper_subtopics, model.subtopic_terms),
    ):
        new_ids = topics["topic_id"].sort().to_list()
        old_ids = previous.filter(pl.col("level") == level)["topic_id"].sort().to_list()
        matched, successors = _match(
            old_ids,
            history.primaries.filter(pl.col("level") == level),
            history.terms,
            new_ids,
            _primaries(papers),
            terms.select("topic_id", "term"),
        )
        mapping.update({new: old for old, new in matched.items()})
        for old in old_ids:
            if old not in matched:
                retired_rows.append((old, level, successors.get(old)))
    level_of = {
        topic: level
        for level, frame in ((TOPIC_LEVEL, model.topics), (SUBTOPIC_LEVEL, model.subtopics))
        for topic in frame["topic_id"].to_list()
    }
    minted = []
    for new in sorted(level_of, key=lambda topic: (level_of[topic], topic)):
        if new not in mapping:
            mapping[new] = next_id
            minted.append((next_id, level_of[new]))
            next_id += 1
    # Ids the registry does not hold yet (a warehouse from before it): recorded as they persist.
    unregistered = set(mapping.values()) - set(minted_before.to_list()) - {m for m, _ in minted}
    minted += sorted((topic, level_of[new]) for new, topic in mapping.items() if topic in unregistered)

    generation = int(history.registry["generation"].max() or 0) + 1
    rows = [(topic, MINTED, level, None) for topic, level in minted] + [
        (old, RETIRED, level, None if successor is None else mapping[successor])
        for old, level, successor in retired_rows
    ]
    entries = pl.DataFrame(
        {
            "topic_id": [r[0] for r in rows],
            "event": [r[1] for r in rows],
            "level": [r[2] for r in rows],
            "successor_topic_id": [r[3] for r in rows],
            "generation": [generation] * len(rows),
            "run_id": [run_id] * len(rows),
            "recorded_at": [_utc(now)] * len(rows),
        },
        schema=REGISTRY_SCHEMA,
    ).sort("topic_id", "event")
    kept = len(mapping) - len(minted) + len(unregistered)
    return Identification(
        _renumbered(model, mapping), entries, kept, len(minted) - len(unregistered), len(retired_rows)
    )


def _primaries(paper_topics: pl.DataFrame) -> pl.DataFrame:
    """Each paper's primary topic, as the topic model flagged it and the marts show it."""
    return paper_topics.filter("is_primary").select("paper_id", "topic_id")


def _match(
    old_ids: list[int],
    old_papers: pl.DataFrame,
    old_terms: pl.DataFrame,
    new_ids: list[int],
    new_papers: pl.DataFrame,
    new_terms: pl.DataFrame,
) -> tuple[dict[int, int], dict[int, int]]:
    """old id -> new id for the topics that persist; and for every old topic sharing papers with a
    new one, the new topic holding most of them (its successor, should it retire)."""
    from scipy.optimize import linear_sum_assignment

    shared_papers = np.zeros((len(old_ids), len(new_ids)))
    if not old_ids or not new_ids:
        return {}, {}
    old_row = {topic: i for i, topic in enumerate(old_ids)}
    new_column = {topic: j for j, topic in enumerate(new_ids)}
    # Only papers both runs have can show where a topic's papers went.
    old_here = old_papers.join(new_papers.select("paper_id"), on="paper_id", how="semi")
    new_seen = new_papers.join(old_papers.select("paper_id"), on="paper_id", how="semi")
    both = old_here.join(new_seen, on="paper_id", suffix="_new").group_by("topic_id", "topic_id_new").len()
    for old, new, count in both.iter_rows():
        if old in old_row and new in new_column:
            shared_papers[old_row[old], new_column[new]] = count
    old_size = _sizes(old_here, old_row)
    new_size = _sizes(new_seen, new_column)
    shared_terms = np.zeros_like(shared_papers)
    terms_both = (
        old_terms.filter(pl.col("topic_id").is_in(old_ids))
        .join(new_terms, on="term", suffix="_new")
        .group_by("topic_id", "topic_id_new")
        .len()
    )
    for old, new, count in terms_both.iter_rows():
        if new in new_column:
            shared_terms[old_row[old], new_column[new]] = count
    old_terms_n = _sizes(old_terms, old_row)
    new_terms_n = _sizes(new_terms, new_column)

    with np.errstate(divide="ignore", invalid="ignore"):
        union = old_size[:, None] + new_size[None, :] - shared_papers
        paper_jaccard = np.where(union > 0, shared_papers / union, 0.0)
        term_union = old_terms_n[:, None] + new_terms_n[None, :] - shared_terms
        term_jaccard = np.where(term_union > 0, shared_terms / term_union, 0.0)
        comparable = (old_size[:, None] > 0) & (new_size[None, :] > 0)
    # Each the other's best: the new topic holds more of the old one's papers than any other new
    # topic does, and the old one more of the new one's than any other old topic.
    each_others_best = (
        (shared_papers > 0)
        & (shared_papers == shared_papers.max(axis=1, keepdims=True))
        & (shared_papers == shared_papers.max(axis=0, keepdims=True))
    )
    may_match = np.where(comparable, each_others_best, term_jaccard >= _TERM_JACCARD)
    score = np.where(may_match, (paper_jaccard + term_jaccard) / 2 + 1.0, 0.0)  # any allowed pair beats none
    rows, columns = linear_sum_assignment(-score)
    matched = {old_ids[i]: new_ids[j] for i, j in zip(rows, columns, strict=True) if may_match[i, j]}
    successors = {
        old: new_ids[int(shared_papers[i].argmax())] for i, old in enumerate(old_ids) if shared_papers[i].max() > 0
    }
    return matched, successors


def _sizes(frame: pl.DataFrame, index: dict[int, int]) -> np.ndarray:
    sizes = np.zeros(len(index))
    for topic, count in frame.group_by("topic_id").len().iter_rows():
        if topic in index:
            sizes[index[topic]] = count
    return sizes


def _renumbered(model: TopicModel, mapping: dict[int, int]) -> TopicModel:
    old = pl.Series(list(mapping), dtype=pl.Int32)
    new = pl.Series(list(mapping.values()), dtype=pl.Int32)

    def renumber(frame: pl.DataFrame, *columns: str, order: tuple[str, ...]) -> pl.DataFrame:
        return frame.with_columns(pl.col(c).replace_strict(old, new, return_dtype=pl.Int32) for c in columns).sort(
            order
        )

    return replace(
        model,
        paper_topics=renumber(model.paper_topics, "topic_id", order=("paper_id", "topic_id")),
        topic_terms=renumber(model.topic_terms, "topic_id", order=("topic_id", "rank")),
        topics=renumber(model.topics, "topic_id", order=("topic_id",)),
        subtopics=renumber(model.subtopics, "topic_id", "parent_topic_id", order=("topic_id",)),
        paper_subtopics=renumber(model.paper_subtopics, "topic_id", order=("paper_id", "topic_id")),
        subtopic_terms=renumber(model.subtopic_terms, "topic_id", order=("topic_id", "rank")),
    )


def _utc(moment: datetime) -> datetime:
    """A naive UTC timestamp: plain TIMESTAMP columns read the same in every client and time zone."""
    return moment.astimezone(UTC).replace(tzinfo=None)
