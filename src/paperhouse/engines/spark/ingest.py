"""Ingest as a Spark job: the rows of ``raw.source_records`` and ``raw.seed_files``, as the DuckDB
engine's ingest (``paperhouse.ingest.parse_cache``) writes them, read and parsed by Spark tasks.

The driver makes the folder's plan from names and small files only: which entries match the glob
and which cannot be read at all (``paperhouse.ingest.reading.scan_folder``), and what each structured file
depends on, its sidecar and companion table, read whole because they are small
(``paperhouse.ingest.input_files.plan_folder``). Spark reads the lists themselves (the ``binaryFile``
data source) and hashes each one in the task that read it; the driver collects one row per file
(name, hash, size, content key), and only the contents whose key the previous run's parse cache
does not hold (a Spark anti join) go on to be decoded, split, judged and normalised per partition
by the DuckDB engine's own Polars code (``paperhouse.ingest.reading.file_content`` and ``parse_batch`` in
``mapInArrow``). A content is parsed once, however many files hold it, and its rows are joined
to each of its files, as the DuckDB engine's ``raw.source_records`` view does.

Files read whole, by one task, are the rule. The driver reads a file itself (with
``paperhouse.ingest.reading.read_snapshot``, so it is reported exactly as the DuckDB engine reports it:
unreadable, changing while read) only when Spark did not give it whole: a name Hadoop cannot
carry (bytes that are not UTF-8) or hides (a leading ``_`` or ``.``), an empty file (which
Spark skips), a file it could not open, or one whose size or modification time moved while the
task read it. ``SparkIntake.read_on_driver``
names them.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa

from paperhouse.engines.spark.frames import arrow_schema, from_polars, record_batches, spark_schema, to_polars
from paperhouse.ingest.input_files import INPUT_PATTERNS, FolderPlan, plan_folder
from paperhouse.ingest.judging import AcceptanceRules
from paperhouse.ingest.reading import (
    PARSED_RECORD_SCHEMA,
    SEED_FILE_SCHEMA,
    SOURCE_RECORD_SCHEMA,
    FolderEntry,
    FolderRead,
    Snapshot,
    content_batches,
    content_key,
    file_content,
    parse_batch,
    parser_version,
    read_snapshot,
    scan_folder,
)
from paperhouse.ingest.structured_inputs import TableSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# One row per file a task read: its hash and key, and its bytes for the parse (``whole`` false when
# the file moved while it was read: the driver reads it again).
SNAPSHOT_SCHEMA = {
    "source_file": pl.String,
    "file_sha256": pl.String,
    "file_bytes": pl.Int64,
    "content_key": pl.String,
    "content": pl.Binary,
    "whole": pl.Boolean,
}
# Spark's file sources are made for a few large files; a folder of lists is often thousands of
# small ones, each a root path of the read. Listed on the driver (a listing job for more than 32
# paths took 30-45 s for 10,000 local files, the driver 5 s), and packed into partitions as if
# opening a file cost 64 KiB rather than 4 MiB: a Python task's own cost dwarfs a file's
# opening: 10,000 one-abstract files are read in 5 partitions instead of 313 (ingest 166 s -> 21 s).
_LISTING_SETTINGS = {
    "spark.sql.sources.parallelPartitionDiscovery.threshold": str(2**31 - 1),
    "spark.sql.files.openCostInBytes": str(64 << 10),
}
# Hadoop reads these characters of a path as a glob pattern.
_GLOB_CHARACTERS = re.compile(r"([\\\[\]{}*?])")
_LOCAL_SCHEME = "file:"


@dataclass(frozen=True)
class SparkIntake:
    """What ingest on Spark produced: the raw tables, and the listing on the driver too."""

    records: DataFrame  # raw.source_records (SOURCE_RECORD_SCHEMA), computed: reading it parses nothing again
    seed_files: DataFrame  # raw.seed_files (SEED_FILE_SCHEMA)
    folder: FolderRead  # the same listing as Polars: counts for the run summary
    parsed: DataFrame  # PARSED_RECORD_SCHEMA rows of every content in the folder: the next run's cache
    read_partitions: int  # Spark partitions (tasks) the lists were read and hashed in
    parse_partitions: int  # ... and the new contents parsed in
    read_on_driver: tuple[str, ...]  # files Spark did not give whole (see the module's doc)


def read_folder_on_spark(
    spark: SparkSession,
    seeds_dir: Path,
    rules: AcceptanceRules = AcceptanceRules(),
    glob: str | tuple[str, ...] = INPUT_PATTERNS,
    parse_cache: Path | None = None,
) -> SparkIntake:
    """Read every file of the folder with Spark, parsing only contents the ``parse_cache`` (the
    folder ``parse_cache_folder`` names, which ``write_parse_cache`` wrote; or None) does not hold."""
    seeds_dir = Path(seeds_dir).absolute()
    entries = scan_folder(seeds_dir, glob)
    plan = plan_folder(entries, read_snapshot)
    lists = [entry for entry in entries if entry.problem is None and entry.name not in plan.companions]
    snapshots = _read_on_spark(spark, [entry for entry in lists if _hadoop_can_read(entry)], plan.sources)
    read_partitions = snapshots.rdd.getNumPartitions()
    listing = to_polars(snapshots.drop("content"), {k: v for k, v in SNAPSHOT_SCHEMA.items() if k != "content"})
    whole = {row["source_file"]: row for row in listing.filter(pl.col("whole")).iter_rows(named=True)}

    folder, on_driver = _seed_files(entries, plan, whole)

    known = _cached_contents(spark, folder, parse_cache)
    folder = folder.with_columns(
        status=pl.when(pl.col("content_key").is_in(list(known))).then(pl.lit("reused")).otherwise("status")
    )
    # Each new content once, from the first file (by name) that holds it.
    to_parse = (
        folder.filter(pl.col("status") == "parsed")
        .sort("source_file")
        .unique("content_key", keep="first")
        .get_column("source_file")
    )
    parsed_by_driver = [(name, on_driver[name]) for name in to_parse if name in on_driver]
    driver_contents = _snapshot_rows(parsed_by_driver, plan.sources)
    # Only whole reads: a file Spark saw changing is parsed from the driver's read of it, and its
    # stale bytes may be another file's content (parsed twice, its rows doubled).
    contents = snapshots.filter("whole").join(
        from_polars(spark, to_parse.to_frame()).hint("broadcast"), "source_file", "left_semi"
    )
    if driver_contents.height:
        contents = contents.unionByName(from_polars(spark, driver_contents, SNAPSHOT_SCHEMA))
    new_rows = contents.select("file_sha256", "content", "source_file").mapInArrow(
        partial(_parse_contents, sources=plan.sources, rules=rules, schema=arrow_schema(PARSED_RECORD_SCHEMA)),
        spark_schema(PARSED_RECORD_SCHEMA),
    )
    parse_partitions = new_rows.rdd.getNumPartitions()
    parsed = _with_cached_rows(spark, new_rows, known, parse_cache).localCheckpoint(eager=True)
    _every_content_has_rows(parsed, folder)

    return SparkIntake(
        records=_source_records(spark, parsed, folder),
        seed_files=from_polars(spark, folder, SEED_FILE_SCHEMA),
        folder=FolderRead(files=folder),
        parsed=parsed,
        read_partitions=read_partitions,
        parse_partitions=parse_partitions,
        read_on_driver=tuple(sorted(on_driver)),
    )


def _seed_files(
    entries: list[FolderEntry], plan: FolderPlan, read_by_spark: dict[str, dict]
) -> tuple[pl.DataFrame, dict[str, Snapshot]]:
    """``raw.seed_files`` in the folder's order (every content ``parsed`` so far), and the
    snapshots the driver took of the files Spark did not give whole."""
    rows, on_driver = [], {}
    for entry in entries:
        if entry.name in plan.companions:
            served, snapshot = plan.companions[entry.name]
            rows.append((entry.name, snapshot.sha256, len(snapshot.data), "companion", f"decisions for {served}", None))
        elif entry.problem is not None:
            rows.append((entry.name, None, None, "unread", entry.problem, None))
        elif entry.name in read_by_spark:
            row = read_by_spark[entry.name]
            rows.append((entry.name, row["file_sha256"], row["file_bytes"], "parsed", None, row["content_key"]))
        else:
            snapshot = on_driver[entry.name] = read_snapshot(entry.path)
            if snapshot.data is None:
                rows.append((entry.name, None, None, "unread", snapshot.problem, None))
            else:
                key = content_key(snapshot.sha256, plan.sources.get(entry.name))
                rows.append((entry.name, snapshot.sha256, len(snapshot.data), "parsed", None, key))
    return pl.DataFrame(rows, schema=SEED_FILE_SCHEMA, orient="row"), on_driver


def _hadoop_can_read(entry: FolderEntry) -> bool:
    """A name Hadoop can carry (valid UTF-8: ``display_name`` left it as it is) and does not hide."""
    return entry.path.name == entry.name and not entry.name.startswith(("_", "."))


def _read_on_spark(spark: SparkSession, entries: list[FolderEntry], sources: dict[str, TableSource]) -> DataFrame:
    """Each file read and hashed by a Spark task, kept (``localCheckpoint``) so that the listing
    and the parse see the same bytes, read once."""
    schema = spark_schema(SNAPSHOT_SCHEMA)
    if not entries:
        return spark.createDataFrame([], schema)
    paths = [_LOCAL_SCHEME + "//" + _GLOB_CHARACTERS.sub(r"\\\1", str(entry.path)) for entry in entries]
    with _session_settings(spark, _LISTING_SETTINGS):
        files = (
            spark.read.format("binaryFile")
            # A file that vanished or cannot be opened since the scan is left out, not fatal: the
            # driver then reads it itself and reports why.
            .option("ignoreMissingFiles", "true")
            .option("ignoreCorruptFiles", "true")
            .load(paths)
        )
        hashed = files.mapInArrow(partial(_hash_files, sources=sources, schema=arrow_schema(SNAPSHOT_SCHEMA)), schema)
        return hashed.localCheckpoint(eager=True)


@contextmanager
def _session_settings(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Runtime settings of the session for the queries run inside, as they were afterwards."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _hash_files(
    batches: Iterator[pa.RecordBatch], sources: dict[str, TableSource], schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """(In a task.) ``binaryFile`` rows as ``SNAPSHOT_SCHEMA`` rows. The data source takes a
    file's size and time when it lists it and reads the bytes later: a file whose size or time
    differs after the read changed in between, and is not ``whole``."""
    for batch in batches:
        paths = batch.column("path").to_pylist()
        listed_bytes = batch.column("length").to_pylist()
        listed_us = batch.column("modificationTime").cast(pa.int64()).to_pylist()
        rows = []
        for path, size, modified_us, data in zip(
            paths, listed_bytes, listed_us, batch.column("content").to_pylist(), strict=True
        ):
            name = path.rsplit("/", 1)[-1]
            sha256 = hashlib.sha256(data).hexdigest()
            whole = len(data) == size and _unchanged_since(path, size, modified_us)
            rows.append((name, sha256, len(data), content_key(sha256, sources.get(name)), data, whole))
        yield from record_batches(pl.DataFrame(rows, schema=SNAPSHOT_SCHEMA, orient="row"), schema)


def _unchanged_since(path: str, size: int, modified_us: int | None) -> bool:
    if not path.startswith(_LOCAL_SCHEME):
        return True  # only the listed size is known to compare with
    try:
        info = os.stat(path.removeprefix(_LOCAL_SCHEME))
    except OSError:
        return False
    # Hadoop lists times in milliseconds.
    return info.st_size == size and modified_us is not None and info.st_mtime_ns // 1_000_000 == modified_us // 1000


def _snapshot_rows(snapshots: list[tuple[str, Snapshot]], sources: dict[str, TableSource]) -> pl.DataFrame:
    rows = [
        (name, s.sha256, len(s.data), content_key(s.sha256, sources.get(name)), s.data, True) for name, s in snapshots
    ]
    return pl.DataFrame(rows, schema=SNAPSHOT_SCHEMA, orient="row")


def _parse_contents(
    batches: Iterator[pa.RecordBatch], sources: dict[str, TableSource], rules: AcceptanceRules, schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """(In a task.) The judged rows of each content, parsed by the DuckDB engine's code, in
    batches of its size."""
    contents = (
        file_content(data, sha256, sources.get(name))
        for batch in batches
        for sha256, data, name in zip(*(column.to_pylist() for column in batch.columns), strict=True)
    )
    for batch in content_batches(contents):
        yield from record_batches(parse_batch(batch, rules), schema)


def _cached_contents(spark: SparkSession, folder: pl.DataFrame, parse_cache: Path | None) -> set[str]:
    """The folder's content keys that the parse cache holds: the present keys less those it does
    not (an anti join)."""
    cached = read_parse_cache(spark, parse_cache)
    present = folder.select(pl.col("content_key").drop_nulls().unique())
    if cached is None or present.is_empty():
        return set()
    new = from_polars(spark, present).join(cached.select("content_key").distinct(), "content_key", "left_anti")
    return set(present["content_key"]) - set(to_polars(new)["content_key"])


def _with_cached_rows(spark: SparkSession, new_rows: DataFrame, known: set[str], parse_cache: Path | None) -> DataFrame:
    if not known:
        return new_rows
    keys = from_polars(spark, pl.DataFrame({"content_key": sorted(known)}, schema={"content_key": pl.String}))
    cached = read_parse_cache(spark, parse_cache).join(keys.hint("broadcast"), "content_key", "left_semi")
    return new_rows.unionByName(cached.select(list(PARSED_RECORD_SCHEMA)))


def _every_content_has_rows(parsed: DataFrame, folder: pl.DataFrame) -> None:
    """Every file parsed or reused has a row: a paragraph, or why it has none (as the DuckDB engine checks)."""
    with_rows = set(to_polars(parsed.select("content_key").distinct())["content_key"])
    missing = folder.filter(pl.col("status").is_in(["parsed", "reused"]) & ~pl.col("content_key").is_in(with_rows))
    if missing.height:
        raise RuntimeError(f"no records for {missing.height} files, e.g. {missing['source_file'][0]!r}")


def _source_records(spark: SparkSession, parsed: DataFrame, folder: pl.DataFrame) -> DataFrame:
    """Each parsed or reused file joined to its content's rows, and one row per unread file."""
    read = folder.filter(pl.col("status").is_in(["parsed", "reused"])).select("source_file", "content_key")
    unread = folder.filter(pl.col("status") == "unread").select("source_file", reject_reason="reason")
    records = parsed.join(from_polars(spark, read).hint("broadcast"), "content_key").select(list(SOURCE_RECORD_SCHEMA))
    return records.unionByName(from_polars(spark, unread, SOURCE_RECORD_SCHEMA))


