"""Fault injection: runs killed with SIGKILL at each stage, readers during runs, two runs at once,
a damaged build database, and incremental changes to the folder, against real `paperhouse run`
processes and one warehouse.

The campaign (one module fixture, the expensive part) runs, in order:

1. two `paperhouse run` started at the same moment: one builds, the other is refused;
2. a second run on unchanged input: up to date, nothing built;
3. a change to the folder (a file added, one changed, one removed, a revision, a paper that
   bridges two others, bad files), then a run killed by SIGKILL before its ingest commits;
4. the build database torn in half, then a run that recovers it and is killed in the middle
   of `dbt build` (dbt itself is left running, orphaned);
5. a run that must succeed and publish the new folder, with `paperhouse query` called during it.

A reader process hammers the published warehouse all along (a new read-only connection per
read, each read checked for consistency), and another keeps one connection open throughout, as
a BI tool does. The tests below check what each step left behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl
import pytest
from corpus import REPO, SEEDS, seed_abstracts

from paperhouse.ingest.parse_cache import read_records

ABSTRACTS = seed_abstracts()
# A paper no bundled list holds; its two overlapping halves stay two papers until it arrives whole.
BRIDGE = (
    "Cellular automata on irregular meshes model how wildfires spread across mountain terrain, but "
    "calibrating their transition rules against satellite burn scars has required hand tuning for every "
    "region. We learn the rules instead with a differentiable relaxation of the automaton, trained end to "
    "end on twenty years of fire perimeters from three continents. The learned automaton reproduces "
    "observed spread rates within eleven percent, transfers to unseen regions after a single fine tuning "
    "season, and runs four hundred times faster than the physics based simulators that fire agencies "
    "deploy today. Ablations show that wind aligned neighbourhoods and fuel moisture memory matter most, "
    "while slope enters almost linearly. We release the meshes, the perimeters and a browser demo so that "
    "emergency planners can explore counterfactual ignition scenarios interactively."
)
BRIDGE_WORDS = BRIDGE.split()
FIRST_HALF = " ".join(BRIDGE_WORDS[:70])
SECOND_HALF = " ".join(BRIDGE_WORDS[-70:])
NEW_PAPER = (
    "Retrieval-augmented generation grounds language model answers in documents, but retrievers trained on "
    "web text miss domain terminology. We present a lightweight adapter that rewrites queries with a glossary "
    "mined from the target corpus, improving recall on three biomedical benchmarks without retraining the retriever."
)
REVISION_SUFFIX = " We release the code, the trained models and every evaluation script."

CONSISTENCY_SQL = """
    select
        (select count(*) from marts.papers) as papers,
        (select count(distinct paper_id) from marts.paper_sources) as papers_with_sources,
        (select count(*) from marts.paper_sources) as accepted,
        (select count(*) from marts.rejected_records where record_no is not null) as rejected_paragraphs,
        (select count(*) from raw.source_records where record_no is not null) as paragraphs_read,
        (select count(*) from marts.paper_terms) as paper_terms,
        (select count(*) from marts.topics) as topics
"""

# A reader of the published warehouse while runs go on: "fresh" opens it read-only again for every
# read (as `paperhouse query` does); "held" keeps one connection open all along (as a BI tool does).
# Two processes: DuckDB shares one database per path within a process, so a held connection would
# also pin what the fresh ones see. Each read is checked for consistency; the tally goes to JSON,
# and after each read, how many there were and the last version read to <out>.progress (which the
# campaign waits on).
READER = """
import json, os, sys, time
import duckdb
mode, warehouse, stop, out, sql = sys.argv[1:6]
tally = {"reads": 0, "errors": [], "inconsistent": [], "versions": {}}
held = None
def progress(version):
    with open(out + ".progress.new", "w") as handle:
        json.dump({"reads": tally["reads"], "last": version}, handle)
    os.replace(out + ".progress.new", out + ".progress")
