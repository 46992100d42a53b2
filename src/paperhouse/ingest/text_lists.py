"""The text-list parser: a decoded file is a header line naming the list, then abstracts
separated by blank lines.

Parsing happens in Polars, on batches of file contents: each decoded file is one row, split at
blank lines and exploded into one row per paragraph. No paragraph becomes a Python object, and
memory is bounded by the batch. ``parse_contents`` yields ``RECORD_SCHEMA`` rows (without the
file name), which ``paperhouse.ingest.judging`` then repairs and judges.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import polars as pl

from paperhouse.ingest.normalize import repair_text

# A paragraph ends at a line that is empty or holds only whitespace.
_PARAGRAPH_BREAK = r"\n[ \t\f\v\u00a0\u3000]*\n"
_YEAR = re.compile(r"\b(19[5-9]\d|20\d\d)\b")
# Words that describe the list rather than name the venue.
_LIST_WORDS = re.compile(
    r"\b(accepted|papers?|abstracts?|lists?|proceedings|of|the|from|main|track|conference)\b|论文列表|论文|列表",
    re.IGNORECASE,
)

RECORD_SCHEMA = {
    "source_file": pl.String,
    "file_sha256": pl.String,
    "file_bytes": pl.Int64,
    "encoding": pl.String,
    "header": pl.String,
    "venue": pl.String,
    "year": pl.Int32,
    "record_no": pl.Int32,
    "raw_text": pl.String,
    "reject_reason": pl.String,
}


class Header(NamedTuple):
    text: str | None
    venue: str | None
    year: int | None


def parse_header(line: str) -> Header:
    """``ICLR 2026 Papers`` -> venue ICLR, year 2026; a list without a year keeps its name as venue."""
    year_match = _YEAR.search(line)
    year = int(year_match.group(1)) if year_match else None
    without_year = _YEAR.sub(" ", line)
    venue = re.sub(r"\s+", " ", _LIST_WORDS.sub(" ", without_year)).strip(" -:|,·–—")
    return Header(text=line, venue=venue or None, year=year)


def _header_of(first_line: str) -> Header:
    """A short first line that ends no sentence names the list; any other line is no header."""
    line = first_line.strip()
    if 0 < len(line) <= 120 and len(line.split()) <= 16 and not line.endswith((".", "!", "?", "。")):
        return parse_header(line)
    return Header(None, None, None)


def _has_content(text: pl.Expr) -> pl.Expr:
    """Holds more than whitespace, as Python's ``str.strip`` sees it: Unicode spaces and the
    information separators U+001C to U+001F."""
    return text.str.contains(r"[^\s\x1c-\x1f]")


def split_paragraphs(texts: pl.LazyFrame) -> pl.LazyFrame:
    """One row per paragraph (line breaks kept) of each decoded ``text``, in order, with the
    other columns of its file; paragraphs of whitespace only are dropped."""
    paragraphs = (
        pl.col("text")
        .str.replace_all("\r\n", "\n", literal=True)
        .str.replace_all("\r", "\n", literal=True)
        # Each blank line becomes exactly "\n\n": what is left between them holds no "\n\n" (the
        # pattern would have matched there first), so a literal split cuts at the breaks and only there.
        .str.replace_all(_PARAGRAPH_BREAK, "\n\n")
        .str.split("\n\n")
    )
    return (
        texts.with_columns(paragraphs)
        .explode("text")
        .with_columns(pl.col("text").str.strip_chars("\n"))
        .filter(_has_content(pl.col("text")))
    )


class DecodedContent(NamedTuple):
    """One file content as text, or the reason it holds none: a row of ``parse_contents``' input."""

    file_sha256: str
    file_bytes: int
    encoding: str | None = None
    text: str | None = None
    reject_reason: str | None = None


_CONTENT_SCHEMA = {
    "file_sha256": pl.String,
    "file_bytes": pl.Int64,
    "encoding": pl.String,
    "text": pl.String,
    "reject_reason": pl.String,
}


def parse_contents(contents: list[DecodedContent]) -> pl.DataFrame:
    """The rows of these contents as columns of ``RECORD_SCHEMA`` without ``source_file``:
    one per paragraph, or one (``record_no`` null) saying why a content holds none."""
    files = pl.DataFrame(contents, schema=_CONTENT_SCHEMA, orient="row")
    paragraphs = split_paragraphs(files.lazy()).collect()
    headers = _file_headers(paragraphs)
    header_line = pl.col("file_sha256").is_first_distinct() & pl.col("header").is_not_null()
    after_first_line = pl.col("text").str.splitn("\n", 2).struct.field("field_1")
    records = (
        paragraphs.join(headers, on="file_sha256", how="left", maintain_order="left")
        # The header line is no abstract; the rest of its paragraph, if any, is.
        .with_columns(raw_text=pl.when(header_line).then(after_first_line).otherwise("text"))
        .filter(_has_content(pl.col("raw_text")))
        .with_columns(record_no=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("file_sha256"))
    )
    without_records = (
        files.join(records, on="file_sha256", how="anti")
        .join(headers, on="file_sha256", how="left")
        .with_columns(
            reject_reason=pl.coalesce(
                "reject_reason",
                pl.when(pl.col("header").is_not_null())
                .then(pl.lit("header only, no abstracts"))
                .otherwise(pl.lit("no paragraphs")),
            )
        )
    )
    columns = [name for name in RECORD_SCHEMA if name != "source_file"]
    return pl.concat([without_records, records], how="diagonal").select(
        [pl.col(name).cast(RECORD_SCHEMA[name]) for name in columns]
    )


def _file_headers(paragraphs: pl.DataFrame) -> pl.DataFrame:
    """Header, venue and year of each content, from the first line of its first paragraph (read
    in Python: one line per file)."""
    firsts = paragraphs.unique("file_sha256", keep="first", maintain_order=True)
    # Repaired as abstracts are: a header's "&amp;" or "<b>" names no venue.
    first_lines = firsts.select(repair_text(pl.col("text").str.splitn("\n", 2).struct.field("field_0"))).to_series()
    return pl.DataFrame(
        [(sha, *_header_of(line)) for sha, line in zip(firsts["file_sha256"], first_lines, strict=True)],
        schema={"file_sha256": pl.String, "header": pl.String, "venue": pl.String, "year": pl.Int32},
        orient="row",
    )
