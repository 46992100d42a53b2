from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from orchestration.assets.dbt import dbt_models
from orchestration.resources import WarehouseResource
from paperhouse.warehouse import connect, publish

MART_KEYS = sorted((key for key in dbt_models.keys if key.path[0] == "marts"), key=lambda k: k.path)


@asset(
    key="published_warehouse",
    deps=MART_KEYS,
    group_name="publish",
    kinds={"duckdb"},
    owners=["team:paperhouse"],
    pool="duckdb_writer",
    description=(
        "The warehouse file readers and BI tools open. The build database is copied and swapped in "
        "atomically, only after every blocking check upstream has passed."
    ),
)
def published_warehouse(context: AssetExecutionContext, warehouse: WarehouseResource) -> MaterializeResult:
    paths = warehouse.paths
    published = publish(paths.build_database, paths.warehouse)
    with connect(published, read_only=True) as con:
        counts = {
            key.path[1]: con.execute(f'select count(*) from marts."{key.path[1]}"').fetchone()[0] for key in MART_KEYS
        }
    context.log.info(f"published {published}")
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(str(published)),
            "size_bytes": published.stat().st_size,
            "dagster/row_count": counts["papers"],
            **{f"rows/{table}": n for table, n in counts.items()},
        }
    )