while not os.path.exists(stop):
    if os.path.exists(warehouse):
        try:
            if mode == "fresh":
                con = duckdb.connect(warehouse, read_only=True)
                try:
                    v = con.execute(sql).fetchone()
                finally:
                    con.close()
            else:
                held = held or duckdb.connect(warehouse, read_only=True)
                v = held.execute(sql).fetchone()
            tally["reads"] += 1
            tally.setdefault("first_read", time.time())
            tally["last_read"] = time.time()
            tally["versions"][repr(v)] = tally["versions"].get(repr(v), 0) + 1
            papers, with_sources, accepted, rejected, read = v[:5]
            if papers != with_sources or accepted + rejected != read:
                tally["inconsistent"].append(repr(v))
            progress(repr(v))
        except Exception as error:
            tally["errors"].append(repr(error)[:300])
    time.sleep(0.3 if mode == "fresh" else 1.0)  # a pace: enough reads, without starving the runs of CPU
json.dump(tally, open(out, "w"))
"""


def start_readers(root: Path, warehouse: Path) -> tuple[Path, dict[str, subprocess.Popen]]:
    stop = root / "readers.stop"
    return stop, {
        mode: subprocess.Popen(
            [
                sys.executable,
                "-c",
                READER,
                mode,
                str(warehouse),
                str(stop),
                str(root / f"reader-{mode}.json"),
                CONSISTENCY_SQL,
            ]
        )
        for mode in ("fresh", "held")
    }


def reader_progress(root: Path, mode: str) -> dict:
    """How many reads the reader made so far, and the version it read last ({} before its first read)."""
    try:
        return json.loads((root / f"reader-{mode}.json.progress").read_text())
    except FileNotFoundError:
        return {}


def wait_until(condition, what: str, timeout: float = 600) -> None:
    """Until ``condition()`` holds, checked every 0.1 s; ``timeout`` is a safety net, not a wait."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still not so after {timeout} s")
        time.sleep(0.1)


def wait_until_read(root: Path, readers: dict[str, subprocess.Popen], version: tuple) -> None:
    """Until the fresh reader has read ``version`` (what is published now), and the held one read again."""
    reads_now = {mode: reader_progress(root, mode).get("reads", 0) for mode in readers}

    def has_read(mode: str) -> bool:
        assert readers[mode].poll() is None, f"the {mode} reader ended"
        progress = reader_progress(root, mode)
        return progress.get("last") == repr(version) if mode == "fresh" else progress.get("reads", 0) > reads_now[mode]

    for mode in readers:
        wait_until(lambda mode=mode: has_read(mode), f"the {mode} reader reads {version}")


def stop_readers(root: Path, stop: Path, readers: dict[str, subprocess.Popen]) -> dict[str, dict]:
    stop.touch()
    for reader in readers.values():
        reader.wait(timeout=300)
    return {mode: json.loads((root / f"reader-{mode}.json").read_text()) for mode in readers}


def mart_fingerprint(warehouse: Path) -> dict[str, tuple[int, str]]:
    """Rows and a content hash of every mart (rows in a canonical order: the same rows, the same hash),
    but the check history, which gains every run's checks by design."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        tables = [
            t
            for (t,) in con.execute(
                "select table_name from duckdb_tables() where schema_name = 'marts' and table_name <> 'quality_runs'"
                " order by 1"
            ).fetchall()
        ]
        fingerprint = {}
        for table in tables:
            rows = con.execute(f'select * from marts."{table}" order by all').fetchall()
            fingerprint[table] = (len(rows), hashlib.sha256(repr(rows).encode()).hexdigest())
    return fingerprint


def consistency(warehouse: Path) -> tuple:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute(CONSISTENCY_SQL).fetchone()


def papers(warehouse: Path) -> dict[str, str]:
    """paper_id -> abstract."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return dict(con.execute("select paper_id, abstract from marts.papers").fetchall())


