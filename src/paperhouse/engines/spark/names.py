"""``paperhouse.nlp.names.extract_method_names`` as Spark jobs.

Every rule reads one paper, so each Arrow batch of a partition finds its papers' names with the
single-machine code (``names.introduced_names``); then each batch counts the papers that write
any of the names found (``names.papers_writing``), an aggregation sums the counts, and a join
takes back the names too many papers write. On the driver: the distinct names found, which the
counting tasks search for (a name is a word or a few: about 20 bytes each, one per paper that
introduces one at most).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial

import polars as pl
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from paperhouse.engines.spark.frames import arrow_schema, record_batches, spark_schema
from paperhouse.nlp.names import NAME_SCHEMA, introduced_names, papers_writing, shared_papers_limit

USAGE_SCHEMA = {"method_name": pl.String, "papers": pl.Int64}


def method_names_on_spark(papers: DataFrame, max_shared_papers: int = 2) -> DataFrame:
    """``paper_id``, ``text`` of each paper -> ``NAME_SCHEMA``, as ``extract_method_names`` finds them."""
    texts = papers.select("paper_id", "text")
    names = texts.mapInArrow(_introduced_names_of, spark_schema(NAME_SCHEMA)).localCheckpoint()
    found = sorted(row["method_name"] for row in names.select("method_name").dropna().distinct().collect())
    if not found:
        return names
    usage = (
        texts.mapInArrow(partial(_papers_writing_of, names=found), spark_schema(USAGE_SCHEMA))
        .groupBy("method_name")
        .agg(F.sum("papers").alias("papers"))
    )
    common = usage.filter(F.col("papers") > shared_papers_limit(texts.count(), max_shared_papers)).select(
        "method_name", F.lit(True).alias("common")
    )
    marked = names.join(F.broadcast(common), on="method_name", how="left")
    kept = F.col("common").isNull()
    return marked.select(
        "paper_id",
        F.when(kept, F.col("method_name")).alias("method_name"),
        F.when(kept, F.col("method_long_form")).alias("method_long_form"),
    )


def _introduced_names_of(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    schema = arrow_schema(NAME_SCHEMA)
    for batch in batches:
        if batch.num_rows:
            yield from record_batches(introduced_names(pl.from_arrow(batch)), schema)


def _papers_writing_of(batches: Iterable[pa.RecordBatch], names: list[str]) -> Iterator[pa.RecordBatch]:
    schema = arrow_schema(USAGE_SCHEMA)
    wanted = pl.Series("method_name", names, dtype=pl.String)
    for batch in batches:
        if batch.num_rows:
            usage = papers_writing(pl.from_arrow(batch), wanted).cast(USAGE_SCHEMA)
            yield from record_batches(usage, schema)
