"""Before a run writes, the build database is checked, and recovered from the published warehouse
when a killed run (or a torn disk write) left it unusable: the registry and cache survive."""

import subprocess
import sys
import threading

import duckdb
import polars as pl
import pytest

from paperhouse.warehouse.database import ROW_GROUP_ROWS, connect, registered
from paperhouse.warehouse.publishing import BuildDatabaseLocked, prepare_build_database


@pytest.fixture
def files(tmp_path):
    build = tmp_path / ".paperhouse.duckdb.build" / "paperhouse.duckdb"
    warehouse = tmp_path / "paperhouse.duckdb"
    return build, warehouse


def publish_a_warehouse(warehouse, registry_rows: int = 5000) -> None:
    with duckdb.connect(str(warehouse)) as con:
        con.execute("create schema raw; create schema marts")
        con.execute(
            f"create table raw.paper_id_registry as select md5(range::varchar) as text_hash,"
            f" 'p_' || left(md5(range::varchar), 16) as paper_id from range({registry_rows})"
        )
        con.execute("create table marts.papers as select paper_id from raw.paper_id_registry")


def registry_rows(database) -> int:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute("select count(*) from raw.paper_id_registry").fetchone()[0]


def test_first_run_starts_empty(files):
    build, warehouse = files
    assert prepare_build_database(build, warehouse) == "new"


def test_a_healthy_build_database_is_used_as_it_is(files):
    build, warehouse = files
    build.parent.mkdir()
    publish_a_warehouse(build)
    assert prepare_build_database(build, warehouse) == "ok"


def test_a_lost_build_database_comes_back_from_the_published_warehouse(files):
    build, warehouse = files
    publish_a_warehouse(warehouse)
    assert prepare_build_database(build, warehouse) == "build database missing: restored from the published warehouse"
    assert registry_rows(build) == 5000  # paper ids survive


@pytest.mark.parametrize("damage", ["truncated", "overwritten header", "garbage"])
def test_a_damaged_build_database_is_moved_aside_and_restored(files, damage):
    build, warehouse = files
    publish_a_warehouse(warehouse)
    build.parent.mkdir()
    publish_a_warehouse(build, registry_rows=200_000)
    size = build.stat().st_size
    with open(build, "r+b") as handle:
        if damage == "truncated":
            handle.truncate(size // 2)
        elif damage == "overwritten header":
            handle.seek(100)
            handle.write(b"\xff" * 20_000)
        else:
            handle.truncate(0)
            handle.write(b"not a database at all\n" * 1000)
    status = prepare_build_database(build, warehouse)
    assert status.startswith("build database damaged") and status.endswith("restored from the published warehouse")
    assert registry_rows(build) == 5000
    assert build.with_name(build.name + ".damaged").exists()  # kept for a post-mortem


def test_a_damaged_build_database_without_a_published_warehouse_starts_empty(files):
    build, warehouse = files
    build.parent.mkdir()
    build.write_bytes(b"torn" * 4096)
    status = prepare_build_database(build, warehouse)
    assert status.startswith("build database damaged") and status.endswith("starting from an empty one")
    assert not build.exists() and build.with_name(build.name + ".damaged").exists()


HOLD_OPEN = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
print("open", flush=True)
sys.stdin.readline()
con.close()
"""


def test_a_process_left_holding_the_build_database_is_waited_for(files):
    """A dbt orphaned by a killed run keeps the file open for a moment: wait, do not fail, do not
    treat it as damage."""
    build, warehouse = files
    build.parent.mkdir()
    publish_a_warehouse(build)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_OPEN, str(build)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(BuildDatabaseLocked, match="held open by another process"):
            prepare_build_database(build, warehouse, lock_wait=1)
        release = threading.Timer(1.5, lambda: (holder.stdin.write("\n"), holder.stdin.flush()))
        release.start()
        status = prepare_build_database(build, warehouse, lock_wait=60)
        assert status.startswith("ok (waited")
        assert not build.with_name(build.name + ".damaged").exists()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("name", ["paperhouse", "it's", 'the "best"; drop table numbers; --'])
def test_writers_open_the_build_database_under_its_own_name_with_smaller_row_groups(tmp_path, name):
    # Appends of a row group or more reach the file as they come: a folder of 100,000 records no
    # longer waits for a one-thread checkpoint of the write-ahead log when the connection closes.
    database = tmp_path / f"{name}.duckdb"
    with connect(database) as con:
        con.execute("create table numbers as select range as n from range(?)", [ROW_GROUP_ROWS + 1])
        assert con.execute("select current_database()").fetchone()[0] == name
    with connect(database, read_only=True) as con:
        row_groups = con.execute("select count(distinct row_group_id) from pragma_storage_info('numbers')").fetchone()[
            0
        ]
        assert row_groups == 2
        assert con.execute("select count(*) from numbers").fetchone()[0] == ROW_GROUP_ROWS + 1


class _ArrowRecorder:
    """A DuckDB connection that keeps what is registered."""

    def __init__(self):
        self.con = duckdb.connect()

    def register(self, name, table):
        self.table = table
        self.con.register(name, table)

    def __getattr__(self, name):
        return getattr(self.con, name)


def test_frames_reach_duckdb_in_batches_of_a_row_group_so_every_core_writes():
    frame = pl.DataFrame({"n": range(2 * ROW_GROUP_ROWS + 5)}).rechunk()  # one chunk, as a sort leaves it
    recorder = _ArrowRecorder()
    with registered(recorder, "frame", frame):
        batches = recorder.table.to_batches()
    assert [batch.num_rows for batch in batches] == [ROW_GROUP_ROWS, ROW_GROUP_ROWS, 5]
    assert pl.from_arrow(recorder.table).equals(frame)


def test_a_write_that_fails_inside_a_transaction_raises_its_own_error():
    """A frame is scanned unordered while it is registered; putting the order back must not hide
    the failure of the write that aborted the transaction."""
    con = duckdb.connect()
    con.execute("create table papers (paper_id integer primary key)")
    con.execute("insert into papers values (1)")
    con.begin()
    with pytest.raises(duckdb.ConstraintException), registered(con, "incoming", pl.DataFrame({"paper_id": [1]})):
        con.execute("insert into papers select * from incoming")
    con.rollback()
    assert con.execute("select count(*) from papers").fetchone()[0] == 1
