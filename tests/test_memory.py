"""Memory given back: Polars' freed pages, and DuckDB's cache held to a limit."""

import subprocess
import sys
from pathlib import Path

import yaml

from paperhouse.warehouse import MEMORY_LIMIT, connect

# Each measurement runs in a fresh process, whose resident memory is its own.
_RSS = '''
def rss_gb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 1e9
'''


def _measure(script: str, *args: str, env: dict | None = None) -> list[str]:
    """The words a script printed last, run with ``rss_gb()`` defined (DuckDB may print a progress bar before)."""
    result = subprocess.run([sys.executable, "-c", _RSS + script, *args], capture_output=True, text=True, check=True,
                            env=env)
    return result.stdout.splitlines()[-1].split()


_FREE_A_FRAME = """
import time
import orchestration  # as `dagster dev` loads the definitions
import polars as pl
frame = pl.DataFrame({"x": pl.int_range(0, 50_000_000, eager=True)}).with_columns(y=pl.col("x") * 2)
held = rss_gb()
del frame
time.sleep(0.2)
print(held, rss_gb())
"""


def test_memory_polars_frees_is_handed_back_to_the_system_at_once():
    env = {"PATH": "/usr/bin:/bin"}  # no _RJEM_MALLOC_CONF from outside
    held, after = map(float, _measure(_FREE_A_FRAME, env=env))
    assert held > 0.7 and after < held - 0.6, (held, after)


def test_duckdb_connections_and_dbt_keep_their_cache_to_the_limit(tmp_path: Path):
    with connect(tmp_path / "build.duckdb") as con:
        limit = con.execute("select current_setting('memory_limit')").fetchone()[0]
    assert limit == "1.8 GiB" and MEMORY_LIMIT == "2GB"  # DuckDB shows 2 GB in GiB
    profiles = yaml.safe_load((Path(__file__).parents[1] / "dbt_project" / "profiles.yml").read_text())
    assert profiles["paperhouse"]["outputs"]["warehouse"]["settings"]["memory_limit"] == MEMORY_LIMIT


_DROP_THE_TEXTS = """
import sys, time
import paperhouse  # the allocator setting, as every entry point has it
import duckdb
from paperhouse.warehouse import read_frame
con = duckdb.connect()
sql = ("select 'file ' || (i % 7) as source_file, i as record_no, repeat('lorem ipsum ', 80) || i as text"
       " from range(600000) t(i)")
records = read_frame(con, sql, large=("text",) if sys.argv[1] == "large" else ())
con.close()
held = rss_gb()
ids = records.drop("text")
del records
time.sleep(0.2)
print(held, rss_gb())
"""


def test_ids_read_beside_texts_let_the_texts_go_when_they_are_dropped():
    held, after = map(float, _measure(_DROP_THE_TEXTS, "large"))
    assert held > 0.5 and after < held - 0.4, (held, after)  # about 0.6 GB of texts
    # Read as DuckDB hands them over, the ids keep their batch's texts alive: what the copy is for.
    held, after = map(float, _measure(_DROP_THE_TEXTS, "shared"))
    assert after > held - 0.1, (held, after)


_INGEST_A_FOLDER = """
import sys
from pathlib import Path
import paperhouse
from paperhouse import ingest, parse_cache, warehouse
from paperhouse.warehouse import connect
# Small row groups, appends and parse batches: the folder is 30 appends.
warehouse.ROW_GROUP_ROWS, parse_cache.APPEND_ROWS, ingest._BATCH_BYTES = 4_096, 8_192, 1 << 20
after_append = []
append = parse_cache._CacheWriter.flush
def append_and_measure(writer):
    append(writer)
    # Beside DuckDB's own cache of the blocks it wrote, which its memory limit bounds.
    cache_gb = writer.con.execute("select sum(memory_usage_bytes) / 1e9 from duckdb_memory()").fetchone()[0]
    after_append.append(rss_gb() - cache_gb)
parse_cache._CacheWriter.flush = append_and_measure
with connect(Path(sys.argv[2])) as con:
    parse_cache.ingest(con, Path(sys.argv[1]))
    rows = con.execute("select count(*) from raw.source_records").fetchone()[0]
third = len(after_append) // 3  # means over the first and the last third: one sample is noisy
print(rows, sum(after_append[:third]) / third, sum(after_append[-third:]) / third)
"""


def test_ingest_holds_an_append_of_parsed_rows_not_the_folder(tmp_path: Path):
    """Inside a transaction, DuckDB keeps every frame it scanned until the commit: the parsed
    batches appended there were all held at once (10^6 records: 8.6 GB at the end)."""
    from corpus import seed_abstracts

    abstracts = seed_abstracts()
    folder = tmp_path / "lists"
    folder.mkdir()
    for file in range(24):  # 24 files of 10,000 distinct abstracts: 240,000 records, 0.28 GB of text
        paragraphs = (f"{abstracts[(file * 10_000 + i) % len(abstracts)]} Variant {file}-{i}." for i in range(10_000))
        (folder / f"list_{file:02}.txt").write_text("ICLR 2026 Papers\n\n" + "\n\n".join(paragraphs) + "\n")
    text_gb = sum(path.stat().st_size for path in folder.iterdir()) / 1e9
    rows, early, late = _measure(_INGEST_A_FOLDER, str(folder), str(tmp_path / "build.duckdb"))
    assert int(rows) == 240_000
    # Held, the appended batches grew the process by about twice their text (0.5 GB here between
    # the thirds); staged, it stays flat within about 0.05 GB.
    assert float(late) - float(early) < text_gb / 2, (text_gb, early, late)
