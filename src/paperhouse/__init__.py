"""paperhouse: turn plain-text lists of paper abstracts into a DuckDB warehouse.

This package holds the plain-Python core (parsing, normalising, dedup, terms, topics,
quality suites, the CLI). The Dagster definitions that orchestrate it live in
``orchestration/``.
"""

import os

__version__ = "0.1.0"

# Polars allocates with jemalloc, which keeps freed pages for ten seconds before it hands them
# back: one step's garbage then sat under the next step's peak (ingesting 5 * 10^5 records held
# 4.9 GB at its end, 1.8 GB with pages handed back within a second). Handing them back at once
# instead faulted them in again on every allocation (100k abstracts ~5 s slower end to end); a
# background thread returns them after a second, off the allocating thread. Read once, when Polars
# first allocates: so set here, before any module of the package imports Polars.
os.environ.setdefault("_RJEM_MALLOC_CONF", "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0")
