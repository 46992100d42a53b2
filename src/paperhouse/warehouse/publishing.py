"""Publishing: the build database made ready for a run, and swapped in as the warehouse atomically.

The *build* database (``Paths.build_database``) is written by the one run that holds the run lock
(``paperhouse.warehouse.locking``); the *published* warehouse (``Paths.warehouse``) is what readers open, and
nothing ever opens it for writing. Publishing checkpoints the build database, copies it beside the
warehouse, syncs it to disk and renames it over the warehouse in one step, so a reader sees the old
version whole or the new one whole, and a reader that keeps the old file open keeps reading the old
version. Folders built from the warehouse (the Parquet export, the dashboard) are swapped in the
same way, through a symbolic link (``publish_folder``).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

from paperhouse.common.faults import failpoint
from paperhouse.warehouse.database import connect, sql_identifier, sql_literal

_COPY_CHUNK = 1 << 20

log = logging.getLogger(__name__)


class BuildDatabaseLocked(RuntimeError):
    """Another process keeps the build database open (a leftover of a killed run, or a tool
    someone pointed at the build file instead of the published warehouse)."""


def _is_lock_conflict(error: duckdb.Error) -> bool:
    return "could not set lock" in str(error).lower()


def _check_build_database(database: Path) -> None:
    """Open the build database for writing (replaying its write-ahead log, if a run died) and
    read every table in full (checksums are verified block by block as they are read), so that
    damage shows now, not half-way through the run. It costs about what publishing's copy does."""
    with connect(database) as con:
        tables = con.execute(
            "select schema_name, table_name from duckdb_tables() where database_name = current_database() order by all"
        ).fetchall()
        for schema, table in tables:
            con.execute(f'select count(*), bit_xor(hash(t)) from "{schema}"."{table}" as t').fetchall()


def prepare_build_database(build_database: Path, warehouse: Path, lock_wait: float = 120.0) -> str:
    """Make sure the run can write the build database; says what it did.

    - It opens and its carried-over tables read whole: used as it is.
    - Another process holds it open: wait up to ``lock_wait`` seconds (the Great Expectations
      worker of a killed run lets go within moments), then fail with a clear message.
    - Neither it nor the published warehouse exists: a first run, it starts empty ("new").
    - It is missing, or cannot be opened or read (a torn file): it is moved aside to
      ``*.damaged`` and rebuilt from a copy of the published warehouse, which holds the parse
      cache and the paper-id registry as they were at the last publish, so paper ids survive.
      Without a published warehouse, the run starts from an empty database.
    """
    started = time.monotonic()
    deadline = started + lock_wait
    problem = "missing"
    while build_database.exists():
        try:
            _check_build_database(build_database)
            waited = time.monotonic() - started
            return "ok" + (f" (waited {waited:.1f} s for another process to close it)" if waited >= 0.5 else "")
        except duckdb.Error as error:
            if _is_lock_conflict(error):
                if time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                raise BuildDatabaseLocked(
                    f"the build database {build_database} is held open by another process: "
                    + str(error).splitlines()[0]
                ) from error
            problem = f"damaged ({str(error).splitlines()[0][:200]})"
            _move_aside(build_database)
    build_database.parent.mkdir(parents=True, exist_ok=True)
    if problem == "missing" and not warehouse.exists():
        return "new"  # the first run for this warehouse
    if warehouse.exists():
        try:
            with connect(warehouse, read_only=True) as con:
                con.execute("select count(*) from duckdb_tables()").fetchall()
            _copy_synced(warehouse, build_database)
            _check_build_database(build_database)
            return f"build database {problem}: restored from the published warehouse"
        except (duckdb.Error, OSError) as error:
            log.warning("the published warehouse cannot seed the build database: %s", error)
            _move_aside(build_database)
    return f"build database {problem}: starting from an empty one"


def _move_aside(database: Path) -> None:
    for path in (database, database.with_name(database.name + ".wal")):
        if path.exists():
            os.replace(path, path.with_name(path.name + ".damaged"))


