import textwrap
from pathlib import Path

import polars as pl
import pytest

from paperhouse.ingest import AcceptanceRules, parse_header, read_records, split_paragraphs

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


def test_paragraphs_split_on_blank_lines_and_header_is_not_an_abstract():
    header, paragraphs = split_paragraphs("ICLR 2026 Papers\r\n\r\nfirst\r\nline two\r\n \r\n\r\nsecond\r\n")
    assert header.text == "ICLR 2026 Papers"
    assert paragraphs == ["first\nline two", "second"]


def test_file_without_header_starts_with_record_one():
    header, paragraphs = split_paragraphs(ABSTRACT + "\n\n" + ABSTRACT)
    assert header.text is None
    assert len(paragraphs) == 2


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
    reasons = dict(zip(records["record_no"], records["reject_reason"]))
    assert reasons[1] is None and reasons[5] is None
    assert reasons[2].startswith("too short")
    assert reasons[3].startswith("too long")
    assert reasons[4].startswith("not prose")
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
