"""The `paperhouse` command line: run, ui, query, check.

This module stays free of Dagster: `run` and `ui` hand over to the orchestration package
(imported only when needed), the other commands talk to DuckDB and the quality suites.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from paperhouse.bi.cli import add_superset_commands
from paperhouse.engines import ENGINES, selected_engine
from paperhouse.evaluation.cli import add_evaluation_commands, bench
from paperhouse.pipeline import load_runner
from paperhouse.settings import (
    DBT_PROJECT_DIR,
    DEFINITIONS_MODULE,
    Paths,
    dagster_home,
    resolve_paths,
    settings,
    variable,
    venv_executable,
)
from paperhouse.warehouse import locking, up_to_date
from paperhouse.warehouse.database import connect_reader

SUMMARY_SQL = """
    select
        (select count(*) from marts.papers) as papers,
        (select count(*) from marts.paper_sources where match_kind != 'canonical') as duplicates_merged,
        (select count(*) from marts.rejected_records) as records_rejected,
        (select count(*) from marts.terms) as terms,
        (select count(*) from marts.topics where level = 1) as topics
"""
# How the run read the folder, and that every paragraph read landed somewhere.
INTAKE_SQL = """
    select
        (select count(*) from raw.seed_files) as files,
        (select count(*) from raw.seed_files where status = 'parsed') as parsed,
        (select count(*) from raw.seed_files where status = 'reused') as unchanged,
        (select count(*) from raw.seed_files where status = 'unread') as unread,
        (select count(*) from raw.seed_files where status = 'companion') as companions,
        (select count(*) from raw.source_records where record_no is not null) as paragraphs,
        (select count(*) from marts.paper_sources) as accepted,
        (select count(*) from marts.rejected_records where record_no is not null) as rejected,
        (select count(*) from marts.paper_sources where repairs is not null) as repaired
"""
REASONS_SQL = """
    select regexp_replace(reason, ':.*', '') as reason, count(*) as n
    from marts.rejected_records group by 1 order by 2 desc, 1