@dataclass
class Campaign:
    root: Path
    seeds: Path
    warehouse: Path
    env: dict
    log: list[dict] = field(default_factory=list)  # one entry per process started: what it was, what happened
    observed: dict = field(default_factory=dict)
    groups: list[int] = field(default_factory=list)

    def start(self, name: str, *args: str, failpoints: str = "") -> subprocess.Popen:
        env = {**self.env, "PAPERHOUSE_FAILPOINTS": failpoints} if failpoints else self.env
        # The child writes its own copy of the file's descriptor; this process needs none.
        with open(self.root / f"{name}.out", "w") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "paperhouse.cli", *args],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: the fixture can clean up orphans at the end
            )
        process.name, process.started = name, time.monotonic()
        self.groups.append(process.pid)
        return process

    def finish(self, *processes: subprocess.Popen, timeout: float = 600) -> list[dict]:
        """Wait for the processes together, noting when each one ends."""
        ended: dict[int, float] = {}
        deadline = time.monotonic() + timeout
        while len(ended) < len(processes):
            for process in processes:
                if process.pid not in ended and process.poll() is not None:
                    ended[process.pid] = time.monotonic()
            if time.monotonic() > deadline:
                raise TimeoutError([p.name for p in processes if p.pid not in ended])
            time.sleep(0.1)
        entries = []
        for process in processes:
            entries.append(
                {
                    "name": process.name,
                    "returncode": process.returncode,
                    "seconds": round(ended[process.pid] - process.started, 1),
                    "output": (self.root / f"{process.name}.out").read_text(),
                }
            )
        self.log.extend(entries)
        return entries

    def run(self, name: str, *args: str, failpoints: str = "") -> dict:
        return self.finish(self.start(name, "run", *args, failpoints=failpoints))[0]

    def query(self, sql: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "paperhouse.cli", "query", sql, "--format", "json"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )


