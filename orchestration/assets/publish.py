import polars as pl
from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, TableColumn, TableSchema, asset

from orchestration.assets import OWNERS, WRITER_POOL
from orchestration.assets.dbt import dbt_models
from orchestration.metadata import counts_table
from orchestration.resources import WarehouseResource
from paperhouse.warehouse import connect, publish

MART_KEYS = sorted((key for key in dbt_models.keys if key.path[0] == "marts"), key=lambda k: k.path)


@asset(
    key="published_warehouse",
    deps=MART_KEYS,
    group_name="publish",
    kinds={"duckdb"},
    owners=OWNERS,
    pool=WRITER_POOL,
    description=(
        "The warehouse file readers and BI tools open. The build database is copied and swapped in "
        "atomically, only after every blocking check upstream has passed."
    ),
)
def published_warehouse(context: AssetExecutionContext, warehouse: WarehouseResource) -> MaterializeResult:
    paths = warehouse.paths
    published = publish(paths.build_database, paths.warehouse)
    with connect(published, read_only=True) as con:
        tables = con.execute(
            "select table_name, estimated_size, column_count from duckdb_tables() where schema_name = 'marts'"
            " order by table_name"
        ).pl()
        counts = {
            table: con.execute(f'select count(*) from marts."{table}"').fetchone()[0] for table in tables["table_name"]
        }
        columns = con.execute(
            "select table_name, column_name, data_type from duckdb_columns() where schema_name = 'marts'"
            " order by table_name, column_index"
        ).fetchall()
    context.log.info(f"published {published}")
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(str(published)),
            "size_bytes": published.stat().st_size,
            "dagster/row_count": sum(counts.values()),
            "dagster/column_schema": TableSchema(
                columns=[TableColumn(name=f"{table}.{column}", type=dtype) for table, column, dtype in columns]
            ),
            "preview": counts_table(
                tables.select("table_name", "column_count").with_columns(rows=pl.Series(list(counts.values())))
            ),
            **{f"rows/{table}": n for table, n in counts.items()},
        }
    )
