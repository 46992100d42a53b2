"""Dagster definitions for paperhouse: assets, checks and resources around ``paperhouse``."""

import paperhouse  # noqa: F401  # first: it sets up Polars' allocator before anything imports Polars
