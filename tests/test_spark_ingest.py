"""Ingest on Spark (``paperhouse.engines.spark.ingest``) gives exactly the rows of the DuckDB engine's ingest:
``raw.source_records`` column for column (reasons, repairs, venue, year, provenance, encoding,
hash, record_no) and ``raw.seed_files``, on the bundled seeds, on a folder of bad inputs, on
structured inputs with a sidecar and a companion table, and on the real lists (with
``PAPERHOUSE_REALDATA``). No tolerance: ingest is exact on both engines.

Needs pyspark (the ``spark`` extra, which `make` installs) and a Java runtime. One local[2]
session serves the module and is stopped after it."""

import os
import shutil
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from corpus import HOSTILE_NAMES, SEEDS, awkward_texts, seed_abstracts
from polars.testing import assert_frame_equal

from paperhouse.engines.spark.frames import to_polars
from paperhouse.engines.spark.ingest import (
    parse_cache_folder,
    read_folder_on_spark,
    read_parse_cache,
    write_parse_cache,
    write_raw_table,
)
from paperhouse.evaluation import real_data
from paperhouse.ingest import parse_cache
from paperhouse.ingest.reading import PARSED_RECORD_SCHEMA, SEED_FILE_SCHEMA, SOURCE_RECORD_SCHEMA, parser_version
from paperhouse.warehouse.database import connect

pytestmark = pytest.mark.spark

ABSTRACTS = seed_abstracts()