def _copy_synced(source: Path, target: Path) -> None:
    """Copy in chunks and sync the copy to disk (``publish.copy_chunk`` fails mid-copy)."""
    with open(source, "rb") as reader, open(target, "wb") as writer:
        while chunk := reader.read(_COPY_CHUNK):
            writer.write(chunk)
            failpoint("publish.copy_chunk")
        writer.flush()
        os.fsync(writer.fileno())


def _fsync(path: Path) -> None:
    """Sync a file, or a folder's entries (so a rename in it survives a crash), to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(build_database: Path, warehouse: Path) -> Path:
    """Swap a copy of the build database in as the warehouse, atomically.

    Readers holding the old file keep reading the old version (the rename does not touch
    their open inode); new readers get the new version whole. A crash before the rename
    leaves the previous warehouse as it was, and at worst a staging file the next publish
    overwrites.
    """
    with connect(build_database) as con:
        con.execute("checkpoint")
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    staging = warehouse.with_name(f".{warehouse.name}.publishing")
    _copy_synced(build_database, staging)
    failpoint("publish.before_replace")
    os.replace(staging, warehouse)
    _fsync(warehouse.parent)
    return warehouse


def publish_folder(target: Path, build: Callable[[Path], None]) -> Path:
    """Build a new version of a folder and swap it in atomically, like ``publish`` does a file.

    ``build`` fills a fresh folder beside the versions already published; its files and the
    folder are synced to disk, then ``target`` (a symbolic link to the current version) is
    replaced by rename, so a reader listing ``target`` sees the old version whole or the new one
    whole. A failed build or a crash before the rename leaves the previous version published.
    The version just replaced stays (a reader that resolved the link just before the swap can
    still open its files); older ones, and folders of builds that died, are removed.
    """
    versions = target.with_name(f".{target.name}.versions")
    versions.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%dT%H%M%S-"), dir=versions))
    staging.chmod(0o755)  # mkdtemp's 0700 would hide the files from readers running as other users
    try:
        build(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    for path in (*staging.rglob("*"), staging, versions):
        _fsync(path)
    previous = target.resolve() if target.is_symlink() else None
    if target.is_dir() and not target.is_symlink():  # a folder made by hand: it becomes the previous version
        previous = versions / f"{staging.name}-previous"
        os.replace(target, previous)
    link = target.with_name(f".{target.name}.link")
    link.unlink(missing_ok=True)
    link.symlink_to(staging.relative_to(target.parent))
    os.replace(link, target)
    _fsync(target.parent)
    for old in versions.iterdir():
        if old not in (staging, previous):
            shutil.rmtree(old, ignore_errors=True)
    return target


def export_marts(warehouse: Path, target: Path) -> dict[str, int]:
    """Every table of schema ``marts`` as ``<table>.parquet`` in ``target``, published atomically;
    says how many rows each holds. Reads the published warehouse, read-only."""
    counts: dict[str, int] = {}
    with connect(warehouse, read_only=True) as con:
        tables = [
            t
            for (t,) in con.execute(
                "select table_name from duckdb_tables() where schema_name = 'marts' order by table_name"
            ).fetchall()
        ]

        def write(folder: Path) -> None:
            for table in tables:
                # DuckDB's own Parquet writer, on every core and with no frame in between: 10^5
                # abstracts' marts in 1.5 s, against 2.7 s through Polars (the same columns and rows).
                target = folder / f"{table}.parquet"
                (counts[table],) = con.execute(
                    f"copy (select * from marts.{sql_identifier(table)}) to {sql_literal(str(target))}"
                    " (format parquet, compression zstd)"
                ).fetchone()

        publish_folder(target, write)
    return counts


def remove_stale_files(warehouse: Path) -> None:
    """A staging file a killed publish left behind is never read; it only takes disk space."""
    staging = warehouse.with_name(f".{warehouse.name}.publishing")
    if staging.exists():
        staging.unlink()
