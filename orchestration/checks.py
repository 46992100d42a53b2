"""Great Expectations suites as blocking Dagster asset checks.
A failing suite fails its check with ERROR severity; because the checks are blocking,
nothing downstream of the checked asset runs, the warehouse is not published, and the
check's metadata lists each expectation with its observed value.
"""


from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, AssetChecksDefinition, MetadataValue, asset_check

from orchestration.resources import WarehouseResource
from paperhouse.quality import SUITES, Suite, SuiteResult, validate_suite


def _describe(outcome) -> str:
    column = f" on `{outcome.column}`" if outcome.column else ""
    return f"{outcome.expectation}{column}"


def suite_metadata(result: SuiteResult) -> dict:
    rows = [
        f"| {'pass' if o.success else '**FAIL**'} | {_describe(o)} | {str(o.observed)[:120].replace('|', '/')} |"
        for o in result.outcomes
    ]
    return {
        "expectations": len(result.outcomes),
        "failed_expectations": MetadataValue.json([f"{_describe(o)}: observed {o.observed}" for o in result.failures]),
        "results": MetadataValue.md("| result | expectation | observed |\n|---|---|---|\n" + "\n".join(rows)),
    }


def great_expectations_check(suite: Suite) -> AssetChecksDefinition:
    @asset_check(
        asset=suite.name.split("."),
        name=f"great_expectations_{suite.table_name}",
        description=f"Great Expectations suite `{suite.name}`: column names and types, keys, and counts.",
        blocking=True,
    )
    def _check(context: AssetCheckExecutionContext, warehouse: WarehouseResource) -> AssetCheckResult:
        with warehouse.build_connection(read_only=True) as con:
            result = validate_suite(con, suite)
        if not result.success:
            context.log.error(f"{suite.name}: " + "; ".join(_describe(o) for o in result.failures))
        return AssetCheckResult(
            passed=result.success,
            severity=AssetCheckSeverity.ERROR,
            metadata=suite_metadata(result),
            description=None if result.success else "failed: " + ", ".join(_describe(o) for o in result.failures),
        )

    return _check


great_expectations_checks = [great_expectations_check(suite) for suite in SUITES]
