"""The topic model's work on one Spark partition: placing papers in the fitted topics and subtopics
(``mapInArrow`` bodies, no pyspark), and writing their share rows."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import polars as pl
import pyarrow as pa

from paperhouse.engines.spark.frames import record_batches
from paperhouse.engines.spark.term_partitions import frame_of
from paperhouse.nlp.terms.weights import weight_matrix
from paperhouse.nlp.topics.model import paper_rows, topic_shares
from paperhouse.nlp.topics.subtopics import SplitModel, place_in_split

PLACED_SCHEMA = pa.schema(
    [
        ("paper_id", pa.string()),
        ("shares", pa.list_(pa.float64())),
        ("primary", pa.int32()),
        ("subtopic_shares", pa.list_(pa.float64())),
        ("subtopic_primary", pa.int32()),
    ]
)
SHARE_SCHEMA = pa.schema(
    [("paper_id", pa.string()), ("topic_id", pa.int32()), ("weight", pa.float64()), ("is_primary", pa.bool_())]
)


def placed_papers_of(
    batches: Iterable[pa.RecordBatch], model, terms: list[str], splits: list[SplitModel]
) -> Iterator[pa.RecordBatch]:
    """Each paper's shares of the topics (``model.transform`` of its row of the topic vocabulary
    ``terms``) and of its primary topic's subtopics (``place_in_split``). Rows: ``paper_id``,
    ``term`` (null for a paper without a term of the vocabulary), ``weight``; every row of a paper
    here. The solver stops relative to the batch's first step: weights agree with a placing of the
    whole corpus to its tolerance."""
    rows = frame_of(batches)
    if rows is None:
        return
    paper_ids = rows["paper_id"].unique().sort()
    matrix = weight_matrix(rows.drop_nulls("term"), paper_ids, terms)
    shares = topic_shares(model.transform(matrix))
    primary = shares.argmax(axis=1)
    subtopic_shares: list[np.ndarray | None] = [None] * len(paper_ids)
    for component, split in enumerate(splits):
        members = np.flatnonzero(primary == component)
        if len(members):
            placed = topic_shares(place_in_split(split, matrix[members]))
            for member, row in zip(members, placed, strict=True):
                subtopic_shares[member] = row
    placed = pl.DataFrame(
        {
            "paper_id": paper_ids,
            "shares": list(shares),
            "primary": primary.astype(np.int32),
            "subtopic_shares": subtopic_shares,
            "subtopic_primary": [int(row.argmax()) for row in subtopic_shares],
        },
        schema={
            "paper_id": pl.String,
            "shares": pl.List(pl.Float64),
            "primary": pl.Int32,
            "subtopic_shares": pl.List(pl.Float64),
            "subtopic_primary": pl.Int32,
        },
    )
    yield from record_batches(placed, PLACED_SCHEMA)


def share_rows_of(
    batches: Iterable[pa.RecordBatch], topic_id: list[int], subtopic_ids: list[list[int]], level: int
) -> Iterator[pa.RecordBatch]:
    """``paper_rows`` of placed papers (``placed_papers_of``): their topics' shares (``level`` 1, with
    ``topic_id`` per component) or their subtopics' (level 2, ``subtopic_ids`` per component)."""
    placed = frame_of(batches)
    if placed is None:
        return
    if level == 1:
        shares = np.array(placed["shares"].to_list(), dtype=np.float64)
        rows = paper_rows(placed["paper_id"], np.arange(placed.height), shares, np.asarray(topic_id, dtype=np.int32))
        yield from record_batches(rows, SHARE_SCHEMA)
        return
    for (component,), papers in placed.group_by(["primary"]):
        shares = np.array(papers["subtopic_shares"].to_list(), dtype=np.float64)
        ids = np.asarray(subtopic_ids[component], dtype=np.int32)
        yield from record_batches(paper_rows(papers["paper_id"], np.arange(papers.height), shares, ids), SHARE_SCHEMA)