def duckdb_ingest(folder: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``raw.source_records`` and ``raw.seed_files`` as the DuckDB engine writes them."""
    with connect(None) as con:
        intake = parse_cache.ingest(con, folder)
        return parse_cache.source_records(con), intake.folder.files


def ordered(records: pl.DataFrame) -> pl.DataFrame:
    return records.sort("source_file", "record_no", nulls_last=False)


def assert_engines_agree(spark, folder: Path, **options):
    """Both engines' raw tables are identical, every column; returns the Spark intake."""
    duck_records, duck_files = duckdb_ingest(folder)
    intake = read_folder_on_spark(spark, folder, **options)
    spark_records = to_polars(intake.records, SOURCE_RECORD_SCHEMA)
    assert_frame_equal(ordered(spark_records), ordered(duck_records))
    assert_frame_equal(intake.folder.files.sort("source_file"), duck_files.sort("source_file"))
    assert_frame_equal(to_polars(intake.seed_files, SEED_FILE_SCHEMA), intake.folder.files)
    return intake


def test_the_bundled_seeds_read_as_on_duckdb_in_tasks_on_both_cores(spark):
    intake = assert_engines_agree(spark, SEEDS)
    assert intake.read_on_driver == ()  # Spark read every list itself
    assert intake.read_partitions >= 2  # the lists spread over both cores of local[2]
    assert intake.folder.count("parsed") == len(list(SEEDS.glob("*.txt")))


def write_bad_inputs(folder: Path) -> set[str]:
    """The bad inputs of tests/test_bad_input.py and test_encoding.py's encodings in one folder;
    returns the names Spark cannot read itself (the driver must)."""
    folder.mkdir()
    header = "ICLR 2026 Papers\n\n"
    controls = [ABSTRACTS[0][:50] + "\x02" + ABSTRACTS[0][50:], ABSTRACTS[1][:40] + "\x00\x1c" + ABSTRACTS[1][40:]]
    (folder / "controls.txt").write_text(header + "\n\n".join(controls))
    (folder / "binary.txt").write_text(header + ABSTRACTS[2] + "\n\n" + "\x01\x02\x03\x04abc" * 30)
    scraped = ABSTRACTS[3].replace(" and ", " &amp; ", 1).replace(" the ", " <i>the</i> ", 1) + " &quot;x&quot;"
    (folder / "entities.txt").write_text(header + scraped)
    (folder / "sparse-looking.txt").write_bytes((ABSTRACTS[4] + "\x00" * 50).encode())
    damaged = (header + "Über “naïve” café résumés — " + ABSTRACTS[5] + "\n\n" + ABSTRACTS[6]).encode()
    cut = damaged.index(ABSTRACTS[6].encode()) + 40
    (folder / "damaged.txt").write_bytes(damaged[:cut] + b"\xff\xfe" + damaged[cut:])
    (folder / "empty.txt").write_bytes(b"")
    (folder / "header only.txt").write_text("NeurIPS 2025 Papers\n")
    (folder / "utf16.txt").write_bytes((header + ABSTRACTS[7]).encode("utf-16"))
    (folder / "gb18030.txt").write_bytes(("ICLR 2026 论文列表\n\n深度学习的研究 " + ABSTRACTS[8]).encode("gb18030"))
    plain = next(abstract for abstract in ABSTRACTS[9:] if abstract.isascii())
    (folder / "cp1252.txt").write_bytes((header + "Café “résumé”: " + plain).encode("cp1252"))
    for i, text in enumerate(awkward_texts(8)):
        (folder / f"awkward {i}.txt").write_text(text)
    for i, name in enumerate(HOSTILE_NAMES):
        (folder / name).write_text(f"{header}{ABSTRACTS[10 + i]}\n")
    (folder / "copy of controls.txt").write_bytes((folder / "controls.txt").read_bytes())  # one content, two files
    (folder / "loop.txt").symlink_to("loop.txt")
    (folder / "dangling.txt").symlink_to("missing/nowhere.txt")
    (folder / "folder.txt").mkdir()
    os.mkfifo(folder / "pipe.txt")
    (folder / "link to entities.txt").symlink_to("entities.txt")
    # Hadoop cannot carry a name that is not UTF-8, hides names starting with _ or ., and Spark
    # skips empty files.
    hidden = {"_underscore.txt", ".dot.txt", "latin1 caf\\xe9.txt", "empty.txt"}
    (folder / "_underscore.txt").write_text(f"{header}{ABSTRACTS[20]}\n")
    (folder / ".dot.txt").write_text(f"{header}{ABSTRACTS[21]}\n")
    (folder / os.fsdecode(b"latin1 caf\xe9.txt")).write_text(f"{header}{ABSTRACTS[22]}\n")
    return hidden


def test_bad_inputs_are_repaired_rejected_and_listed_as_on_duckdb(spark, tmp_path):
    folder = tmp_path / "bad"
    read_by_driver = write_bad_inputs(folder)
    intake = assert_engines_agree(spark, folder)
    assert set(intake.read_on_driver) == read_by_driver
    records = to_polars(intake.records, SOURCE_RECORD_SCHEMA)
    reasons = set(records["reject_reason"].drop_nulls().str.split(":").list.first())
    # The comparison covers these kinds of row; a folder that lost them would prove little.
    assert {"binary data", "binary file", "undecodable bytes", "empty file", "header only, no abstracts"} <= reasons
    assert {"not a file"} <= reasons and records["repairs"].drop_nulls().len() >= 2
    assert set(records["encoding"].drop_nulls()) >= {"utf-8", "utf-16", "gb18030", "cp1252"}


def test_a_file_rewritten_while_spark_reads_it_never_crashes_and_its_rows_are_of_the_bytes_listed(spark, tmp_path):
    """A writer truncates and rewrites a list in pieces as fast as it can (tests/test_bad_input.py's
    writer). Each run accounts for every paragraph, and the rows of the file are of the very bytes
    its ``raw.seed_files`` row hashed (the listing and the parse read it once), or the file is
    reported as changing, as the DuckDB engine reports it."""
    folder = tmp_path / "busy"
    folder.mkdir()
    versions = ["ICLR 2026 Papers\n\n" + "\n\n".join(ABSTRACTS[i : i + n]) + "\n" for i, n in ((0, 3), (10, 5))]
    (folder / "rewritten.txt").write_text(versions[0])
    (folder / "calm.txt").write_text(versions[1])
    stop = threading.Event()

    def writer():
        n = 0
        while not stop.is_set():
            with open(folder / "rewritten.txt", "w") as handle:
                for piece in range(0, len(versions[n % 2]), 300):
                    handle.write(versions[n % 2][piece : piece + 300])
                    handle.flush()
            n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(3):
            intake = read_folder_on_spark(spark, folder)
            records = to_polars(intake.records, SOURCE_RECORD_SCHEMA)
            assert set(records["source_file"]) == {"calm.txt", "rewritten.txt"}
            (listed,) = intake.folder.files.filter(pl.col("source_file") == "rewritten.txt").iter_rows(named=True)
            busy = records.filter(pl.col("source_file") == "rewritten.txt")
            if listed["status"] == "unread":
                assert listed["reason"].startswith("changed while being read") and busy.height == 1
            else:
                assert set(busy["file_sha256"]) == {listed["file_sha256"]}
                assert set(busy["file_bytes"]) == {listed["file_bytes"]}
            assert records.filter(pl.col("source_file") == "calm.txt")["raw_text"].to_list() == ABSTRACTS[10:15]
    finally:
        stop.set()
        thread.join()


def write_structured_inputs(folder: Path) -> None:
    """Exports of every format: a sidecar, a companion table of decisions, bad rows and files
    quarantined whole (the cases of tests/test_structured_inputs.py), beside a text list."""
    folder.mkdir()
    shutil.copy(next(SEEDS.glob("*.txt")), folder)
    pl.DataFrame(
        {
            "paper_id": ["a", "b", "c"],
            "title": ["A &amp; B", "B", "C"],
            "abstract": ABSTRACTS[:3],
            "decision": [None, None, "Accept (oral)"],
            "keywords": ["GAN; VAE", "['x', 'y']", ""],
        }
    ).write_csv(folder / "NeurIPS2022_papers.csv")
    pl.DataFrame({"paper_id": ["b", "a", "z"], "decision": ["Reject", "Accept", "Reject"]}).write_csv(
        folder / "NeurIPS2022_ratings.csv"
    )
    pl.DataFrame({"heading": ["Mapped"], "summary": [ABSTRACTS[3]], "tags": ["a;b"], "forum": ["f1"]}).write_csv(
        folder / "scrape.csv"
    )
    (folder / "scrape.csv.yml").write_text(
        "venue: ICLR\nyear: 2024\ncolumns:\n  summary: abstract\n  heading: title\n  Tags: keywords\n  forum: id\n"
    )
    pl.DataFrame({"abstract": ABSTRACTS[4:6], "keywords": ['["GAN", "VAE"]', "a, b"]}).write_csv(
        folder / "ICLR2021_papers.tsv", separator="\t"
    )
    lines = ['{"abstract": "unterminated', '["a", "list"]', "", '{"title": "no abstract key"}']
    (folder / "rows.jsonl").write_text("\n".join([f'{{"abstract": "{ABSTRACTS[6]}"}}', *lines]) + "\n")
    (folder / "acme-workshop-2019.json").write_text(f'[{{"abstract": "{ABSTRACTS[7]}", "year": "2018"}}]')
    (folder / "broken.json").write_text('[{"abstract": "a"}, {"abstract": ')
    pl.DataFrame({"paper_id": ["a"], "title": ["T"]}).write_csv(folder / "titles.csv")
    pl.DataFrame({"abstract": [ABSTRACTS[8]]}).write_csv(folder / "bad_yaml.csv")
    (folder / "bad_yaml.csv.yml").write_text("venue: [unclosed\n")


def test_structured_inputs_with_a_sidecar_and_a_companion_read_as_on_duckdb(spark, tmp_path):
    folder = tmp_path / "exports"
    write_structured_inputs(folder)
    intake = assert_engines_agree(spark, folder)
    statuses = dict(intake.folder.files.select("source_file", "status").iter_rows())
    assert statuses["NeurIPS2022_ratings.csv"] == "companion" and statuses["scrape.csv"] == "parsed"
    records = to_polars(intake.records, SOURCE_RECORD_SCHEMA)
    # What the comparison covers: decisions from the companion, a sidecar's mapping, keywords.
    assert set(records["decision"].drop_nulls()) == {"Accept", "Reject", "Accept (oral)"}
    assert records.filter(pl.col("source_file") == "scrape.csv")["venue"].to_list() == ["ICLR"]
    assert records["keywords"].drop_nulls().list.len().sum() >= 4


def test_a_rerun_parses_only_new_contents_and_takes_the_rest_from_the_cache(spark, tmp_path):
    folder, warehouse = tmp_path / "lists", tmp_path / "warehouse"
    write_structured_inputs(folder)
    cache = parse_cache_folder(warehouse)
    assert parser_version() in cache.name
    first = read_folder_on_spark(spark, folder, parse_cache=cache)
    assert first.folder.count("reused") == 0
    write_parse_cache(first, cache)
    # Mark the cached rows, so the second run shows which rows it took from the cache.
    marked = to_polars(read_parse_cache(spark, cache)).with_columns(
        header=pl.coalesce("header", pl.lit("")) + " (cached)"
    )
    shutil.rmtree(cache)
    cache.mkdir(parents=True)
    marked.write_parquet(cache / "part-0.parquet")
    (cache / "_SUCCESS").touch()

    (folder / "new.txt").write_text(f"ICLR 2026 Papers\n\n{ABSTRACTS[30]}\n")
    (folder / "scrape.csv.yml").write_text("venue: CoRL\nyear: 2021\ncolumns:\n  summary: abstract\n")  # re-parses
    (folder / "titles.csv").unlink()
    second = assert_engines_agree_but_cached(spark, folder, cache)
    statuses = dict(second.folder.files.select("source_file", "status").iter_rows())
    assert statuses["new.txt"] == statuses["scrape.csv"] == "parsed"
    assert second.folder.count("parsed") == 2 and second.folder.count("reused") == len(statuses) - 3  # + companion
    records = to_polars(second.records, SOURCE_RECORD_SCHEMA)
    from_cache = records.filter(pl.col("header").str.ends_with(" (cached)"))["source_file"].unique()
    assert set(from_cache) == {name for name, status in statuses.items() if status == "reused"}

    write_parse_cache(second, cache)
    assert to_polars(read_parse_cache(spark, cache))["content_key"].n_unique() == len(second.folder.content_keys)


def assert_engines_agree_but_cached(spark, folder: Path, cache: Path):
    """Both engines give the same rows but for the mark the cached ones carry."""
    duck_records, _ = duckdb_ingest(folder)
    intake = read_folder_on_spark(spark, folder, parse_cache=cache)
    spark_records = to_polars(intake.records, SOURCE_RECORD_SCHEMA).with_columns(
        header=pl.col("header").str.strip_suffix(" (cached)").pipe(lambda header: pl.when(header != "").then(header))
    )
    assert_frame_equal(ordered(spark_records), ordered(duck_records))
    return intake


def test_a_raw_table_is_written_as_a_parquet_folder_and_replaced(spark, tmp_path):
    intake = read_folder_on_spark(spark, SEEDS)
    folder = write_raw_table(intake.records, tmp_path / "warehouse", "source_records")
    assert folder == tmp_path / "warehouse" / "raw" / "source_records"
    written = pl.read_parquet(folder / "*.parquet")
    assert_frame_equal(ordered(written), ordered(to_polars(intake.records, SOURCE_RECORD_SCHEMA)))
    write_raw_table(intake.seed_files.limit(1), tmp_path / "warehouse", "source_records")
    assert pl.read_parquet(folder / "*.parquet").height == 1  # overwritten, not appended


@pytest.mark.skipif(not real_data.available(), reason="the real lists (PAPERHOUSE_REALDATA) are not here")
@pytest.mark.parametrize("part", ["conferences/inputs", "raw"])
def test_the_real_lists_read_as_on_duckdb(spark, part, capsys):
    started = time.perf_counter()
    intake = assert_engines_agree(spark, real_data.realdata_dir() / part)
    with capsys.disabled():
        print(
            f"\n{part}: both engines {time.perf_counter() - started:.1f} s, {intake.folder.files.height} files"
            f" read in {intake.read_partitions} Spark partitions, parsed in {intake.parse_partitions}"
        )
    assert intake.read_on_driver == ()
    assert to_polars(intake.parsed).height == to_polars(intake.records).height  # one file per content here
    assert PARSED_RECORD_SCHEMA.keys() == set(intake.parsed.columns)


def test_the_suite_s_jvms_take_its_spark_settings(spark):
    """tests/spark_conf: every JVM of the suite interprets its tiny queries and runs a light JIT and
    collector (conftest sets SPARK_CONF_DIR before any JVM starts; Spark reads its defaults there)."""
    conf = spark.sparkContext.getConf()
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "false"
    assert "-XX:TieredStopAtLevel=1" in conf.get("spark.driver.defaultJavaOptions", "")
