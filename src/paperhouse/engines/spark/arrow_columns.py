"""Columns passed between Spark and the Polars/NumPy code that runs inside Spark's tasks.

A stage's Python body gets Spark's rows as Arrow record batches (``mapInArrow``) and must hand back
batches of exactly the Arrow types Spark's schema names: Polars writes its strings as views or
large strings and has unsigned integers Spark does not know, so every frame leaves through
``Columns.batches``, cast to the one schema both sides are given.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import polars as pl
import pyarrow as pa

# Spark's name and Arrow's type for each Polars type the stages hand over.
_TYPES: dict[pl.DataType, tuple[str, pa.DataType]] = {
    pl.String: ("string", pa.string()),
    pl.Int32: ("int", pa.int32()),
    pl.Int64: ("bigint", pa.int64()),
    pl.Float64: ("double", pa.float64()),
    pl.Binary: ("binary", pa.binary()),
}


class Columns:
    """Named, typed columns: ``ddl`` for Spark (``mapInArrow``'s schema), ``arrow`` for the batches."""

    def __init__(self, columns: dict[str, pl.DataType]) -> None:
        self.polars = columns
        self.ddl = ", ".join(f"`{name}` {_TYPES[dtype][0]}" for name, dtype in columns.items())
        self.arrow = pa.schema([(name, _TYPES[dtype][1]) for name, dtype in columns.items()])

    def batches(self, frame: pl.DataFrame) -> Iterator[pa.RecordBatch]:
        """``frame``'s columns of this schema, cast to it, as Arrow record batches."""
        table = frame.select(list(self.polars)).cast(self.polars).to_arrow(compat_level=pl.CompatLevel.oldest())
        yield from table.cast(self.arrow).to_batches()


def rows_of_bytes(matrix: np.ndarray) -> pa.Array:
    """Each row of a C-contiguous 2-D array as one binary value, without a Python object per row."""
    n_rows, width = matrix.shape[0], matrix.shape[1] * matrix.itemsize
    offsets = np.arange(n_rows + 1, dtype=np.int32) * np.int32(width)
    data = np.ascontiguousarray(matrix)
    return pa.Array.from_buffers(pa.binary(), n_rows, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def matrix_of_bytes(column: pa.Array | pa.ChunkedArray, dtype: type, width: int) -> np.ndarray:
    """The inverse of ``rows_of_bytes``: a binary column whose values all hold ``width`` items of
    ``dtype``, as a 2-D array (one copy)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = []
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        offset_type = np.int64 if pa.types.is_large_binary(chunk.type) else np.int32
        offsets = np.frombuffer(chunk.buffers()[1], dtype=offset_type)[chunk.offset : chunk.offset + len(chunk) + 1]
        data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
        parts.append(data.view(dtype).reshape(len(chunk), width))
    return np.concatenate(parts) if parts else np.empty((0, width), dtype=dtype)
