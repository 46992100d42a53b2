"""The graph's Python stages alone (the assets of the ingest, dedup and nlp groups, with their
checks), materialized in this process through the `build_warehouse` job of the definitions:

    python tests/python_stages.py SEEDS_FOLDER WAREHOUSE_FILE ENGINE

For a test of what the engine computes where the dbt models add nothing to it (tests/test_spark_engine:
the stages on a Spark cluster's executors). Exit status 0 when every step and blocking check passed.
"""

from __future__ import annotations

import sys

from dagster import AssetCheckSeverity, AssetsDefinition

from orchestration.definitions import ASSETS, build_definitions
from orchestration.runner import run_config

PYTHON_STAGES = {"ingest", "dedup", "nlp"}


def python_stage_keys() -> list:
    return [
        key
        for asset in ASSETS
        if isinstance(asset, AssetsDefinition)
        for key, group in asset.group_names_by_key.items()
        if group in PYTHON_STAGES
    ]


def main(seeds: str, warehouse: str, engine: str) -> int:
    job = build_definitions(seeds_dir=seeds, warehouse=warehouse, engine=engine).resolve_job_def("build_warehouse")
    result = job.execute_in_process(run_config=run_config(), asset_selection=python_stage_keys(), raise_on_error=False)
    # A blocking check that fails fails the stages; a warning (a rejected record) does not, as in a run.
    failed = [
        evaluation
        for evaluation in result.get_asset_check_evaluations()
        if not evaluation.passed and evaluation.severity == AssetCheckSeverity.ERROR
    ]
    for evaluation in failed:
        print(f"check failed: {evaluation.asset_key.to_user_string()}:{evaluation.check_name}", file=sys.stderr)
    return 0 if result.success and not failed else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
