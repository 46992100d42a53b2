"""Dagster's SQLite event log (``dagster.yaml``), each file opened once per process, not per statement.

Dagster's ``SqliteEventLogStorage`` keeps one SQLite file per run, where the webserver watches
for the run's new events, and an index file of asset and check events. For every statement it
creates a SQLAlchemy engine, opens the file, commits, closes it and disposes of the engine, and a
run stores each of its ~480 events (most of them dbt's tests as asset check evaluations and
Dagster's step outputs) with one to four such statements: 1,839 engines in one build of the
bundled seeds, each compiling its insert again. Closing the last connection to a file in WAL
mode also checkpoints it. That was 6.7-8.0 s of a 17-21 s `paperhouse run` of the seeds,
measured on a slow hour of this machine.

Here each file keeps its engine and one open connection for the life of the process, and a
commit appends to the file's write-ahead log without waiting for the disk (``synchronous =
NORMAL``, SQLite's advice for WAL: a crash of the machine may lose the last events, never the
file). Dagster's webserver learns of a run's new events from the run's ``.db`` changing, which
only a checkpoint does; the webserver here also watches the run's write-ahead log, so a live
run streams to the UI without a checkpoint after every event. A seeds run's 477 events were
stored in 1.45-1.8 s with every file open and checkpointed after each use, then in 0.93-1.21 s
against 1.64-2.11 s (alternately, one hour) without the checkpoints and syncs.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from contextlib import contextmanager
from typing import Iterator

from dagster import Field, StringSource
from dagster._core.storage.event_log import SqliteEventLogStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorageWatchdog
from dagster._core.storage.sql import create_engine
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import QueuePool
from watchdog.events import FileSystemEvent
from watchdog.observers import Observer

from paperhouse.settings import dagster_home

# Engines (each with its connection) kept, the least recently used dropped first: the index, the
# run being written and the runs being watched. The webserver reads any number of runs; an engine
# per run ever shown would only grow.
ENGINES_KEPT = 8


class CachedEngineSqliteEventLogStorage(SqliteEventLogStorage):
    """``SqliteEventLogStorage`` with an engine and an open connection per file.

    Without ``base_dir`` in ``dagster.yaml`` the files are where Dagster's default storage keeps
    them, ``history/runs`` in the instance's folder, so the history of runs stored before stays
    readable. A storage class is not told that folder: it is ``$DAGSTER_HOME``, else the
    project's ``.dagster`` (a `dagster` command run without DAGSTER_HOME makes a temporary
    instance, and passes this configuration, not a folder, to the processes it starts).
    """

    def __init__(self, base_dir: str, inst_data=None) -> None:
        self._engines: OrderedDict[str, Engine] = OrderedDict()  # before Dagster's __init__, which connects
        self._engines_pid = os.getpid()
        self._tables_seen: set[str] = set()
        super().__init__(base_dir, inst_data)

    @classmethod
    def config_type(cls) -> dict:
        return {"base_dir": Field(StringSource, is_required=False)}

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> CachedEngineSqliteEventLogStorage:
        base_dir = config_value.get("base_dir") or str(dagster_home() / "history" / "runs")
        return cls(base_dir, inst_data=inst_data)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn:
                with conn.begin():
                    yield conn

    def watch(self, run_id: str, cursor: str | None, callback) -> None:
        """Dagster's watch of a run's new events, on the run's write-ahead log as well as its file."""
        if not self._obs:
            self._obs = Observer()
            self._obs.start()
        handler = _RunLogWatchdog(self, run_id, callback, cursor)
        self._watchers[run_id][callback] = (handler, self._obs.schedule(handler, self._base_dir, recursive=True))

    def has_table(self, table_name: str) -> bool:
        """Asked before every asset event's tags and check result are stored, and Dagster's answer
        opens the index file each time. Migrations add tables and nothing drops one: a yes is kept."""
        if table_name not in self._tables_seen and super().has_table(table_name):
            self._tables_seen.add(table_name)
        return table_name in self._tables_seen

    def dispose(self) -> None:
        super().dispose()
        self._dispose_engines(close=True)

    def _engine(self, shard: str) -> Engine:
        if self._engines_pid != os.getpid():
            # A forked process must not use its parent's open connections: it opens its own.
            self._dispose_engines(close=False)
            self._engines_pid = os.getpid()
        if shard in self._engines:
            self._engines.move_to_end(shard)
            return self._engines[shard]
        if len(self._engines) >= ENGINES_KEPT:
            self._engines.popitem(last=False)[1].dispose()
        engine = create_engine(
            self.conn_string_for_shard(shard), poolclass=QueuePool, pool_size=1,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS},
        )
        event.listen(engine, "connect", _commit_without_waiting_for_the_disk)
        self._engines[shard] = engine
        return engine

    def _dispose_engines(self, close: bool) -> None:
        for engine in self._engines.values():
            engine.dispose(close=close)
        self._engines.clear()


def _commit_without_waiting_for_the_disk(dbapi_connection, _record) -> None:
    dbapi_connection.execute("pragma synchronous = normal")


class _RunLogWatchdog(SqliteEventLogStorageWatchdog):
    """Reads a run's new events when its file or its write-ahead log changes."""

    @property
    def patterns(self) -> list[str]:
        return [self._log_path, f"{self._log_path}-wal"]

    def on_modified(self, event: FileSystemEvent) -> None:
        self._process_log()
