"""Great Expectations suites as blocking Dagster asset checks.

Every table has its check (``great_expectations_<table>``). The checks of the tables one step
writes run together, as one step (a ``multi_asset_check``): the step reads its tables through
one connection and pays Dagster's cost of a step once, not once per table (28 check steps took
a build of the seeds 7 s, most of it the steps' own cost). A failing suite fails its check with
ERROR severity; because the checks are blocking, nothing downstream of the step's tables runs,
the warehouse is not published, and the check's metadata lists each expectation with its
observed value.
"""

import json
from collections.abc import Iterator, Sequence

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    AssetsDefinition,
    MetadataValue,
    asset_check,
    multi_asset_check,
)

from orchestration.assets.ingest import REJECTS_BY_REASON
from orchestration.engine import EngineResource
from orchestration.metadata import counts_table
from orchestration.resources import GreatExpectationsResource, WarehouseResource
from paperhouse.quality.gx import SuiteResult
from paperhouse.quality.suites import SUITES, Suite


def _describe(outcome) -> str:
    column = f" on `{outcome.column}`" if outcome.column else ""
    return f"{outcome.expectation}{column}"


def _failure_in_words(outcome) -> str:
    """The expectation and what was observed: a count and up to five offending values (GX's
    partial unexpected list), so the run's summary shows the rows that break it."""
    observed = json.dumps(_jsonable(outcome.observed), ensure_ascii=False)
    return f"{_describe(outcome)}, observed {observed[:400]}"


def _jsonable(value):
    """GX reports numpy scalars and the like; keep numbers, lists and dicts, else their text."""
    return json.loads(json.dumps(value, default=str))


def suite_metadata(result: SuiteResult) -> dict:
    rows = [
        f"| {'pass' if o.success else '**FAIL**'} | {_describe(o)} | {str(o.observed)[:120].replace('|', '/')} |"
        for o in result.outcomes
    ]
    return {
        "expectations": len(result.outcomes),
        "failed_expectations": MetadataValue.json([f"{_describe(o)}: observed {o.observed}" for o in result.failures]),
        "observed": MetadataValue.json(
            [
                {"expectation": _describe(o), "success": o.success, "observed": _jsonable(o.observed)}
                for o in result.outcomes
            ]
        ),
        "results": MetadataValue.md("| result | expectation | observed |\n|---|---|---|\n" + "\n".join(rows)),
    }


def _spec(suite: Suite) -> AssetCheckSpec:
    return AssetCheckSpec(
        name=f"great_expectations_{suite.table_name}",
        asset=AssetKey(suite.name.split(".")),
        description=f"Great Expectations suite `{suite.name}`: column names and types (nullability "
        "included), and what must hold of its values and row count.",
        blocking=True,
    )


def _step_checks(step: str, suites: list[Suite]) -> AssetChecksDefinition:
    specs = [_spec(suite) for suite in suites]
    suite_of = {spec.key: suite for spec, suite in zip(specs, suites, strict=True)}

    @multi_asset_check(
        name=f"great_expectations_{step}",
        specs=specs,
        description=f"The Great Expectations suites of the tables `{step}` writes.",
        can_subset=True,
    )
    def _checks(
        context: AssetCheckExecutionContext,
        warehouse: WarehouseResource,
        engine: EngineResource,
        great_expectations: GreatExpectationsResource,
    ) -> Iterator[AssetCheckResult]:
        selected = {key: suite for key, suite in suite_of.items() if key in context.selected_asset_check_keys}
        paths = warehouse.paths
        results = great_expectations.validate(
            paths.build_database, list(selected.values()), engine.compute(paths.warehouse)
        )
        for key, result in zip(selected, results, strict=True):
            if not result.success:
                context.log.error(f"{result.suite}: " + "; ".join(_describe(o) for o in result.failures))
            yield AssetCheckResult(
                asset_key=key.asset_key,
                check_name=key.name,
                passed=result.success,
                severity=AssetCheckSeverity.ERROR,
                metadata=suite_metadata(result),
                description=None
                if result.success
                else "failed: " + "; ".join(_failure_in_words(o) for o in result.failures),
            )

    return _checks


def great_expectations_checks(assets: Sequence[AssetsDefinition]) -> list[AssetChecksDefinition]:
    """The checks of every table a suite covers, one check step per asset step that writes them."""
    suites = {AssetKey(suite.name.split(".")): suite for suite in SUITES}
    checks = [
        _step_checks(asset.node_def.name, [suites.pop(key) for key in sorted(asset.keys) if key in suites])
        for asset in assets
        if any(key in suites for key in asset.keys)
    ]
    if suites:
        raise ValueError(f"no asset writes the tables of the suites {sorted(s.name for s in suites.values())}")
    return checks


@asset_check(
    asset=["raw", "source_records"],
    description=(
        "Warns when paragraphs or files were rejected (including files that could not be read and entries "
        "that are no file, such as folders or looping links): someone should look at marts.rejected_records."
    ),
    blocking=False,
)
def no_rejected_records(warehouse: WarehouseResource) -> AssetCheckResult:
    with warehouse.build_connection(read_only=True) as con:
        by_reason = con.execute(REJECTS_BY_REASON).pl()
    rejected = int(by_reason["records"].sum())
    return AssetCheckResult(
        passed=rejected == 0,
        severity=AssetCheckSeverity.WARN,
        metadata={"rejected_records": rejected, "by_reason": counts_table(by_reason)},
        description=None if rejected == 0 else f"{rejected} records rejected; see marts.rejected_records",
    )
