"""Memory given back: Polars' freed pages, and DuckDB's cache held to a limit."""

import subprocess
import sys
from pathlib import Path

import yaml

from paperhouse.warehouse import MEMORY_LIMIT, connect

_FREE_A_FRAME = """
import time
import orchestration  # as `dagster dev` loads the definitions
import polars as pl
def rss_gb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 1e9
frame = pl.DataFrame({"x": pl.int_range(0, 50_000_000, eager=True)}).with_columns(y=pl.col("x") * 2)
held = rss_gb()
del frame
time.sleep(0.2)
print(held, rss_gb())
"""


def test_memory_polars_frees_is_handed_back_to_the_system_at_once():
    env = {"PATH": "/usr/bin:/bin"}  # no _RJEM_MALLOC_CONF from outside
    held, after = map(float, subprocess.run([sys.executable, "-c", _FREE_A_FRAME], capture_output=True, text=True,
                                            check=True, env=env).stdout.split())
    assert held > 0.7 and after < held - 0.6, (held, after)


def test_duckdb_connections_and_dbt_keep_their_cache_to_the_limit(tmp_path: Path):
    with connect(tmp_path / "build.duckdb") as con:
        limit = con.execute("select current_setting('memory_limit')").fetchone()[0]
    assert limit == "1.8 GiB" and MEMORY_LIMIT == "2GB"  # DuckDB shows 2 GB in GiB
    profiles = yaml.safe_load((Path(__file__).parents[1] / "dbt_project" / "profiles.yml").read_text())
    assert profiles["paperhouse"]["outputs"]["warehouse"]["settings"]["memory_limit"] == MEMORY_LIMIT
