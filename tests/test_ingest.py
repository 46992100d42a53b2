import re
import textwrap
import threading
from pathlib import Path

import polars as pl
import pytest
from corpus import SEEDS, awkward_texts

import paperhouse.ingest.reading as ingest_module
from paperhouse.ingest.normalize import clean_text
from paperhouse.ingest.parse_cache import read_records
from paperhouse.ingest.reading import AcceptanceRules, DecodedContent, parse_contents, parse_header

ABSTRACT = (
    "Large language models are increasingly used as general problem solvers, yet their reasoning "
    "remains brittle under distribution shift. We introduce a benchmark and a training recipe."
)


def write(folder: Path, name: str, text: str, encoding: str = "utf-8", newline: str = "\n") -> Path:
    path = folder / name
    path.write_bytes(text.replace("\n", newline).encode(encoding))
    return path


@pytest.mark.parametrize(
    ("header", "venue", "year"),
    [
        ("ICLR 2026 Papers", "ICLR", 2026),
        ("ICLR 2026 论文列表", "ICLR", 2026),
        ("NeurIPS 2025 Accepted Papers", "NeurIPS", 2025),
        ("Proceedings of ACL 2024", "ACL", 2024),
        ("My reading list", "My reading", None),
    ],
)
def test_header_gives_venue_and_year(header, venue, year):
    parsed = parse_header(header)
    assert (parsed.venue, parsed.year) == (venue, year)


def parse(*texts: str) -> pl.DataFrame:
    """The parsed rows of texts given as decoded file contents, the i-th with SHA-256 ``str(i)``."""
    return parse_contents([DecodedContent(str(i), len(text), "utf-8", text) for i, text in enumerate(texts)])


def test_paragraphs_split_on_blank_lines_and_header_is_not_an_abstract():
    rows = parse("ICLR 2026 Papers\r\n\r\nfirst\r\nline two\r\n \r\n\r\nsecond\r\n")
    assert rows["header"].to_list() == ["ICLR 2026 Papers"] * 2
    assert rows["raw_text"].to_list() == ["first\nline two", "second"]
    assert rows["record_no"].to_list() == [1, 2]


def test_file_without_header_starts_with_record_one():
    rows = parse(ABSTRACT + "\n\n" + ABSTRACT)
    assert rows["header"].to_list() == [None, None]
    assert rows["record_no"].to_list() == [1, 2]


