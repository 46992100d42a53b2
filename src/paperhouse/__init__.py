"""paperhouse: turn plain-text lists of paper abstracts into a DuckDB warehouse.

This package holds the plain-Python core (parsing, normalising, dedup, terms, topics,
quality suites, the CLI). The Dagster definitions that orchestrate it live in
``orchestration/``.
"""

__version__ = "0.1.0"