def write_raw_table(df: DataFrame, warehouse_dir: Path, name: str) -> Path:
    """Write ``df`` as the Parquet folder ``<warehouse_dir>/raw/<name>/`` (replacing it): the
    layout the dbt ``spark`` target reads its sources from."""
    folder = Path(warehouse_dir).absolute() / "raw" / name
    df.write.mode("overwrite").parquet(str(folder))
    return folder


def parse_cache_folder(warehouse_dir: Path, rules: AcceptanceRules = AcceptanceRules()) -> Path:
    """Where the parse cache of this parser version lives beside the raw tables: a new version
    (code, rules or columns) starts an empty one, so no row parsed otherwise is reused."""
    return Path(warehouse_dir).absolute() / "cache" / f"parsed_records_{parser_version(rules)}"


def read_parse_cache(spark: SparkSession, folder: Path | None) -> DataFrame | None:
    """The parse cache ``write_parse_cache`` left in ``folder``; None when there is none, or when
    its write did not finish (no ``_SUCCESS``) or holds other columns: nothing of it is trusted."""
    if folder is None or not (Path(folder) / "_SUCCESS").is_file():
        return None
    cached = spark.read.parquet(str(Path(folder).absolute()))
    return cached if set(cached.columns) == set(PARSED_RECORD_SCHEMA) else None


def write_parse_cache(intake: SparkIntake, folder: Path) -> None:
    """Keep this run's parsed rows for the next run, in ``folder`` (``parse_cache_folder``). Written
    beside the old cache and swapped in, so a killed write leaves the old one whole."""
    folder = Path(folder).absolute()
    written, retired = folder.with_name(folder.name + ".new"), folder.with_name(folder.name + ".old")
    for stale in (written, retired):
        shutil.rmtree(stale, ignore_errors=True)
    intake.parsed.write.mode("overwrite").parquet(str(written))
    if folder.exists():
        folder.rename(retired)
    written.rename(folder)
    shutil.rmtree(retired, ignore_errors=True)
