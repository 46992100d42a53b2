"""Assets of the paperhouse graph, one module per stage."""

OWNERS = ["team:paperhouse"]
# Every step that writes the build database runs in this pool: DuckDB allows one writer at a time.
WRITER_POOL = "duckdb_writer"
