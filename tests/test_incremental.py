"""Incremental ingest: every file is hashed, only new contents are parsed, and the records are the
same as a full parse would give."""

import shutil
from types import SimpleNamespace

import polars as pl
import pytest
from corpus import SEEDS, seed_abstracts

from paperhouse.ingest import parse_cache
from paperhouse.ingest.parse_cache import read_records
from paperhouse.ingest.reading import AcceptanceRules
from paperhouse.warehouse.database import ROW_GROUP_ROWS, connect

ABSTRACTS = seed_abstracts()


@pytest.fixture
def folder(tmp_path):
    target = tmp_path / "seeds"
    shutil.copytree(SEEDS, target)
    return target


def ingest(folder, database, **options) -> SimpleNamespace:
    """What the ingest did (``folder``, ``forgotten``) and the ``records`` it left in raw.source_records."""
    with connect(database) as con:
        intake = parse_cache.ingest(con, folder, run_id="test", **options)
        return SimpleNamespace(**vars(intake), records=parse_cache.source_records(con))


def statuses(intake) -> dict[str, str]:
    return dict(intake.folder.files.select("source_file", "status").iter_rows())


def cache_contents(database) -> set[str]:
    """The contents the cache holds, by key (a text list's key is its SHA-256)."""
    with connect(database, read_only=True) as con:
        files = {key for (key,) in con.execute("select content_key from raw.parsed_files").fetchall()}
        records = {key for (key,) in con.execute("select distinct content_key from raw.parsed_records").fetchall()}
    assert files == records
    return files


def test_unchanged_files_are_hashed_not_parsed_and_give_the_same_records(folder, tmp_path, monkeypatch):
    database = tmp_path / "build.duckdb"
    first = ingest(database=database, folder=folder)
    assert set(statuses(first).values()) == {"parsed"}

    import paperhouse.ingest.reading as ingest_module

    parsed = []
    real_decode = ingest_module.decode_content
    monkeypatch.setattr(
        ingest_module, "decode_content", lambda data, digest: parsed.append(digest) or real_decode(data, digest)
    )
    second = ingest(database=database, folder=folder)
    assert parsed == []  # nothing parsed again
    assert set(statuses(second).values()) == {"reused"}
    assert second.records.equals(first.records)
    assert second.records.equals(read_records(folder))  # the same as a parse from scratch


def test_only_the_changed_file_is_parsed_and_removed_files_drop_out(folder, tmp_path):
    database = tmp_path / "build.duckdb"
    ingest(database=database, folder=folder)
    files = sorted(folder.glob("*.txt"))
    files[0].write_text(files[0].read_text() + f"\n\n{ABSTRACTS[0]} A sentence that makes it a new version.\n")
    files[1].unlink()
    (folder / "new.txt").write_text(f"NeurIPS 2025 Papers\n\n{ABSTRACTS[1]}\n")

    intake = ingest(database=database, folder=folder)
    status = statuses(intake)
    assert status == {files[0].name: "parsed", files[2].name: "reused", files[3].name: "reused", "new.txt": "parsed"}
    assert files[1].name not in set(intake.records["source_file"])
    assert intake.forgotten == 2  # the removed file, and the old version of the changed one
    assert cache_contents(database) == set(intake.folder.files["file_sha256"])
    assert intake.records.equals(read_records(folder))


def test_renamed_and_copied_files_cost_no_parse(folder, tmp_path):
    database = tmp_path / "build.duckdb"
    ingest(database=database, folder=folder)
    some = sorted(folder.glob("*.txt"))[0]
    shutil.copyfile(some, folder / "copy of the list.txt")
    some.rename(folder / "renamed list.txt")
    intake = ingest(database=database, folder=folder)
    assert intake.folder.count("parsed") == 0
    assert intake.records.equals(read_records(folder))


