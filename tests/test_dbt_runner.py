"""The `worker` dbt runner: `paperhouse-dbt`, the dbt executable dagster-dbt starts, and the warm dbt
processes it hands commands to. Called here as dagster-dbt calls it (same arguments and environment),
on a two-model project with the real profile, so its `keep_open: true`, and the warm process letting
go of the database by ending, is what is tested."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from orchestration.warm_dbt import ADDRESS_FILE
from orchestration.warm_dbt import project as dbt_project
from orchestration.warm_dbt.worker import WarmDbt, warm_dbt
from paperhouse.settings import DBT_PROJECT_DIR, venv_executable

pytestmark = pytest.mark.slow  # dbt processes, warm and cold

PROJECT = """
name: tiny
version: "1.0.0"
config-version: 2
profile: paperhouse
models:
  tiny:
    +materialized: table
"""
MODELS = """
version: 2
models:
  - name: numbers
    columns:
      - name: n
        data_tests: [unique, not_null]
  - name: odd_numbers
    columns:
      - name: n
        data_tests:
          - accepted_values:
              arguments:
                values: [1, 3, 5, 7]
"""
SLOW_MODEL = "select sum(i) as total from range(50000000000) as t(i)"  # a minute of work
OPEN_FOR_WRITING = "import sys, duckdb; duckdb.connect(sys.argv[1]).close(); print('opened')"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(PROJECT)
    shutil.copy(DBT_PROJECT_DIR / "profiles.yml", root / "profiles.yml")
    (root / "models" / "numbers.sql").write_text("select unnest([1, 2, 3]) as n")
    (root / "models" / "odd_numbers.sql").write_text("select n from {{ ref('numbers') }} where n % 2 = 1")
    (root / "models" / "models.yml").write_text(MODELS)
    return root


@pytest.fixture
def warm(project, tmp_path):
    """Warm dbt for the tiny project, a warm process parsing for ``tiny.duckdb`` already."""
    warm = WarmDbt()
    warm.prepare(project, project / "target", "tiny.duckdb")
    yield warm
    warm.close()


def start_dbt(project: Path, database: Path, warm: WarmDbt | None) -> subprocess.Popen:
    """`paperhouse-dbt build` as dagster-dbt's DbtCliResource starts it."""
    target = project / "target"
    env = {
        **os.environ,
        "DBT_LOG_FORMAT": "json",
        "DBT_TARGET_PATH": str(target),
        "DBT_LOG_PATH": str(target),
        "DBT_PROFILES_DIR": str(project),
        "DBT_PROJECT_DIR": str(project),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    }
    return subprocess.Popen(
        [venv_executable("paperhouse-dbt"), *dbt_project.build_args(database)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=project,
    )  # fmt: skip


def build(project: Path, database: Path, warm: WarmDbt | None) -> tuple[int, bytes, int]:
    """(exit code, output, process id of the client) of a build of ``database``."""
    dbt = start_dbt(project, database, warm)
    output, _ = dbt.communicate(timeout=300)
    return dbt.returncode, output, dbt.pid


def results(output: bytes) -> list[tuple[str, str, str]]:
    """(event, node, status) of each result line of dbt's JSON log."""
    found = []
    for event in map(json.loads, output.decode().splitlines()):
        if event["info"]["name"] in {"LogModelResult", "LogTestResult"}:
            node = event["data"]["node_info"]
            found.append((event["info"]["name"], node["node_name"], node["node_status"]))
    return found


def pids(output: bytes) -> set[int]:
    return {json.loads(line)["info"]["pid"] for line in output.decode().splitlines()}


def test_a_command_runs_in_the_warm_process_which_ends_with_it(warm, project, tmp_path):
    waiting = warm.status()
    assert waiting["parses"] == 1  # parsed before the command came
    code, output, client = build(project, tmp_path / "tiny.duckdb", warm)
    assert code == 0, output.decode()[-3000:]
    found = results(output)
    assert ("LogModelResult", "numbers", "success") in found
    assert ("LogModelResult", "odd_numbers", "success") in found
    assert ("LogTestResult", "unique_numbers_n", "pass") in found
    assert len(found) == 5  # two models, three tests
    assert pids(output) == {waiting["pid"]} != {client}  # dbt ran in the warm process, not the client
    # It ran on the parse it made before (dbt's parse leaves its timings beside the manifest).
    assert (project / "target" / "warm_parse" / "perf_info.json").exists()
    assert not (project / "target" / "perf_info.json").exists()
    assert _gone(waiting["pid"])
    # The database was closed as the process ended: another process can open the file for writing.
    opened = subprocess.run([sys.executable, "-c", OPEN_FOR_WRITING, str(tmp_path / "tiny.duckdb")],
                            capture_output=True, text=True)  # fmt: skip
    assert opened.stdout.strip() == "opened", opened.stderr
    # The next command's warm process took over the socket, parsed for the same database.
    successor = warm.status()
    assert successor["pid"] != waiting["pid"] and successor["parses"] == 1


def test_each_command_gets_a_warm_process_of_its_own(warm, project, tmp_path):
    ran = []
    for _ in range(3):
        code, output, _client = build(project, tmp_path / "tiny.duckdb", warm)
        assert code == 0, output.decode()[-3000:]
        ran.append(pids(output))
    assert all(len(process) == 1 for process in ran) and len(set().union(*ran)) == 3


def test_after_the_last_command_no_warm_process_waits_for_another(warm, project, tmp_path):
    """The run's last dbt command starts no successor: it would import dbt and parse for nothing.
    A command that comes after all the same is run by its client, as without warm dbt."""
    warm.expect_last_command()
    code, output, _client = build(project, tmp_path / "tiny.duckdb", warm)
    assert code == 0, output.decode()[-3000:]
    assert not warm.listening
    assert not list((project / "target").glob("socket*")) and not list(warm.folder.iterdir())
    code, output, client = build(project, tmp_path / "tiny.duckdb", warm)
    assert code == 0, output.decode()[-3000:]
    assert pids(output) == {client}


def test_a_failing_test_exits_as_dbt_does_with_the_failure_in_its_output(warm, project, tmp_path):
    (project / "models" / "odd_numbers.sql").write_text("select n from {{ ref('numbers') }}")  # 2 is not odd
    code, output, _client = build(project, tmp_path / "tiny.duckdb", warm)
    assert code == 1
    assert ("LogTestResult", "accepted_values_odd_numbers_n__1__3__5__7", "fail") in results(output)


def test_a_changed_project_or_another_database_is_parsed_again(warm, project, tmp_path):
    assert build(project, tmp_path / "tiny.duckdb", warm)[0] == 0
    model = project / "models" / "numbers.sql"
    model.write_text("select unnest([1, 3, 5, 7]) as n")
    os.utime(model, (model.stat().st_mtime + 5,) * 2)
    # Another database name: dbt-duckdb names the database after the file, so its own parse.
    other = tmp_path / "other.duckdb"
    code, output, _client = build(project, other, warm)
    assert code == 0, output.decode()[-3000:]
    with duckdb.connect(str(other), read_only=True) as con:
        assert con.execute("select count(*) from main.odd_numbers").fetchone() == (4,)


def test_without_a_warm_process_the_client_runs_dbt_itself(project, tmp_path):
    code, output, client = build(project, tmp_path / "tiny.duckdb", warm=None)
    assert code == 0, output.decode()[-3000:]
    assert ("LogModelResult", "odd_numbers", "success") in results(output)
    assert pids(output) == {client}  # the client became dbt


def test_the_version_is_the_installed_dbts_without_starting_it():
    from importlib.metadata import version

    answer = subprocess.run(
        [venv_executable("paperhouse-dbt"), "--version"], capture_output=True, text=True, check=True
    )
    assert version("dbt-core") in answer.stdout


def test_a_warm_process_killed_mid_command_fails_the_command_instead_of_hanging(warm, project, tmp_path):
    (project / "models" / "slow.sql").write_text(SLOW_MODEL)
    dbt = start_dbt(project, tmp_path / "tiny.duckdb", warm)
    running = _wait_for_line(dbt, "slow")
    os.kill(running, signal.SIGKILL)
    dbt.communicate(timeout=300)
    assert dbt.returncode == 2
    assert _listens_soon(warm)  # the next command's warm process is there


def test_an_interrupted_command_takes_its_warm_process_down(warm, project, tmp_path):
    """What dagster-dbt does when a step is stopped: SIGINT to the dbt process. A dbt command in
    progress cannot be cancelled from outside, so the process running it goes."""
    (project / "models" / "slow.sql").write_text(SLOW_MODEL)
    dbt = start_dbt(project, tmp_path / "tiny.duckdb", warm)
    running = _wait_for_line(dbt, "slow")
    dbt.send_signal(signal.SIGINT)
    dbt.communicate(timeout=300)
    assert dbt.returncode == 128 + signal.SIGINT
    assert _gone(running)
    assert _listens_soon(warm)
    assert warm.status()["pid"] != running


def _listens_soon(warm) -> bool:
    """The next command's warm process was started before this one's command ran; on a busy
    machine it may still be starting: whether it listens once started (a safety net of 2 minutes)."""
    deadline = time.monotonic() + 120
    while not warm.listening and time.monotonic() < deadline:
        time.sleep(0.05)
    return warm.listening


def test_warm_processes_end_with_the_run(project, tmp_path):
    """A run killed with its warm process waiting: the warm process does not outlive it."""
    run = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom orchestration.warm_dbt.worker import warm_dbt\n"
         f"warm_dbt().prepare({str(project)!r}, {str(project / 'target')!r}, 'tiny.duckdb')\n"
         "print(warm_dbt().status()['pid'], flush=True)\ntime.sleep(600)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    waiting = int(run.stdout.readline())
    run.kill()
    run.wait()
    assert _gone(waiting)


def test_the_run_starts_a_warm_process_when_none_is_listening(monkeypatch, project):
    monkeypatch.setattr("orchestration.warm_dbt.worker._warm_dbt", None)
    environment = dict(os.environ)
    warm = warm_dbt()
    assert not warm.listening
    warm.prepare(project, project / "target", "tiny.duckdb")
    # The target folder names the socket for the commands on it; the environment stays as it was.
    assert (project / "target" / ADDRESS_FILE).read_text() == warm.address
    assert dict(os.environ) == environment
    first = warm.status()["pid"]
    warm.prepare(project, project / "target", "tiny.duckdb")  # one is listening: it is asked, not replaced
    assert warm.status()["pid"] == first
    warm.close()
    assert _gone(first)
    # A process that goes on (the UI's, a test's) closes between runs: its next run starts a new one.
    warm.prepare(project, project / "target", "tiny.duckdb")
    second = warm.status()["pid"]
    assert second != first
    warm.close()
    assert _gone(second)


def _wait_for_line(dbt: subprocess.Popen, text: str, timeout: float = 120.0) -> int:
    """Read the command's output up to a line mentioning ``text``; the id of the process running it."""
    deadline = time.monotonic() + timeout
    for line in dbt.stdout:
        event = json.loads(line)
        if text in event["info"]["msg"]:
            return event["info"]["pid"]
        assert time.monotonic() < deadline
    raise AssertionError(f"the command ended before {text!r}")


def _gone(pid: int, wait: float = 300.0) -> bool:
    """Whether the process ends (or is a zombie), checked every 0.1 s; ``wait``: a safety net."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


def _files_parsed(target: Path) -> int:
    return json.loads((target / "perf_info.json").read_text())["parsed_path_count"]


def test_a_new_target_folder_starts_from_the_projects_parse_when_the_database_name_matches(project, tmp_path):
    dbt_project.parse(project, project / "target", "tiny.duckdb")
    assert _files_parsed(project / "target") > 0  # the first parse reads every file

    dbt_project.parse(project, tmp_path / "build_a", "tiny.duckdb")
    assert _files_parsed(tmp_path / "build_a") == 0  # dbt's partial parse found nothing changed

    dbt_project.parse(project, tmp_path / "build_b", "other.duckdb")  # another database: parsed again
    assert _files_parsed(tmp_path / "build_b") > 0


def test_the_warm_process_and_client_load_dbt_without_dagster():
    # A warm process starts beside the run's own steps on a 2-core machine, the client once per
    # command: Dagster and dagster-dbt would cost them seconds of CPU for nothing.
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, orchestration.warm_dbt.server, orchestration.warm_dbt.client, dbt.cli.main;"
         " print(sorted({m.split('.')[0] for m in sys.modules} & {'dagster', 'dagster_dbt', 'dbt'}))"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert loaded.strip() == "['dbt']"