def _processes() -> list[tuple[int, list[str]]]:
    """Every live process as (pid, the fields of /proc/<pid>/stat after the command name)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((int(entry.name), (entry / "stat").read_text().rsplit(")", 1)[1].split()))
            except OSError:
                continue
    return found


def _group_alive(pgid: int) -> list[int]:
    return [member for member, fields in _processes() if int(fields[2]) == pgid and fields[0] != "Z"]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Campaign:
    root = tmp_path_factory.mktemp("faults")
    seeds = root / "seeds"
    shutil.copytree(SEEDS, seeds)
    (seeds / "fragments.txt").write_text(f"Workshop 2025\n\n{FIRST_HALF}\n\n{SECOND_HALF}\n")
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").symlink_to(REPO / "dagster.yaml")
    warehouse = root / "out" / "paperhouse.duckdb"
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "PAPERHOUSE_SEEDS_DIR": str(seeds),
        "PAPERHOUSE_WAREHOUSE": str(warehouse),
    }
    env.pop("PAPERHOUSE_FAILPOINTS", None)
    c = Campaign(root=root, seeds=seeds, warehouse=warehouse, env=env)

    stop, readers = start_readers(root, warehouse)
    try:
        # 1. Two runs started at the same moment.
        both = [c.start("first-a", "run"), c.start("first-b", "run")]
        c.observed["simultaneous"] = c.finish(*both)
        c.observed["v1"] = (mart_fingerprint(warehouse), consistency(warehouse), papers(warehouse))
        c.observed["v1_file"] = warehouse.stat().st_ino

        # 2. Unchanged input again, once both readers read the first version (the held one looks
        # for it once a second): up to date.
        wait_until_read(root, readers, c.observed["v1"][1])
        c.observed["second_run_started"] = time.time()
        c.observed["unchanged"] = c.run("unchanged")
        c.observed["v2"] = (mart_fingerprint(warehouse), consistency(warehouse), papers(warehouse))
        c.observed["v2_file"] = warehouse.stat().st_ino

        # 3. The folder changes; a run dies before its ingest commits.
        files = sorted(seeds.glob("0*.txt"))
        c.observed["removed_file"] = files[3].name
        c.observed["removed_paragraphs"] = read_records(seeds).filter(pl.col("source_file") == files[3].name).height
        files[3].unlink()
        files[1].write_text(files[1].read_text().rstrip("\n") + f"\n\n{NEW_PAPER}\n")
        c.observed["revised"] = ABSTRACTS[2]
        (seeds / "revisions.txt").write_text(f"Workshop 2025\n\n{ABSTRACTS[2]}{REVISION_SUFFIX}\n\n{BRIDGE}\n")
        (seeds / "scan.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 64)
        (seeds / "loop.txt").symlink_to("loop.txt")
        c.observed["killed_in_ingest"] = c.run("killed-in-ingest", failpoints="ingest.before_commit")
        c.observed["after_kill_1"] = (mart_fingerprint(warehouse), consistency(warehouse))

        # 4. The build database is torn in half; the next run recovers it and dies inside dbt build.
        build = warehouse.parent / f".{warehouse.name}.build" / warehouse.name
        with open(build, "r+b") as handle:
            handle.truncate(build.stat().st_size // 2)
        # dbt runs inside the run's process: the kill lands while dbt has the build database open.
        killed = c.start("killed-in-dbt", "run", failpoints="dbt.event@10")
        c.observed["killed_in_dbt"] = c.finish(killed)[0]
        c.observed["orphans_after_kill"] = _group_alive(killed.pid)
        c.observed["after_kill_2"] = (mart_fingerprint(warehouse), consistency(warehouse))
        c.observed["damaged_file_kept"] = build.with_name(build.name + ".damaged").exists()

        # 5. The next run succeeds and publishes the folder as it is now, queried while it runs
        # (and a write attempted while it runs).
        c.observed["last_run_started"] = time.time()
        recovery = c.start("recovery", "run")
        queries = []
        while recovery.poll() is None:
            queries.append(c.query("select count(*) as papers from marts.papers"))
            if len(queries) % 4 == 1:
                queries.append(c.query("drop table marts.papers"))
            with contextlib.suppress(subprocess.TimeoutExpired):
                recovery.wait(timeout=1)  # a pace between queries, over as soon as the run is
        c.observed["recovery"] = c.finish(recovery)[0]
        c.observed["queries_during_run"] = queries
        c.observed["v3"] = (mart_fingerprint(warehouse), consistency(warehouse), papers(warehouse))
        with duckdb.connect(str(warehouse), read_only=True) as con:
            c.observed["aliases"] = con.execute("select alias_id, paper_id from marts.paper_id_aliases").fetchall()
            c.observed["rejected"] = dict(
                con.execute("select source_file, reason from marts.rejected_records where record_no is null").fetchall()
            )
            c.observed["seed_files"] = dict(con.execute("select source_file, status from raw.seed_files").fetchall())
        wait_until_read(root, readers, c.observed["v3"][1])  # the reader reads the last version at least once
    finally:
        c.observed["readers"] = stop_readers(root, stop, readers)
        for pgid in c.groups:  # nothing a killed run left behind survives the test
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
    from dagster import DagsterInstance

    with pytest.MonkeyPatch.context() as patch:  # the event log is found by DAGSTER_HOME (dagster.yaml)
        patch.setenv("DAGSTER_HOME", str(home))
        with DagsterInstance.from_config(str(home)) as instance:
            c.observed["dagster_runs"] = [run.status.value for run in instance.get_runs()]
    (root / "campaign.json").write_text(
        json.dumps(
            {
                "processes": [{k: v for k, v in e.items() if k != "output"} for e in c.log],
                "readers": {
                    mode: {k: v for k, v in t.items() if k != "versions"} for mode, t in c.observed["readers"].items()
                },
                "paperhouse_query_during_runs": {
                    "selects": sum(q.args[4].startswith("select") for q in c.observed.get("queries_during_run", [])),
                    "selects_failed": sum(
                        q.args[4].startswith("select") and q.returncode != 0
                        for q in c.observed.get("queries_during_run", [])
                    ),
                    "drops_refused": sum(
                        q.args[4].startswith("drop") and q.returncode != 0
                        for q in c.observed.get("queries_during_run", [])
                    ),
                },
            },
            indent=2,
        )
    )
    return c


pytestmark = pytest.mark.slow


def test_two_runs_started_at_once_one_builds_and_one_is_refused(campaign):
    outcomes = sorted(campaign.observed["simultaneous"], key=lambda e: e["returncode"])
    built, refused = outcomes
    assert built["returncode"] == 0, built["output"][-3000:]
    assert refused["returncode"] == 75
    assert "another run is already building this warehouse" in refused["output"]
    assert refused["seconds"] < 30  # refused at once, not after the other run
    _fingerprint, state, _ = campaign.observed["v1"]
    assert state[0] == 76 + 2  # the bundled papers and the two halves of BRIDGE, apart


def test_unchanged_input_is_up_to_date_and_builds_nothing(campaign):
    run = campaign.observed["unchanged"]
    assert run["returncode"] == 0, run["output"][-3000:]
    assert run["output"].startswith("paperhouse run: up to date"), run["output"][-3000:]
    assert campaign.observed["v2"][0] == campaign.observed["v1"][0]  # every mart, row for row
    assert campaign.observed["v2"][2] == campaign.observed["v1"][2]  # the same ids, the same abstracts
    assert campaign.observed["v2_file"] == campaign.observed["v1_file"]  # nothing published


def test_query_answers_during_a_run_and_never_writes(campaign):
    queries = campaign.observed["queries_during_run"]
    reads = [q for q in queries if q.args[4].startswith("select")]
    writes = [q for q in queries if q.args[4].startswith("drop")]
    assert len(reads) >= 5 and len(writes) >= 2
    for q in reads:
        assert q.returncode == 0, q.stderr
        assert json.loads(q.stdout)[0]["papers"] in {campaign.observed["v1"][1][0], campaign.observed["v3"][1][0]}
    for q in writes:
        assert q.returncode != 0 and "read-only" in q.stderr


def test_readers_never_fail_and_always_see_a_whole_version(campaign):
    fresh, held = campaign.observed["readers"]["fresh"], campaign.observed["readers"]["held"]
    for tally in (fresh, held):
        # The reader ran throughout the campaign: from before the second run to the last run.
        assert tally["first_read"] <= campaign.observed["second_run_started"]
        assert tally["last_read"] >= campaign.observed["last_run_started"]
        assert tally["errors"] == [] and tally["inconsistent"] == []
    published = {repr(campaign.observed[v][1]) for v in ("v1", "v2", "v3")}
    assert set(fresh["versions"]) == published  # the first publish, and the last one
    # The connection held open all along keeps reading the version it opened, undisturbed.
    assert set(held["versions"]) == {repr(campaign.observed["v1"][1])}


def test_a_run_killed_before_its_ingest_commits_leaves_the_warehouse_as_it_was(campaign):
    killed = campaign.observed["killed_in_ingest"]
    assert killed["returncode"] == -signal.SIGKILL
    assert campaign.observed["after_kill_1"] == campaign.observed["v2"][:2]


def test_a_run_killed_inside_dbt_after_recovering_a_torn_build_database(campaign):
    killed = campaign.observed["killed_in_dbt"]
    assert killed["returncode"] == -signal.SIGKILL
    assert campaign.observed["damaged_file_kept"]  # the torn file was moved aside, not used
    assert "restored from the published warehouse" in killed["output"]
    assert campaign.observed["after_kill_2"] == campaign.observed["v2"][:2]


def test_the_next_run_succeeds_and_reuses_what_the_killed_run_parsed(campaign):
    run = campaign.observed["recovery"]
    assert run["returncode"] == 0, run["output"][-3000:]
    # The killed run committed its parse of the new files; the recovery run parsed nothing.
    statuses = campaign.observed["seed_files"]
    assert statuses["revisions.txt"] == "reused" and statuses["loop.txt"] == "unread"
    assert "0 parsed" in run["output"]
    # No run is left marked as started: the killed ones were recorded as failed.
    runs = campaign.observed["dagster_runs"]
    # Two built (the first and this one; the unchanged run started no Dagster run), two killed.
    assert runs.count("SUCCESS") == 2 and runs.count("FAILURE") == 2 and "STARTED" not in runs


def test_the_warehouse_reflects_the_folder_as_it_is_now(campaign):
    before = campaign.observed["v2"][2]
    state = campaign.observed["v3"][1]
    papers_now, _, accepted, rejected, read = state[:5]
    assert accepted + rejected == read
    # Removed file: its papers are gone. Added: one new paper. The halves and BRIDGE: one paper.
    assert papers_now == len(before) - campaign.observed["removed_paragraphs"] + 1 - 1
    assert campaign.observed["rejected"] == {
        "scan.txt": "binary file: contains NUL bytes and is not UTF-16 text",
        "loop.txt": "not a file: symbolic link loop",
    }


def test_papers_keep_their_ids_and_a_revision_becomes_the_displayed_text(campaign):
    before, after = campaign.observed["v2"][2], campaign.observed["v3"][2]
    by_text_before = {abstract: paper_id for paper_id, abstract in before.items()}
    revised_id = by_text_before[campaign.observed["revised"]]
    assert after[revised_id] == campaign.observed["revised"] + REVISION_SUFFIX  # same id, better text
    kept = [pid for pid in before if pid in after]
    assert len(kept) == len(before) - campaign.observed["removed_paragraphs"] - 1  # minus one merged half
    unchanged = {pid: before[pid] for pid in kept if pid != revised_id and before[pid] not in (FIRST_HALF, SECOND_HALF)}
    assert all(after[pid] == abstract for pid, abstract in unchanged.items())
    new_ids = set(after) - set(before)
    assert [after[pid] for pid in new_ids] == [NEW_PAPER]


def test_two_papers_merged_by_a_bridging_version_keep_the_older_id_and_alias_the_other(campaign):
    before, after = campaign.observed["v2"][2], campaign.observed["v3"][2]
    first, second = (next(pid for pid, text in before.items() if text == half) for half in (FIRST_HALF, SECOND_HALF))
    kept, retired = sorted([first, second])  # same generation: the smaller id wins
    assert after[kept] == BRIDGE and retired not in after
    assert (retired, kept) in campaign.observed["aliases"]


def test_publish_killed_mid_copy_or_before_the_swap_leaves_the_warehouse_whole(tmp_path):
    """Publishing alone, killed at its two failpoints (cheap: no Dagster)."""
    build = tmp_path / "build" / "paperhouse.duckdb"
    warehouse = tmp_path / "paperhouse.duckdb"
    build.parent.mkdir()
    with duckdb.connect(str(warehouse)) as con:  # the published version
        con.execute("create schema marts; create table marts.papers as select range as paper_id from range(10)")
    with duckdb.connect(str(build)) as con:  # a new version, several MiB so the copy takes several chunks
        con.execute("create schema marts; create table marts.papers as select range as paper_id from range(20)")
        con.execute(
            "create table marts.blob as select md5(range::varchar) || md5((range + 1)::varchar) as x from range(200000)"
        )
    before = mart_fingerprint(warehouse)
    program = (
        "import sys; from pathlib import Path; from paperhouse.warehouse.publishing import publish; "
        "publish(Path(sys.argv[1]), Path(sys.argv[2]))"
    )
    staging = warehouse.with_name(f".{warehouse.name}.publishing")
    for point, copied in (("publish.copy_chunk@2", 2 << 20), ("publish.before_replace", None)):
        result = subprocess.run(
            [sys.executable, "-c", program, str(build), str(warehouse)],
            env={**os.environ, "PAPERHOUSE_FAILPOINTS": point},
            timeout=120,
        )
        assert result.returncode == -signal.SIGKILL, point
        # The half-done work is there, beside the warehouse, never in its place.
        assert staging.stat().st_size == (copied or build.stat().st_size) < 2 * build.stat().st_size
        assert mart_fingerprint(warehouse) == before
    result = subprocess.run([sys.executable, "-c", program, str(build), str(warehouse)], timeout=120)
    assert result.returncode == 0
    assert mart_fingerprint(warehouse) == mart_fingerprint(build) != before
    assert not staging.exists()


@pytest.mark.slow
def test_soak_runs_killed_at_random_moments(tmp_path):
    """One kill in CI, PAPERHOUSE_SOAK=N for N (about a minute each): runs SIGKILLed at random
    moments, the whole process group or the main process only (leaving dbt orphaned), a reader
    querying all along. After every kill the published warehouse is whole: the version before the
    change, or the one a clean run gives."""
    import random

    kills, rng = (
        int(os.environ.get("PAPERHOUSE_SOAK", "1")),
        random.Random(int(os.environ.get("PAPERHOUSE_SOAK_SEED", "0"))),
    )
    seeds = tmp_path / "seeds"
    shutil.copytree(SEEDS, seeds)
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").symlink_to(REPO / "dagster.yaml")
    warehouse = tmp_path / "out" / "paperhouse.duckdb"
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "PAPERHOUSE_SEEDS_DIR": str(seeds),
        "PAPERHOUSE_WAREHOUSE": str(warehouse),
    }
    c = Campaign(root=tmp_path, seeds=seeds, warehouse=warehouse, env=env)
    stop, readers = start_readers(tmp_path, warehouse)
    after_kills = []
    try:
        baseline = c.run("baseline")
        assert baseline["returncode"] == 0, baseline["output"][-3000:]
        before = mart_fingerprint(warehouse)
        (seeds / "added.txt").write_text(f"Workshop 2025\n\n{BRIDGE}\n\n{NEW_PAPER}\n")
        sorted(seeds.glob("0*.txt"))[0].unlink()
        for i in range(kills):
            process = c.start(f"kill-{i}", "run")
            delay, whole_group = rng.uniform(2, baseline["seconds"]), rng.random() < 0.5
            time.sleep(delay)
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL) if whole_group else process.kill()
            entry = c.finish(process)[0]
            entry.update(delay=round(delay, 1), whole_group=whole_group)
            after_kills.append((entry, mart_fingerprint(warehouse), consistency(warehouse)))
        final = c.run("final")
        assert final["returncode"] == 0, final["output"][-3000:]
        after = mart_fingerprint(warehouse)
        wait_until_read(tmp_path, readers, consistency(warehouse))  # the readers read the last version too
    finally:
        tallies = stop_readers(tmp_path, stop, readers)
        for pgid in c.groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
    report = [{k: e[k] for k in ("name", "returncode", "seconds", "delay", "whole_group")} for e, _, _ in after_kills]
    reads = {mode: (t["reads"], len(t["errors"]), len(t["inconsistent"])) for mode, t in tallies.items()}
    (tmp_path / "soak.json").write_text(json.dumps({"kills": report, "reads": reads}, indent=2))
    print(json.dumps(report), reads)
    for entry, fingerprint, state in after_kills:
        assert fingerprint in (before, after), entry
        assert state[0] == state[1] and state[2] + state[3] == state[4]
    for tally in tallies.values():
        assert tally["errors"] == [] and tally["inconsistent"] == []