def test_one_content_in_two_new_files_is_parsed_once(tmp_path, monkeypatch):
    import paperhouse.ingest.reading as ingest_module

    folder = tmp_path / "seeds"
    folder.mkdir()
    for name in ("a.txt", "b.txt"):
        (folder / name).write_text(f"ICLR 2026 Papers\n\n{ABSTRACTS[0]}\n")
    parsed = []
    real_decode = ingest_module.decode_content
    monkeypatch.setattr(
        ingest_module, "decode_content", lambda data, digest: parsed.append(digest) or real_decode(data, digest)
    )
    intake = ingest(database=tmp_path / "build.duckdb", folder=folder)
    assert len(parsed) == 1 and intake.records.height == 2


def test_full_refresh_parses_everything_and_gives_the_same_records(folder, tmp_path):
    database = tmp_path / "build.duckdb"
    first = ingest(database=database, folder=folder)
    refreshed = ingest(database=database, folder=folder, full_refresh=True)
    assert set(statuses(refreshed).values()) == {"parsed"}
    assert refreshed.records.equals(first.records)
    assert cache_contents(database) == set(first.folder.files["file_sha256"])


def test_a_new_parser_version_parses_again(folder, tmp_path):
    database = tmp_path / "build.duckdb"
    ingest(database=database, folder=folder)
    stricter = AcceptanceRules(min_chars=1500)
    intake = ingest(database=database, folder=folder, rules=stricter)
    assert set(statuses(intake).values()) == {"parsed"}
    assert intake.records.equals(read_records(folder, stricter))
    assert intake.records.filter(pl.col("reject_reason").is_null()).height < read_records(folder).height