def split_by_definition(text: str) -> tuple[str | None, list[str]]:
    """Header and paragraphs as the plain definition has them: the pieces between blank lines
    (lines of spaces, tabs, form feeds, no-break or ideographic spaces), outer line breaks
    stripped, pieces of whitespace dropped; a short first line that ends no sentence is the header."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    paragraphs = [p.strip("\n") for p in re.split(r"\n[ \t\f\v\u00a0\u3000]*\n", text)]
    paragraphs = [p for p in paragraphs if p.strip()]
    if not paragraphs:
        return None, []
    first_line, _, rest = paragraphs[0].partition("\n")
    line = first_line.strip()
    if not (0 < len(line) <= 120 and len(line.split()) <= 16 and not line.endswith((".", "!", "?", "。"))):
        return None, paragraphs
    return line, ([rest] if rest.strip() else []) + paragraphs[1:]


def test_polars_split_gives_the_paragraphs_of_the_plain_definition():
    texts = awkward_texts() + [path.read_text(encoding="utf-8") for path in sorted(SEEDS.glob("*.txt"))]
    rows = parse(*texts).sort("file_sha256", "record_no", nulls_last=False)
    by_content = {sha: group for (sha,), group in rows.group_by("file_sha256", maintain_order=True)}
    for i, text in enumerate(texts):
        header, paragraphs = split_by_definition(text)
        got = by_content[str(i)]
        assert set(got["header"]) == {header}, repr(text)
        if paragraphs:
            assert got["raw_text"].to_list() == paragraphs, repr(text)
            assert got["record_no"].to_list() == list(range(1, len(paragraphs) + 1))
        else:
            assert got["reject_reason"].to_list() == ["header only, no abstracts" if header else "no paragraphs"]


def test_contents_parsed_together_keep_their_own_headers_and_numbering():
    rows = parse("ICLR 2026 Papers\n\none\n\ntwo", "NeurIPS 2025 Papers\n\n", "It ends.\n\nSo does this.")
    assert rows.sort("file_sha256", "record_no", nulls_last=False).select(
        "file_sha256", "venue", "year", "record_no", "raw_text", "reject_reason"
    ).rows() == [
        ("0", "ICLR", 2026, 1, "one", None),
        ("0", "ICLR", 2026, 2, "two", None),
        ("1", "NeurIPS", 2025, None, None, "header only, no abstracts"),
        ("2", None, None, 1, "It ends.", None),
        ("2", None, None, 2, "So does this.", None),
    ]


def test_parsing_in_small_batches_gives_the_same_records(tmp_path, monkeypatch):
    for i, text in enumerate(awkward_texts(20)):
        write(tmp_path, f"{i:02d}.txt", text)
    whole = read_records(tmp_path)
    monkeypatch.setattr(ingest_module, "_BATCH_BYTES", 1)  # one content per batch
    assert read_records(tmp_path).equals(whole)


def test_batches_parsed_side_by_side_are_kept_in_folder_order_whatever_finishes_first(tmp_path, monkeypatch):
    for i, text in enumerate(awkward_texts(6)):
        write(tmp_path, f"{i:02d}.txt", text)
    monkeypatch.setattr(ingest_module, "_BATCH_BYTES", 1)  # one content per batch
    parse, batches = ingest_module.parse_batch, ingest_module.content_batches
    position, parsed = {}, [threading.Event() for _ in range(6)]

    def numbered(contents, max_bytes):
        for i, batch in enumerate(batches(contents, max_bytes)):
            position[batch[0].file_sha256] = i
            yield batch

    def parse_in_turn(batch, rules):
        # The earlier of two batches parsed at once finishes last: batch 0 once 1 is parsed, 2 once 3 is...
        i = position[batch[0].file_sha256]
        if i % 2 == 0:
            assert parsed[i + 1].wait(timeout=300), f"batch {i + 1} was not parsed beside batch {i}"
        rows = parse(batch, rules)
        parsed[i].set()
        return rows

    monkeypatch.setattr(ingest_module, "content_batches", numbered)
    monkeypatch.setattr(ingest_module, "parse_batch", parse_in_turn)
    kept: list[str] = []
    folder = ingest_module.read_folder(
        tmp_path, lambda parsed: kept.extend(parsed["file_sha256"].unique(maintain_order=True))
    )
    assert kept == folder.files["file_sha256"].unique(maintain_order=True).to_list() and len(kept) == 6


def test_hard_wrapped_lines_are_joined_and_provenance_kept(tmp_path):
    wrapped = textwrap.fill(ABSTRACT, width=60)
    write(tmp_path, "list.txt", f"ICLR 2026 Papers\n\n{wrapped}\n\n{ABSTRACT}\n", encoding="utf-16", newline="\r\n")
    records = read_records(tmp_path)
    assert records["record_no"].to_list() == [1, 2]
    assert records["text"][0] == records["text"][1] == ABSTRACT
    row = records.row(0, named=True)
    assert (row["source_file"], row["encoding"], row["venue"], row["year"]) == ("list.txt", "utf-16", "ICLR", 2026)
    assert len(row["file_sha256"]) == 64


def test_bad_paragraphs_are_rejected_with_reasons_and_still_numbered(tmp_path):
    blob = "x" * 3_000_000  # a multi-megabyte blob without blank lines
    numbers = "1 2 3 4 5 6 7 8 9 0 " * 10
    paragraphs = [ABSTRACT, "Page 3", blob, numbers, ABSTRACT + " Again."]
    write(tmp_path, "mixed.txt", "ICLR 2026 Papers\n\n" + "\n\n".join(paragraphs))
    records = read_records(tmp_path).sort("record_no")
    reasons = dict(zip(records["record_no"], records["reject_reason"], strict=True))
    assert reasons[1] is None and reasons[5] is None
    assert reasons[2].startswith("too short")
    assert reasons[3].startswith("too long")
    assert reasons[4] == "not prose: only 0% of characters are letters"
    assert records.filter(pl.col("record_no") == 3)["raw_text"][0] is None  # the blob is not stored
    assert len(records.filter(pl.col("record_no") == 3)["excerpt"][0]) == AcceptanceRules().excerpt_chars


def test_unusable_files_become_one_rejected_row_each(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00" * 100)
    write(tmp_path, "header_only.txt", "ICLR 2026 Papers\n\n")
    (tmp_path / "undecodable.txt").write_bytes(b"abc \x81\x20 def \x8d\x20 ghi")
    write(tmp_path, "it's; DROP TABLE x.txt", f"{ABSTRACT}\n")
    (tmp_path / "notes.md").write_text("not a list")
    records = read_records(tmp_path)
    by_file = {row["source_file"]: row for row in records.iter_rows(named=True)}
    assert set(by_file) == {"empty.txt", "binary.txt", "header_only.txt", "undecodable.txt", "it's; DROP TABLE x.txt"}
    assert by_file["empty.txt"]["reject_reason"] == "empty file"
    assert by_file["binary.txt"]["reject_reason"].startswith("binary file")
    assert by_file["header_only.txt"]["reject_reason"] == "header only, no abstracts"
    assert by_file["undecodable.txt"]["reject_reason"].startswith("cannot be decoded")
    assert by_file["it's; DROP TABLE x.txt"]["reject_reason"] is None
    assert all(by_file[name]["record_no"] is None for name in ("empty.txt", "binary.txt", "header_only.txt"))


def test_letter_share_counts_letters_of_any_script(tmp_path):
    prose = "Модели 语言 models " * 8  # 14 letters in every 17 characters
    mostly_numbers = "Table 4: 12.5 31.0 77.2 (±0.4) 18.9 " * 6  # 30 letters in 215 characters, trimmed
    write(tmp_path, "list.txt", f"{prose}\n\n{mostly_numbers}\n")
    reasons = read_records(tmp_path)["reject_reason"].to_list()
    assert reasons == [None, "not prose: only 14% of characters are letters"]


def test_text_without_entities_tags_or_control_bytes_is_only_cleaned():
    """Repairs touch nothing else: every other paragraph's text is its lines joined, as before."""
    texts = awkward_texts() + [path.read_text(encoding="utf-8") for path in sorted(SEEDS.glob("*.txt"))]
    parsed = parse(*texts).with_columns(
        plain=pl.col("record_no").is_not_null()
        & ~pl.col("raw_text").str.contains(r"[&<\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f]")
    )
    judged = ingest_module.judge_records(parsed.lazy(), AcceptanceRules(min_chars=1)).collect()
    accepted = judged.filter(pl.col("plain") & pl.col("reject_reason").is_null())
    assert accepted.height > 100
    assert accepted["repairs"].null_count() == accepted.height
    assert accepted["text"].to_list() == accepted.select(clean_text(pl.col("raw_text")))["raw_text"].to_list()
    repaired = judged.filter(pl.col("repairs").is_not_null())
    assert repaired.height and set(repaired["repairs"]) <= {"control_characters"}  # awkward_texts' stray bytes


def test_a_cache_from_before_repairs_is_parsed_again(tmp_path):
    """A cache whose columns are not today's (built before ``repairs``) is not trusted, whatever
    its parser version says."""
    from paperhouse.ingest import parse_cache
    from paperhouse.warehouse.database import connect

    folder = tmp_path / "seeds"
    folder.mkdir()
    write(folder, "list.txt", f"ICLR 2026 Papers\n\n{ABSTRACT} &quot;Quoted&quot;.\n")
    database = tmp_path / "build.duckdb"
    with connect(database) as con:
        parse_cache.ingest(con, folder)
        con.execute("drop view raw.source_records")
        con.execute("alter table raw.parsed_records drop column repairs")
    with connect(database) as con:
        intake = parse_cache.ingest(con, folder)
        records = parse_cache.source_records(con)
    assert intake.folder.count("parsed") == 1
    assert records["repairs"].to_list() == ["html_entities"]
    assert records["text"][0].endswith('"Quoted".')
