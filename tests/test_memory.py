"""Memory given back: Polars' freed pages, DuckDB's cache held to a limit and what it spills past it kept
per connection."""

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from paperhouse.warehouse.database import MEMORY_LIMIT, connect

# Each measurement runs in a fresh process, whose resident memory is its own. Pages freed go back
# to the system a while later (jemalloc's background thread): a measurement of that waits for it,
# not for a number of seconds (5 min at most, a safety net: the test's assertion then fails).
_RSS = """
import time as _time

def rss_gb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 1e9

def fallen_below(bound_gb, deadline_s=300):
    # The resident memory once it has fallen below bound_gb: checked every 0.1 s.
    end = _time.monotonic() + deadline_s
    while rss_gb() >= bound_gb and _time.monotonic() < end:
        _time.sleep(0.1)
    return rss_gb()
"""


def _measure(script: str, *args: str, env: dict | None = None) -> list[str]:
    """The words a script printed last, run with ``rss_gb()`` defined (DuckDB may print a progress bar before)."""
    result = subprocess.run(
        [sys.executable, "-c", _RSS + script, *args], capture_output=True, text=True, check=True, env=env
    )
    return result.stdout.splitlines()[-1].split()


_FREE_A_FRAME = """
import orchestration  # as `dagster dev` loads the definitions
import polars as pl
frame = pl.DataFrame({"x": pl.int_range(0, 50_000_000, eager=True)}).with_columns(y=pl.col("x") * 2)
held = rss_gb()
del frame
# jemalloc's background thread hands the pages back within a second, with nothing else allocating.
print(held, fallen_below(held - 0.6))
"""


def test_memory_polars_frees_is_handed_back_to_the_system_within_seconds():
    env = {"PATH": "/usr/bin:/bin"}  # no _RJEM_MALLOC_CONF from outside
    held, after = map(float, _measure(_FREE_A_FRAME, env=env))
    assert held > 0.7 and after < held - 0.6, (held, after)


def test_duckdb_connections_and_dbt_keep_their_cache_to_the_limit(tmp_path: Path):
    with connect(tmp_path / "build.duckdb") as con:
        limit = con.execute("select current_setting('memory_limit')").fetchone()[0]
    assert limit == "1.8 GiB" and MEMORY_LIMIT == "2GB"  # DuckDB shows 2 GB in GiB
    profiles = yaml.safe_load((Path(__file__).parents[1] / "dbt_project" / "profiles.yml").read_text())
    assert profiles["paperhouse"]["outputs"]["warehouse"]["settings"]["memory_limit"] == MEMORY_LIMIT


_SORT_PAST_THE_LIMIT = """
import hashlib, sys
from pathlib import Path
from paperhouse.warehouse.database import READER_CONFIG, connect
# A reader as `paperhouse query` opens one, with a memory limit the sort must spill past.
with connect(Path(sys.argv[1]), read_only=True, config=READER_CONFIG | {"memory_limit": "100MB"}) as con:
    spills_to = con.execute("select current_setting('temp_directory')").fetchone()[0]
    rows = con.execute("select i, s from t order by s").fetchall()
print("\\n", len(rows), hashlib.sha256(repr(rows).encode()).hexdigest(), spills_to)  # after its progress bar
"""


@pytest.mark.slow
def test_readers_of_one_warehouse_spill_at_once_each_into_its_own_directory(tmp_path: Path):
    """Spilling into DuckDB's default directory beside the file, three such readers all crashed (SIGSEGV)."""
    warehouse = tmp_path / "warehouse.duckdb"
    with connect(warehouse) as con:
        con.execute("create table t as select i, md5(i::varchar) || repeat('x', 40) as s from range(2000000) t(i)")
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", _SORT_PAST_THE_LIMIT, str(warehouse)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    printed = [reader.communicate()[0] for reader in readers]
    assert [reader.returncode for reader in readers] == [0, 0, 0]
    outputs = [text.splitlines()[-1].split() for text in printed]
    assert {(rows, digest) for rows, digest, _ in outputs} == {("2000000", outputs[0][1])}  # the same rows, whole
    spill_directories = {directory for _, _, directory in outputs}
    assert len(spill_directories) == 3 and not any(Path(d).exists() for d in spill_directories)  # removed at close


def test_an_in_memory_database_spills_past_its_limit_into_a_directory_of_its_own(tmp_path: Path, monkeypatch):
    """DuckDB's default for an in-memory database (the parse of `read_records`) is `.tmp` in the
    working directory, shared by every process started there."""
    monkeypatch.chdir(tmp_path)
    with connect(None, config={"memory_limit": "100MB"}) as con:
        spills_to = Path(con.execute("select current_setting('temp_directory')").fetchone()[0])
        con.execute("create table t as select md5(i::varchar) || repeat('x', 100) as s from range(2000000) t(i)")
        spilled = [Path(path) for (path,) in con.execute("select path from duckdb_temporary_files()").fetchall()]
    assert spilled and all(path.parent == spills_to for path in spilled)  # 0.27 GB of rows past 100 MB
    assert spills_to.parent == Path(tempfile.gettempdir()) and not spills_to.exists()  # removed at close
    assert not (tmp_path / ".tmp").exists()