def test_a_failed_ingest_leaves_cache_and_records_as_they_were(folder, tmp_path, monkeypatch):
    """The cache, raw.seed_files and raw.source_records are written in one transaction."""
    database = tmp_path / "build.duckdb"
    ingest(database=database, folder=folder)
    with connect(database, read_only=True) as con:
        before = {
            t: con.execute(f"select * from raw.{t} order by all").fetchall()
            for t in ("parsed_files", "parsed_records", "seed_files", "source_records")
        }
    (folder / "new.txt").write_text(f"ICLR 2026 Papers\n\n{ABSTRACTS[2]} Revised.\n")
    sorted(folder.glob("0*.txt"))[0].unlink()

    def fail(con, table, frame):
        if table == "seed_files":  # after the new content went into the cache
            raise RuntimeError("disk full")
        return real_write(con, table, frame)

    real_write = parse_cache.write_table
    monkeypatch.setattr(parse_cache, "write_table", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        ingest(database=database, folder=folder)
    with connect(database, read_only=True) as con:
        after = {t: con.execute(f"select * from raw.{t} order by all").fetchall() for t in before}
    assert after == before


def test_a_cache_entry_whose_rows_do_not_add_up_is_parsed_again(folder, tmp_path):
    database = tmp_path / "build.duckdb"
    first = ingest(database=database, folder=folder)
    damaged = first.folder.files["file_sha256"][0]
    with connect(database) as con:  # rows lost behind the cache's back
        con.execute("delete from raw.parsed_records where file_sha256 = ? and record_no = 3", [damaged])
    intake = ingest(database=database, folder=folder)
    assert intake.folder.files.filter(pl.col("status") == "parsed")["file_sha256"].to_list() == [damaged]
    assert intake.records.equals(first.records)


def test_more_new_records_than_one_append_are_kept_whole(tmp_path):
    # The cache is created and filled in one transaction, two row groups per append.
    folder = tmp_path / "seeds"
    folder.mkdir()
    paragraphs = parse_cache.APPEND_ROWS + 1_000
    (folder / "many.txt").write_text(
        "Workshop 2026 Papers\n\n" + "\n\n".join(f"note {i}" for i in range(paragraphs)) + "\n"
    )
    intake = ingest(folder=folder, database=tmp_path / "build.duckdb")
    assert intake.records.height == paragraphs
    assert intake.records["record_no"].to_list() == list(range(1, paragraphs + 1))


@pytest.mark.slow
def test_a_first_build_and_a_full_refresh_write_each_text_once(tmp_path):
    """With no cached row to keep, the staged rows become the cache, and the checkpoint keeps the
    blocks they were staged in: copied into the cache, or staged in row groups left part full, the
    texts were compressed and written again, and the file kept the first copy's blocks free."""
    folder = tmp_path / "seeds"
    folder.mkdir()
    # The first list passes two row groups by a part of one; both together make three.
    sizes = {"a.txt": parse_cache.APPEND_ROWS + 1000, "b.txt": ROW_GROUP_ROWS - 1000}
    for name, paragraphs in sizes.items():
        texts = (f"{ABSTRACTS[i % len(ABSTRACTS)]} {name} variant {i}." for i in range(paragraphs))
        (folder / name).write_text("ICLR 2026 Papers\n\n" + "\n\n".join(texts) + "\n")
    database = tmp_path / "build.duckdb"

    def blocks() -> tuple[int, int]:
        with connect(database, read_only=True) as con:
            return con.execute(
                "select used_blocks, free_blocks from pragma_database_size() where database_name = current_database()"
            ).fetchone()

    first = ingest(folder, database)
    used, free = blocks()
    assert first.records.height == sum(sizes.values()) and free < used / 10, (used, free)
    refreshed = ingest(folder, database, full_refresh=True)
    assert refreshed.records.equals(first.records)
    assert blocks()[0] <= used * 1.1  # the replaced cache's blocks are free, not added to


def test_a_paragraph_as_written_is_kept_only_where_cleaning_changed_it(tmp_path):
    folder = tmp_path / "seeds"
    folder.mkdir()
    (folder / "lists.txt").write_text(
        f"ICLR 2026 Papers\n\n{ABSTRACTS[0]}\n\n{ABSTRACTS[1].replace(' ', chr(10), 3)}\n\n{ABSTRACTS[2]}  \n"
    )
    database = tmp_path / "build.duckdb"
    records = ingest(folder, database).records
    # What readers see: every accepted paragraph as written, hard wraps and trailing spaces included.
    assert records["raw_text"].to_list() == [ABSTRACTS[0], ABSTRACTS[1].replace(" ", "\n", 3), f"{ABSTRACTS[2]}  "]
    assert records["text"].to_list() == ABSTRACTS[:3]
    with connect(database, read_only=True) as con:
        stored = [
            raw for (raw,) in con.execute("select raw_text from raw.parsed_records order by record_no").fetchall()
        ]
    assert stored == [None, ABSTRACTS[1].replace(" ", "\n", 3), f"{ABSTRACTS[2]}  "]


def test_the_cache_stores_its_texts_as_prose_whatever_their_first_rows_look_like(tmp_path):
    """The texts are compressed with FSST, named in the table, not chosen segment by segment:
    a list of a few texts repeated, on which DuckDB itself would choose a dictionary, is no exception."""
    folder = tmp_path / "seeds"
    folder.mkdir()
    repeated = (ABSTRACTS[i % 3] for i in range(3_000))
    (folder / "repeated.txt").write_text("ICLR 2026 Papers\n\n" + "\n\n".join(repeated) + "\n")
    database = tmp_path / "build.duckdb"
    assert ingest(folder, database).records.height == 3_000
    with connect(database, read_only=True) as con:
        stored = dict(
            con.execute(
                "select column_name, string_agg(distinct compression order by compression)"
                " from pragma_storage_info('raw.parsed_records') where column_name in ('text', "
                "'normalized_text', 'excerpt')"
                " and segment_type = 'VARCHAR' group by column_name"
            ).fetchall()
        )
    assert stored == {"text": "FSST", "normalized_text": "FSST", "excerpt": "FSST"}