"""
# `paperhouse run` exits with this when another run holds the warehouse (EX_TEMPFAIL: try again later).
EXIT_BUSY = 75


def _fail(message: str, code: int = 1) -> int:
    print(f"paperhouse: {message}", file=sys.stderr)
    return code


def cmd_run(args: argparse.Namespace) -> int:
    paths = resolve_paths(args.seeds, args.warehouse)
    if not paths.seeds_dir.is_dir():
        return _fail(f"seeds folder {paths.seeds_dir} does not exist")
    # Refuse a second run at once, before the seconds it takes to load Dagster.
    try:
        lease = locking.acquire(paths.run_lock, timeout=0)
    except locking.RunLockBusy as busy:
        return _fail(str(busy), EXIT_BUSY)
    options = {
        "engine": selected_engine(args.engine),
        "keyphrase_embeddings": args.keyphrase_embeddings,
    }
    try:
        started = time.perf_counter()
        inputs = up_to_date.run_inputs(paths, options)
        # A run meant to crash (failpoints) or to rebuild everything always runs.
        unchanged = not (args.full_refresh or settings().failpoints) and up_to_date.last_run(paths, inputs)
        if unchanged:
            return _print_unchanged(paths, unchanged, time.perf_counter() - started)
        run_all = load_runner()
        outcome = run_all(
            paths,
            log_level=args.log_level,
            full_refresh=args.full_refresh,
            engine=args.engine or "",
            keyphrase_embeddings=args.keyphrase_embeddings,
        )
        if outcome.success:
            up_to_date.record(paths, inputs, outcome.run_id)
        elapsed = time.perf_counter() - started
    finally:
        locking.release(lease)
    if not outcome.success:
        return _fail(f"run {outcome.run_id} failed, warehouse not published: {outcome.reason}")
    with connect_reader(paths.warehouse) as con:
        summary = _one_row(con, SUMMARY_SQL)
        intake = _one_row(con, INTAKE_SQL)
        reasons = con.execute(REASONS_SQL).fetchall()
    print(f"paperhouse run {outcome.run_id[:8]} finished in {elapsed:.1f} s ({selected_engine(args.engine)} engine)")
    refresh = ", full refresh" if args.full_refresh else ""
    # Companions (decisions beside a list) are shown only when there are any: text lists have none.
    companions = f", {intake['companions']} companion" if intake["companions"] else ""
    print(
        f"  {'files':<18} {intake['files']} ({intake['parsed']} parsed, {intake['unchanged']} unchanged,"
        f" {intake['unread']} unread{companions}{refresh})"
    )
    print(
        f"  {'paragraphs read':<18} {intake['paragraphs']} (= {intake['accepted']} accepted"
        f" + {intake['rejected']} rejected)"
    )
    print(f"  {'records repaired':<18} {intake['repaired']}")
    for name, value in summary.items():
        print(f"  {name.replace('_', ' '):<18} {value}")
    if reasons:
        print(f"  {'rejected because':<18} " + ", ".join(f"{reason} {n}" for reason, n in reasons))
    print(f"  {'checks passed':<18} {outcome.checks_passed}")
    print(f"  {'checks failed':<18} {len(outcome.checks_failed)}")
    for warning in outcome.checks_warned:
        print(f"  {'check warned':<18} {warning}")
    print(f"  {'warehouse':<18} {paths.warehouse}")
    print(f"  {'parquet':<18} {paths.marts_export}")
    print(f"  {'dashboard':<18} {paths.dashboard / 'index.html'}")
    print(f"  {'dbt log':<18} {outcome.log_file}")
    return 0


def _print_unchanged(paths: Paths, last: up_to_date.LastRun, elapsed: float) -> int:
    """What `paperhouse run` says when the folder, the settings and the code are those of the run
    that built the published warehouse: nothing to build, and what is there."""
    with connect_reader(paths.warehouse) as con:
        summary = _one_row(con, SUMMARY_SQL)
    print(f"paperhouse run: up to date in {elapsed:.1f} s, nothing to build")
    print(
        f"  the folder, the settings and the code are those of run {last.run_id[:8]} ({last.finished}),"
        " which built the published warehouse; --full-refresh builds it again"
    )
    for name, value in summary.items():
        print(f"  {name.replace('_', ' '):<18} {value}")
    print(f"  {'warehouse':<18} {paths.warehouse}")
    print(f"  {'parquet':<18} {paths.marts_export}")
    print(f"  {'dashboard':<18} {paths.dashboard / 'index.html'}")
    return 0


def _one_row(con: duckdb.DuckDBPyConnection, sql: str) -> dict:
    cursor = con.execute(sql)
    return dict(zip([d[0] for d in cursor.description], cursor.fetchone(), strict=True))


def cmd_ui(args: argparse.Namespace) -> int:
    home = dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    command = [venv_executable("dagster"), "dev", "-m", DEFINITIONS_MODULE, "-h", args.host, "-p", str(args.port)]
    return subprocess.call(command, env=os.environ | {"DAGSTER_HOME": str(home)})


def cmd_query(args: argparse.Namespace) -> int:
    paths = resolve_paths(warehouse=args.warehouse)
    try:
        with connect_reader(paths.warehouse) as con:
            cursor = con.execute(args.sql)
            if cursor.description is None:
                return 0
            columns = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
    except FileNotFoundError as error:
        return _fail(str(error))
    except duckdb.Error as error:
        return _fail(str(error).splitlines()[0])
    _print_rows(columns, rows, args.format)
    return 0


def _print_rows(columns: list[str], rows: list[tuple], fmt: str) -> None:
    if fmt == "json":
        print(
            json.dumps(
                [dict(zip(columns, row, strict=True)) for row in rows], default=str, ensure_ascii=False, indent=2
            )
        )
    elif fmt == "csv":
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    else:
        cells = [[("" if v is None else str(v)) for v in row] for row in rows]
        widths = [min(60, max([len(c)] + [len(r[i]) for r in cells])) for i, c in enumerate(columns)]
        line = lambda values: " | ".join(v[:w].ljust(w) for v, w in zip(values, widths, strict=True))  # noqa: E731
        print(line(columns))
        print("-+-".join("-" * w for w in widths))
        for row in cells:
            print(line(row))
        print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")


def cmd_check(args: argparse.Namespace) -> int:
    from paperhouse.quality.validation import validate_warehouse

    paths = resolve_paths(warehouse=args.warehouse)
    try:
        with connect_reader(paths.warehouse) as con:
            results = validate_warehouse(con)
    except FileNotFoundError as error:
        return _fail(str(error))
    for result in results:
        print(f"{'PASS' if result.success else 'FAIL'}  {result.suite}  ({len(result.outcomes)} expectations)")
        for outcome in result.failures:
            column = f" on {outcome.column}" if outcome.column else ""
            print(f"      {outcome.expectation}{column}: observed {outcome.observed}")
    failed = [r.suite for r in results if not r.success]
    if failed:
        return _fail(f"{len(failed)} of {len(results)} suites failed: {', '.join(failed)}")
    print(f"all {len(results)} suites passed")
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    """The dbt docs site of the warehouse as one static HTML file, generated offline.

    dbt reads a private copy of the published warehouse: never the build database, which a run
    may be writing (DuckDB allows one writer, so docs would block the run or be blocked by it).
    """
    paths = resolve_paths(warehouse=args.warehouse)
    if not paths.warehouse.exists():
        return _fail(f"no warehouse at {paths.warehouse}: run `paperhouse run` first")
    target = paths.build_dir / "docs"
    with tempfile.TemporaryDirectory(prefix="paperhouse-docs-") as scratch:
        # Same file name: DuckDB names the database after it, and dbt's catalog refers to that name.
        copy = Path(scratch) / paths.warehouse.name
        shutil.copyfile(paths.warehouse, copy)
        database = json.dumps({"database_path": str(copy)})
        code = subprocess.call(
            [
                venv_executable("dbt"),
                "docs",
                "generate",
                "--static",
                "--quiet",
                "--profiles-dir",
                str(DBT_PROJECT_DIR),
                "--target-path",
                str(target),
                "--vars",
                database,
            ],
            cwd=DBT_PROJECT_DIR,
        )
    if code:
        return _fail("dbt docs generate failed", code)
    print(f"dbt docs: {target / 'static_index.html'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="paperhouse", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="materialise every asset and check through Dagster")
    run.add_argument("--seeds", help="folder of *.txt lists (default: $PAPERHOUSE_SEEDS_DIR or seeds)")
    run.add_argument("--warehouse", help="warehouse file (default: $PAPERHOUSE_WAREHOUSE or data/paperhouse.duckdb)")
    run.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="Dagster's console log level (default: warning)",
    )
    run.add_argument(
        "--full-refresh",
        action="store_true",
        help="build even when up to date, parsing every file again (paper ids are kept)",
    )
    run.add_argument(
        "--engine",
        choices=ENGINES,
        help=f"where the stages compute and dbt builds: duckdb (this process) or spark (docs/spark.md; the master "
        f"from $PAPERHOUSE_SPARK_MASTER, local[2] by default); default: ${variable('engine')}, then duckdb",
    )
    run.add_argument(
        "--keyphrase-embeddings",
        action=argparse.BooleanOptionalAction,
        help="rank each paper's terms and own noun phrases (marts.paper_keyphrases) with a packaged "
        "sentence-embedding model too (slow; docs/evaluation.md); "
        f"default: ${variable('keyphrase_embeddings')}=1, else off",
    )
    run.set_defaults(handler=cmd_run)

    ui = commands.add_parser("ui", help="start the Dagster UI")
    ui.add_argument("--port", type=int, default=3000)
    ui.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    ui.set_defaults(handler=cmd_ui)

    query = commands.add_parser("query", help="run SQL read-only against the warehouse")
    query.add_argument("sql")
    query.add_argument("--warehouse")
    query.add_argument("--format", choices=["table", "csv", "json"], default="table")
    query.set_defaults(handler=cmd_query)

    check = commands.add_parser("check", help="run the Great Expectations suites against the warehouse")
    check.add_argument("--warehouse")
    check.set_defaults(handler=cmd_check)

    docs = commands.add_parser("docs", help="generate the dbt docs site of the warehouse (offline, one HTML file)")
    docs.add_argument("--warehouse")
    docs.set_defaults(handler=cmd_docs)

    add_superset_commands(commands)
    add_evaluation_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:  # its own parser: the benchmark runs itself in child processes
        return bench(argv[1:])
    args = build_parser().parse_args(argv)
    return args.handler(args)


def console() -> None:
    """The ``paperhouse`` command: ``main``, then a prompt exit."""
    code = main()
    # Without this, the interpreter's last garbage collection walks every object Dagster, dbt and
    # Polars left behind (1.5 s after a run) only for the process's memory to be freed anyway.
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    console()
