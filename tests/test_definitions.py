"""The code location loads, and its graph is the one the README draws."""

import re
import subprocess
from pathlib import Path

from dagster import AssetKey

from orchestration.definitions import defs
from paperhouse.settings import venv_executable

PROJECT_ROOT = Path(__file__).resolve().parents[1]
WORKSPACE_FILE = PROJECT_ROOT / "workspace.yaml"


def _graph():
    return defs.resolve_asset_graph()


def test_definitions_load_with_every_stage():
    keys = {key.to_user_string() for key in _graph().get_all_asset_keys()}
    assert {
        "raw/source_records",
        "raw/paper_assignments",
        "raw/terms",
        "raw/paper_terms",
        "raw/paper_keyphrases",
        "raw/term_aliases",
        "raw/paper_names",
        "raw/topics",
        "raw/similar_papers",
        "marts/term_aliases",
        "marts/similar_papers",
        "staging/stg_source_records",
        "marts/papers",
        "marts/paper_sources",
        "marts/rejected_records",
        "marts/terms",
        "marts/paper_terms",
        "marts/paper_keyphrases",
        "marts/topics",
        "marts/paper_topics",
        "published_warehouse",
    } <= keys


def test_graph_is_connected_from_ingest_to_publish():
    graph = _graph()
    upstream_of_publish = graph.get(AssetKey("published_warehouse")).parent_keys
    assert AssetKey(["marts", "papers"]) in upstream_of_publish
    assert AssetKey(["raw", "source_records"]) in graph.get(AssetKey(["staging", "stg_source_records"])).parent_keys
    assert (
        AssetKey(["raw", "paper_assignments"]) in graph.get(AssetKey(["staging", "stg_paper_assignments"])).parent_keys
    )
    ancestors = graph.upstream_key_iterator(AssetKey("published_warehouse"))
    assert AssetKey(["raw", "source_records"]) in set(ancestors)


def test_every_raw_table_and_mart_has_a_blocking_great_expectations_check():
    graph = _graph()
    checked = {
        key.asset_key.to_user_string() for key in graph.asset_check_keys if key.name.startswith("great_expectations_")
    }
    tables = {key.to_user_string() for key in graph.get_all_asset_keys() if key.path[0] in {"raw", "marts"}}
    assert tables == checked
    for key in graph.asset_check_keys:
        if key.name.startswith("great_expectations_"):
            assert graph.get_check_spec(key).blocking, key


def test_check_history_is_a_great_expectations_asset_of_group_quality_after_every_mart():
    graph = _graph()
    history = graph.get(AssetKey(["raw", "check_evaluations"]))
    assert history.group_name == "quality"
    assert {"great_expectations", "duckdb"} <= set(history.kinds)
    marts = {key for key in graph.get_all_asset_keys() if key.path[0] == "marts"}
    assert history.parent_keys == marts - {AssetKey(["marts", "quality_runs"])}
    assert AssetKey(["raw", "check_evaluations"]) in graph.get(AssetKey(["marts", "quality_runs"])).parent_keys


def test_dashboard_is_built_from_the_parquet_export_of_the_published_marts():
    graph = _graph()
    assert graph.get(AssetKey("dashboard")).parent_keys == {AssetKey("marts_parquet")}
    assert graph.get(AssetKey("marts_parquet")).parent_keys == {AssetKey("published_warehouse")}
    assert AssetKey(["marts", "quality_runs"]) in graph.get(AssetKey("published_warehouse")).parent_keys
    assert graph.get(AssetKey("dashboard")).group_name == "dashboard"


def test_dagster_validates_the_workspace_without_deprecation_warnings():
    """The only warning allowed is Dagster's notice that the command itself is superseded by `dg`."""
    out = subprocess.run(
        [venv_executable("dagster"), "definitions", "validate", "-w", str(WORKSPACE_FILE)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0 and "All code locations passed validation" in out.stdout + out.stderr
    warnings = re.findall(r"(\w*Warning): (.*)", out.stdout + out.stderr)
    assert [w for w in warnings if "definitions_validate_command" not in w[1]] == []


def test_the_runner_loads_without_collection_and_leaves_the_collector_on():
    """`paperhouse run` loads Dagster with the garbage collector off (its sweeps over what is being
    imported are wasted), then freezes what it imported and turns the collector back on: left off,
    a run's cyclic garbage would never be freed."""
    program = (
        "import gc\n"
        "from paperhouse.pipeline import load_runner\n"
        "sweeps = []\n"
        "gc.callbacks.append(lambda phase, info: phase == 'start' and sweeps.append(info['generation']))\n"
        "load_runner()\n"
        "print(len(sweeps), gc.isenabled(), gc.get_freeze_count() > 100_000)\n"
    )
    command = [str(venv_executable("python")), "-c", program]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "True", "True"]
