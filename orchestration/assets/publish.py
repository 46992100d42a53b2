import time

import polars as pl
from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, TableColumn, TableSchema, asset

from orchestration.assets import OWNERS, WRITER_POOL
from orchestration.assets.dbt import dbt_models, dbt_quality_history
from orchestration.metadata import counts_table, frame_metadata
from orchestration.resources import WarehouseResource
from paperhouse.dashboard import site as dashboard_site
from paperhouse.warehouse.database import connect
from paperhouse.warehouse.publishing import export_marts, publish

MART_KEYS = sorted(
    (key for key in (*dbt_models.keys, *dbt_quality_history.keys) if key.path[0] == "marts"), key=lambda k: k.path
)


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


@asset(
    key="marts_parquet",
    deps=["published_warehouse"],
    group_name="publish",
    kinds={"parquet", "polars"},
    owners=OWNERS,
    description=(
        "Every mart as `<table>.parquet` in `data/marts/` (beside the warehouse), for tools that prefer files. "
        "Read from the published warehouse, read-only; the folder is a link swapped to a complete, synced new "
        "version in one rename, so readers never see half an export."
    ),
)
def marts_parquet(context: AssetExecutionContext, warehouse: WarehouseResource) -> MaterializeResult:
    paths = warehouse.paths
    counts = export_marts(paths.warehouse, paths.marts_export)
    context.log.info(f"exported {len(counts)} marts to {paths.marts_export}")
    frame = pl.DataFrame({"file": [f"{t}.parquet" for t in counts], "rows": list(counts.values())})
    return MaterializeResult(
        metadata={
            **frame_metadata(frame, preview_rows=frame.height, path=MetadataValue.path(str(paths.marts_export))),
            "dagster/row_count": sum(counts.values()),
        }
    )


@asset(
    key="dashboard",
    deps=["marts_parquet"],
    group_name="dashboard",
    kinds={"html", "polars"},
    owners=OWNERS,
    description=(
        "The shipped dashboard (templates in `paperhouse/dashboard/templates/`): overview, topics, terms, "
        "duplicates and data quality, as static pages in `data/dashboard/` built from the Parquet export "
        "(no DuckDB connection). Open `data/dashboard/index.html`."
    ),
)
def dashboard(context: AssetExecutionContext, warehouse: WarehouseResource) -> MaterializeResult:
    paths = warehouse.paths
    started = time.perf_counter()
    site = dashboard_site.build(paths.marts_export, paths.dashboard)
    seconds = time.perf_counter() - started
    context.log.info(f"dashboard built in {seconds:.2f} s: {site.folder / 'index.html'}")
    return MaterializeResult(
        metadata=frame_metadata(
            pl.DataFrame({"figure": list(site.figures), "value": list(site.figures.values())}),
            preview_rows=len(site.figures),
            path=MetadataValue.path(str(site.folder / "index.html")),
            url=MetadataValue.url((site.folder / "index.html").as_uri()),
            pages=MetadataValue.json(site.pages),
            build_seconds=round(seconds, 3),
        )
    )
