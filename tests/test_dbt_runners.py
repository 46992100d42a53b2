"""Both dbt runners behind the `dbt` resource build the same warehouse from the bundled seeds: dagster-dbt's
stock ``DbtCliResource`` (a `dbt` process per command) and the `worker` runner (warm dbt processes),
chosen with PAPERHOUSE_DBT_RUNNER."""

import json
from pathlib import Path
from types import SimpleNamespace

import duckdb
import pytest
from corpus import SEEDS

from orchestration.dbt_resource import RUNNER_ENV, WarmDbtCliResource, dbt_resource
from orchestration.runner import run_all
from paperhouse.settings import DBT_PROJECT_DIR, resolve_paths, venv_executable

# What differs between any two runs: when things happened (timestamps: when a paper or topic was first
# seen, when a check was evaluated), in which run, and how long each dbt test took in which dbt
# invocation (in the observed values of marts.quality_runs).
RUN_COLUMNS = {"run_id"}
RUN_OBSERVATIONS = {"Execution Duration", "invocation_id"}


def _without_run_observations(observed: str | None) -> dict | None:
    return observed and {k: v for k, v in json.loads(observed).items() if k not in RUN_OBSERVATIONS}


def marts(warehouse: Path) -> dict[str, list[tuple]]:
    """Every mart's rows, in order, without the columns that name the run."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        tables = [
            t
            for (t,) in con.execute(
                "select table_name from information_schema.tables where table_schema = 'marts' order by 1"
            ).fetchall()
        ]
        contents = {}
        for table in tables:
            columns = [
                c
                for (c,) in con.execute(
                    "select column_name from information_schema.columns where table_schema = 'marts' and table_name = ?"
                    " and data_type not like 'TIMESTAMP%' order by ordinal_position",
                    [table],
                ).fetchall()
                if c not in RUN_COLUMNS
            ]
            select = ", ".join(f'"{c}"' for c in columns)
            # quality_runs holds every run the Dagster instance recorded (under `make test`, a
            # persistent one): the warehouse's own run is the one compared.
            own_run = (
                " where run_id = (select run_id from marts.quality_runs order by evaluated_at desc limit 1)"
                if table == "quality_runs"
                else ""
            )
            rows = con.execute(f"select {select} from marts.{table}{own_run} order by all").fetchall()
            if "observed" in columns:
                at = columns.index("observed")
                rows = [(*row[:at], _without_run_observations(row[at]), *row[at + 1 :]) for row in rows]
            contents[table] = rows
    return contents


def dbt_processes(target: Path) -> set[int]:
    """The processes that wrote a dbt target folder's log: dbt's JSON log names its process in each line."""
    log = (target / "dbt.log").read_text()
    return {json.loads(line)["info"]["pid"] for line in log.splitlines() if line.startswith("{")}


@pytest.fixture(scope="module")
def definitions_specs():
    from orchestration.definitions import build_definitions

    return build_definitions().resolve_all_asset_specs()


@pytest.fixture(scope="module")
def builds(seeds_build, tmp_path_factory) -> dict[str, Path]:
    """The seeds built with each runner: the session's shared build is the default's (``worker``)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv(RUNNER_ENV, "stock")
        warehouse = tmp_path_factory.mktemp("stock") / "paperhouse.duckdb"
        outcome = run_all(resolve_paths(SEEDS, warehouse))
    assert outcome.success, outcome.reason
    return {"stock": warehouse, "worker": seeds_build.warehouse}


def test_the_last_dbt_step_runs_after_every_other_dbt_asset(definitions_specs):
    """What lets its command start no warm successor: no dbt asset is built after it in a run."""
    from orchestration.assets.dbt import dbt_models, dbt_quality_history
    from orchestration.dbt_resource import LAST_DBT_STEP

    assert dbt_quality_history.op.name == LAST_DBT_STEP
    parents = {spec.key: {dep.asset_key for dep in spec.deps} for spec in definitions_specs}
    ancestors, frontier = set(), set(dbt_quality_history.keys)
    while frontier:
        frontier = set().union(*(parents.get(key, set()) for key in frontier)) - ancestors
        ancestors |= frontier
    assert set(dbt_models.keys) <= ancestors


def test_only_the_last_dbt_steps_command_tells_warm_dbt_that_none_follows(monkeypatch):
    from dagster_dbt import DbtCliResource

    from orchestration.dbt_resource import LAST_DBT_STEP

    told = []

    class Warm:
        def expect_last_command(self) -> None:
            told.append(True)

    monkeypatch.setattr("orchestration.dbt_resource.warm_dbt", Warm)
    monkeypatch.setattr(DbtCliResource, "cli", lambda self, args, **kwargs: ("invoked", kwargs["context"]))
    resource = WarmDbtCliResource(project_dir=str(DBT_PROJECT_DIR), dbt_executable=venv_executable("paperhouse-dbt"))
    for step, expected in (("dbt_models", []), (LAST_DBT_STEP, [True])):
        context = SimpleNamespace(op_def=SimpleNamespace(name=step))
        assert resource.cli(["build"], context=context) == ("invoked", context)
        assert told == expected


def test_the_runner_is_chosen_by_the_environment(monkeypatch):
    monkeypatch.setenv(RUNNER_ENV, "stock")
    assert type(dbt_resource()).__name__ == "DbtCliResource"
    monkeypatch.setenv(RUNNER_ENV, "worker")
    assert isinstance(dbt_resource(), WarmDbtCliResource)
    monkeypatch.setenv(RUNNER_ENV, "thread")
    with pytest.raises(ValueError, match="worker, stock"):
        dbt_resource()


@pytest.mark.slow
def test_both_runners_build_the_same_marts(builds):
    stock, worker = marts(builds["stock"]), marts(builds["worker"])
    assert stock.keys() == worker.keys() and "papers" in stock
    for table in stock:
        assert stock[table] == worker[table], table


@pytest.mark.slow
def test_each_runner_ran_dbt_where_it_says(builds):
    stock, worker = (resolve_paths(None, builds[runner]).dbt_target for runner in ("stock", "worker"))
    # Each dbt step in a process of its own, either way.
    assert len(dbt_processes(stock)) == 2 and len(dbt_processes(worker)) == 2
    # Worker: each command ran in a warm process that had parsed the project before it came.
    assert dbt_processes(worker) <= dbt_processes(worker / "warm_parse")
    assert not (stock / "warm_parse").exists()
