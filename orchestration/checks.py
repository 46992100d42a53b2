"""Great Expectations suites as blocking Dagster asset checks.
A failing suite fails its check with ERROR severity; because the checks are blocking,
nothing downstream of the checked asset runs, the warehouse is not published, and the
check's metadata lists each expectation with its observed value.
"""

import json

from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, AssetChecksDefinition, MetadataValue, asset_check

from orchestration.assets.ingest import REJECTS_BY_REASON
from orchestration.metadata import counts_table
from orchestration.resources import GreatExpectationsResource, WarehouseResource
from paperhouse.quality import SUITES, Suite, SuiteResult


def _describe(outcome) -> str:
    column = f" on `{outcome.column}`" if outcome.column else ""
    return f"{outcome.expectation}{column}"


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
            [{"expectation": _describe(o), "success": o.success, "observed": _jsonable(o.observed)} for o in result.outcomes]
        ),
        "results": MetadataValue.md("| result | expectation | observed |\n|---|---|---|\n" + "\n".join(rows)),
    }


def great_expectations_check(suite: Suite) -> AssetChecksDefinition:
    @asset_check(
        asset=suite.name.split("."),
        name=f"great_expectations_{suite.table_name}",
        description=f"Great Expectations suite `{suite.name}`: column names and types (nullability included), and what must hold of its values and row count.",
        blocking=True,
    )
    def _check(
        context: AssetCheckExecutionContext, warehouse: WarehouseResource, great_expectations: GreatExpectationsResource
    ) -> AssetCheckResult:
        result = great_expectations.validate(warehouse.paths.build_database, suite)
        if not result.success:
            context.log.error(f"{suite.name}: " + "; ".join(_describe(o) for o in result.failures))
        return AssetCheckResult(
            passed=result.success,
            severity=AssetCheckSeverity.ERROR,
            metadata=suite_metadata(result),
            description=None if result.success else "failed: " + ", ".join(_describe(o) for o in result.failures),
        )

    return _check


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


great_expectations_checks = [great_expectations_check(suite) for suite in SUITES]
