"""Dagster definitions for paperhouse: assets, checks and resources around ``paperhouse``."""
