"""The neighbour search's work in one Spark task (``mapInArrow`` and ``applyInArrow`` bodies, no
pyspark): the whole search for a corpus small enough to be searched exactly, each paper's LSA
vector and cells, and the nearest papers within one cell."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import polars as pl
import pyarrow as pa

from paperhouse.engines.spark.frames import record_batches
from paperhouse.engines.spark.term_partitions import frame_of
from paperhouse.nlp.similar import SIMILAR_SCHEMA, nearest_cells, projected, similar_papers, vector_neighbours
from paperhouse.nlp.terms.weights import TermWeights, weight_matrix

PLACED_SCHEMA = pa.schema(
    [
        ("paper_id", pa.string()),
        ("home", pa.int32()),
        ("probes", pa.list_(pa.int32())),
        ("vector", pa.list_(pa.float32())),
    ]
)
NEAR_SCHEMA = pa.schema([("paper_id", pa.string()), ("similar_paper_id", pa.string()), ("near", pa.float32())])
SIMILAR_ARROW_SCHEMA = pa.schema(
    [("paper_id", pa.string()), ("similar_paper_id", pa.string()), ("score", pa.float64()), ("rank", pa.int32())]
)


def weights_of(rows: pl.DataFrame, terms: list[str] | None = None) -> TermWeights:
    """``paper_id``, ``term`` (null for a paper without one), ``weight`` rows -> their papers' weight
    matrix, rows in id order, columns ``terms`` (default: the terms the rows use, sorted)."""
    paper_ids = rows["paper_id"].unique().sort()
    entries = rows.drop_nulls("term")
    columns = entries["term"].unique().sort() if terms is None else pl.Series(terms, dtype=pl.String)
    return TermWeights(weight_matrix(entries, paper_ids, columns), paper_ids, columns.to_numpy())


def searched_whole(table: pa.Table, k: int, dims: int, exact_limit: int) -> pa.Table:
    """``similar_papers`` over every paper of a corpus of at most ``exact_limit`` papers, all in this
    one group: the weight matrix one machine builds, searched as there."""
    rows = pl.from_arrow(table).select("paper_id", "term", "weight")
    if rows.is_empty():
        return pl.DataFrame(schema=SIMILAR_SCHEMA).to_arrow().cast(SIMILAR_ARROW_SCHEMA)
    found = similar_papers(weights_of(rows), k=k, dims=dims, exact_limit=exact_limit)
    return found.to_arrow().select(SIMILAR_ARROW_SCHEMA.names).cast(SIMILAR_ARROW_SCHEMA)


def placed_in_cells_of(
    batches: Iterable[pa.RecordBatch], terms: list[str], svd, cells, probes: int
) -> Iterator[pa.RecordBatch]:
    """Each paper's LSA vector (``svd`` over the shared ``terms``), its home cell (``cells``' k-means
    prediction) and the ``probes`` cells it visits, as ``similar_papers`` finds them. Rows:
    ``paper_id``, ``term`` (one of ``terms``, or null), ``weight``; every row of a paper here."""
    rows = frame_of(batches)
    if rows is None:
        return
    weights = weights_of(rows, terms)
    vectors = projected(svd, weights.matrix)
    placed = pl.DataFrame(
        {
            "paper_id": weights.paper_ids,
            "home": cells.predict(vectors).astype(np.int32),
            "probes": list(nearest_cells(vectors, cells.cluster_centers_.astype(np.float32), probes).astype(np.int32)),
            "vector": list(vectors),
        },
        schema={"paper_id": pl.String, "home": pl.Int32, "probes": pl.List(pl.Int32), "vector": pl.List(pl.Float32)},
    )
    yield from record_batches(placed, PLACED_SCHEMA)


def neighbours_in_cell(table: pa.Table, k: int) -> pa.Table:
    """The k papers of a cell (``member``) nearest by LSA cosine to each paper visiting it (not
    ``member``), never itself; rows ``paper_id``, ``vector``, ``member``."""
    rows = pl.from_arrow(table).select("paper_id", "vector", "member")
    papers = rows.unique("paper_id").sort("paper_id")
    if papers.is_empty():
        return NEAR_SCHEMA.empty_table()
    vectors = np.asarray(papers["vector"].to_list(), dtype=np.float32)
    position = rows.join(papers.with_row_index("position").select("paper_id", "position"), on="paper_id")

    def positions(member: bool) -> np.ndarray:
        return np.sort(position.filter(pl.col("member") == member)["position"].unique().to_numpy().astype(np.int64))

    source, target, near = vector_neighbours(vectors, positions(False), positions(True), k)
    ids = papers["paper_id"]
    found = pl.DataFrame({"paper_id": ids.gather(source), "similar_paper_id": ids.gather(target), "near": near})
    return found.to_arrow().select(NEAR_SCHEMA.names).cast(NEAR_SCHEMA)