_DROP_THE_TEXTS = """
import os, sys
# Pages freed go back to the system at once (no decay: `paperhouse` defers it, which the measurement
# would have to wait for): what is measured after the drop is what is alive, at once.
os.environ["_RJEM_MALLOC_CONF"] = "dirty_decay_ms:0,muzzy_decay_ms:0"
import duckdb
from paperhouse.warehouse.database import read_frame
con = duckdb.connect()
sql = ("select 'file ' || (i % 7) as source_file, i as record_no, repeat('lorem ipsum ', 80) || i as text"
       " from range(600000) t(i)")
records = read_frame(con, sql, large=("text",) if sys.argv[1] == "large" else ())
con.close()
held = rss_gb()
ids = records.drop("text")
del records
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
from paperhouse.ingest import reading as ingest
from paperhouse.ingest import parse_cache
from paperhouse.warehouse import database as warehouse
from paperhouse.warehouse.database import connect
# Small row groups, appends and parse batches: the folder is 30 appends.
warehouse.ROW_GROUP_ROWS = parse_cache.ROW_GROUP_ROWS = 4_096
parse_cache.APPEND_ROWS, ingest._BATCH_BYTES = 8_192, 1 << 20
after_append = []
append = parse_cache._CacheWriter._stage
def append_and_measure(writer, rows):
    append(writer, rows)
    # Beside DuckDB's own cache of the blocks it wrote, which its memory limit bounds.
    cache_gb = writer.con.execute("select sum(memory_usage_bytes) / 1e9 from duckdb_memory()").fetchone()[0]
    after_append.append(rss_gb() - cache_gb)
parse_cache._CacheWriter._stage = append_and_measure
with connect(Path(sys.argv[2])) as con:
    parse_cache.ingest(con, Path(sys.argv[1]))
    rows = con.execute("select count(*) from raw.source_records").fetchone()[0]
third = len(after_append) // 3  # means over the first and the last third: one sample is noisy
print(rows, sum(after_append[:third]) / third, sum(after_append[-third:]) / third)
"""


@pytest.mark.slow
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


_WEIGH_COUNTS = """
import threading, time
import numpy as np
import polars as pl
import paperhouse
from paperhouse.nlp.terms import weights as term_weights
# Counts of 200,000 papers, each with 40 distinct terms of 40,000 (two-word ones, so each ends its
# phrases): each paper's best 30 rows, and 30 entries of the matrix.
n_papers, per_paper, n_terms = 200_000, 40, 40_000
paper_idx = np.repeat(np.arange(n_papers, dtype=np.uint32), per_paper)
term_step = np.arange(per_paper, dtype=np.uint32)[None, :] * 997
term_idx = (term_step + np.arange(n_papers, dtype=np.uint32)[:, None]) % n_terms
counts = pl.DataFrame({
    "paper_idx": paper_idx,
    "term_idx": term_idx.ravel(),
    "count": (np.arange(len(paper_idx)) % 5 + 1).astype(np.uint16),
    "heads": np.ones(len(paper_idx), dtype=np.uint16),
})
vocabulary = pl.DataFrame({"term": [f"term {i:05}" for i in range(n_terms)]}).with_row_index("term_idx")
doc_freq = np.bincount(counts["term_idx"].to_numpy(), minlength=n_terms)
table = vocabulary.with_columns(
    doc_freq=pl.Series(doc_freq, dtype=pl.Int32), idf=pl.Series(1 + np.log(n_papers / doc_freq)),
    head_share=pl.lit(1.0), n_words=pl.lit(2, pl.Int32),
)
paper_ids = pl.Series([f"p_{i:016x}" for i in range(n_papers)])
parts = [counts.slice(0, len(counts) // 2), counts.slice(len(counts) // 2)]
del counts
peak = [0.0]
def sample():
    while True:
        peak[0] = max(peak[0], rss_gb())
        time.sleep(0.005)
before = rss_gb()
threading.Thread(target=sample, daemon=True).start()
best, weights = term_weights.weigh(parts, table, vocabulary, paper_ids, 30)
result_gb = best.estimated_size() / 1e9 + weights.matrix.data.nbytes * 1.5 / 1e9  # the matrix: weights, columns
print(best.height, weights.matrix.nnz, peak[0] - before, result_gb)
"""


def test_the_weighing_holds_its_rows_once():
    """The weighed chunks' rows were kept apart and then joined: held twice (10^6 papers: 1.8 GB each time)."""
    best_rows, entries, growth, result = map(float, _measure(_WEIGH_COUNTS))
    assert best_rows == entries == 6_000_000  # 30 of each paper's 40 terms, and 30 in the matrix
    # Written in place, the rows and the result built from them grew the process by about 2.1 times
    # the result (0.70 GB); held twice, 3.6 times (1.21 GB).
    assert growth < 2.8 * result, (growth, result)
