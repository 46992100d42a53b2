"""Structured inputs: the rows of a CSV, TSV, JSON-lines or JSON file as the records a text list gives.

A row is a record: its abstract is what the judge (``paperhouse.ingest.judging``) repairs and judges, as
it does a paragraph, and the rest of the row is provenance and metadata: the paper's external id
and link, its title, authors, author keywords and decision. Venue and year come from the row's
columns, else from the file's name, else from its sidecar (``paperhouse.ingest.input_files`` reads both).
Titles, authors and keywords get the repairs abstracts get (control bytes dropped, entities
decoded, tags stripped, whitespace collapsed), so a scraped ``&amp;`` never reaches a mart.

A row that cannot be read, or has no abstract, is a rejected record with its reason; a file that
cannot be read as a table at all, or has no abstract column, is one rejected row with a null
``record_no`` (quarantined whole), as an unreadable text list is.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import NamedTuple

import polars as pl

from paperhouse.ingest.encoding import UndecodableFile, decode
from paperhouse.ingest.judging import READ_REPAIR
from paperhouse.ingest.normalize import (
    CONTROL_CHARACTERS,
    ENTITY_CANDIDATE,
    TAG_CANDIDATE,
    clean_text,
    only_where,
    repair_entities,
    strip_controls,
    strip_tag_markup,
)
from paperhouse.ingest.table_reading import PROBLEM, REPAIR, ROW, UnparsableFile, read_table
from paperhouse.ingest.text_lists import RECORD_SCHEMA

# What a structured row carries beside a text list's columns (null for text lists).
METADATA_SCHEMA = {
    "external_id": pl.String,  # the paper's id in the export (OpenReview's forum id)
    "link": pl.String,
    "title": pl.String,
    "authors": pl.String,  # "; "-separated, as listed
    "keywords": pl.List(pl.String),  # author keywords, in their order, each once
    "decision": pl.String,
}
# Shown for a rejected row that has no abstract text to show.
FALLBACK_EXCERPT = "fallback_excerpt"
TABLE_RECORD_SCHEMA = {
    "content_key": pl.String,
    **{name: dtype for name, dtype in RECORD_SCHEMA.items() if name != "source_file"},
    **METADATA_SCHEMA,
    FALLBACK_EXCERPT: pl.String,
    READ_REPAIR: pl.String,
}
_YEAR = r"\b(19[5-9]\d|20\d\d)\b"
_HAS_CONTENT = r"[^\s\x1c-\x1f]"


@dataclass(frozen=True)
class Sidecar:
    """``<file>.yml`` beside a structured file: its venue and year, and other names of its columns."""

    name: str
    sha256: str
    venue: str | None = None
    year: int | None = None
    columns: tuple[tuple[str, str], ...] = ()  # (column as the file names it, field)
    problem: str | None = None  # why the sidecar cannot be used: its file is quarantined


@dataclass(frozen=True)
class Companion:
    """A table of decisions by paper id beside a list (``X_ratings.csv`` beside ``X_papers.csv``)."""

    name: str
    sha256: str
    data: bytes
    file_format: str
    sidecar: Sidecar | None = None


@dataclass(frozen=True)
class TableSource:
    """What a structured file's rows depend on besides its bytes."""

    file_format: str  # csv, tsv, jsonl or json
    name_venue: str | None = None
    name_year: int | None = None
    sidecar: Sidecar | None = None
    companion: Companion | None = None

    def content_key(self, file_sha256: str) -> str:
        """The parse cache's key: the file's bytes with everything else its rows depend on, so a
        changed sidecar, companion or name-given venue parses the file again, and nothing else does."""
        sidecar = (self.sidecar.name, self.sidecar.sha256) if self.sidecar else None
        companion = self.companion
        parts = {
            "format": self.file_format,
            "file": file_sha256,
            "venue": self.name_venue,
            "year": self.name_year,
            "sidecar": sidecar,
            "companion": (companion.file_format, companion.sha256, companion.sidecar and companion.sidecar.sha256)
            if companion
            else None,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


class TableContent(NamedTuple):
    """One structured file content, decoded, with what its parse depends on: a batch item beside
    ``paperhouse.ingest.text_lists.DecodedContent``."""

    content_key: str
    file_sha256: str
    file_bytes: int
    encoding: str | None
    text: str | None
    reject_reason: str | None
    source: TableSource


def parse_tables(contents: list[TableContent]) -> pl.DataFrame:
    """The rows of these contents (``TABLE_RECORD_SCHEMA``), unjudged."""
    frames = [parse_table(content) for content in contents]
    return pl.concat(frames) if frames else pl.DataFrame(schema=TABLE_RECORD_SCHEMA)


def parse_table(content: TableContent) -> pl.DataFrame:
    source = content.source
    try:
        if content.reject_reason is not None:
            raise UnparsableFile(content.reject_reason)
        if source.sidecar is not None and source.sidecar.problem is not None:
            raise UnparsableFile(f"sidecar {source.sidecar.name}: {source.sidecar.problem}")
        table = read_table(content.text, source.file_format, _mapping(source.sidecar), needs=("abstract",))
        rows = _records(table.rows, source).collect()
    except UnparsableFile as error:
        return _file_row(content, str(error))
    return rows.with_columns(
        content_key=pl.lit(content.content_key),
        file_sha256=pl.lit(content.file_sha256),
        file_bytes=pl.lit(content.file_bytes, pl.Int64),
        encoding=pl.lit(content.encoding, pl.String),
    ).select([pl.col(name).cast(dtype) for name, dtype in TABLE_RECORD_SCHEMA.items()])


def _mapping(sidecar: Sidecar | None) -> dict[str, str]:
    return dict(sidecar.columns) if sidecar else {}


def _file_row(content: TableContent, reason: str) -> pl.DataFrame:
    row = {
        "content_key": content.content_key,
        "file_sha256": content.file_sha256,
        "file_bytes": content.file_bytes,
        "encoding": content.encoding,
        "reject_reason": reason,
    }
    return pl.DataFrame([row], schema=TABLE_RECORD_SCHEMA)


def _stripped(name: str) -> pl.Expr:
    """A column's text without surrounding whitespace; null when nothing is left."""
    text = pl.col(name).str.strip_chars()
    return pl.when(text != "").then(text)


def _records(rows: pl.LazyFrame, source: TableSource) -> pl.LazyFrame:
    sidecar = source.sidecar or Sidecar("", "")
    abstract = pl.col("abstract")
    records = rows.with_columns(
        record_no=pl.col(ROW),
        **{READ_REPAIR: pl.col(REPAIR)},
        header=pl.lit(None, pl.String),
        raw_text=pl.when(abstract.str.contains(_HAS_CONTENT)).then(abstract),
        external_id=_stripped("external_id"),
        link=_stripped("link"),
        decision=_stripped("decision"),
        venue=pl.coalesce(_stripped("venue"), pl.lit(source.name_venue, pl.String), pl.lit(sidecar.venue, pl.String)),
        year=pl.coalesce(
            pl.col("year").str.extract(_YEAR).cast(pl.Int32),
            pl.lit(source.name_year, pl.Int32),
            pl.lit(sidecar.year, pl.Int32),
        ),
    ).with_columns(
        reject_reason=pl.coalesce(
            pl.col(PROBLEM),
            pl.when(pl.col("raw_text").is_null()).then(pl.lit("no abstract: the row's abstract is empty")),
        )
    )
    records = _repaired(records, "title").with_columns(title=_stripped("title"))
    for field in ("keywords", "authors"):
        records = records.drop(field).join(_item_lists(rows, field), on=ROW, how="left", maintain_order="left")
    records = records.with_columns(authors=pl.col("authors").list.join("; "))
    if source.companion is not None:
        decisions = companion_decisions(source.companion)
        if decisions is not None:
            records = records.join(decisions, on="external_id", how="left", maintain_order="left").with_columns(
                decision=pl.coalesce("decision", "companion_decision")
            )
    return records.with_columns(pl.coalesce("title", "external_id", "link").str.slice(0, 200).alias(FALLBACK_EXCERPT))


def _repaired(frame: pl.LazyFrame, name: str) -> pl.LazyFrame:
    """The column repaired as abstracts are (``paperhouse.ingest.judging``): control characters dropped,
    entities decoded (broken ones too), tags and INSPEC's notation stripped, each repair only on
    the rows that need it, whitespace collapsed."""
    text = pl.col(name)
    return (
        frame.with_columns(only_where(text.str.contains(CONTROL_CHARACTERS), text, strip_controls).alias(name))
        .with_columns(only_where(text.str.contains(ENTITY_CANDIDATE), text, repair_entities).alias(name))
        .with_columns(only_where(text.str.contains(TAG_CANDIDATE), text, strip_tag_markup).alias(name))
        .with_columns(clean_text(text).alias(name))
    )


def split_items(text: pl.Expr) -> pl.Expr:
    """A list written as text: JSON or Python list text (``["GAN", "VAE"]``, ``['GAN', 'VAE']``),
    else items separated by semicolons, else by commas (``GAN; VAE``, ``GAN, VAE``).

    Separated text has its entities decoded and tags stripped before it is split: the semicolon
    of ``R&amp;D`` or ``&lt;i&gt;`` separates nothing (split first, "Q&amp;A; GAN" was "Q&amp",
    "A" and "GAN", and "R&amp;amp;D" gave a keyword "amp"). A quoted item is repaired as it is
    (``_item_lists``): its quotes decide where it ends, and a decoded ``&quot;`` would not."""
    text = text.str.strip_chars()
    listed = text.str.starts_with("[") & text.str.ends_with("]")
    inner = text.str.strip_prefix("[").str.strip_suffix("]")
    quoted = inner.str.extract_all(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'")
    decoded = only_where(inner.str.contains(ENTITY_CANDIDATE), inner, repair_entities)
    plain = only_where(decoded.str.contains(TAG_CANDIDATE), decoded, strip_tag_markup)
    semicolons = plain.str.contains(";", literal=True)
    separated = pl.when(semicolons).then(plain.str.split(";")).otherwise(plain.str.split(","))
    return pl.when(listed & (quoted.list.len() > 0)).then(quoted).otherwise(separated)


def _item_lists(rows: pl.LazyFrame, field: str) -> pl.LazyFrame:
    """ROW and the row's items of ``field`` as a list: split (entities decoded first,
    ``split_items``), repaired, quotes stripped, empty ones dropped, each once (the first spelling
    of items equal but for case)."""
    items = (
        rows.select(ROW, split_items(pl.col(field)).alias("item"))
        .explode("item")
        .with_columns(pl.col("item").str.strip_chars().str.strip_chars("\"'").str.replace_all(r'\\(["\\])', "$1"))
    )
    # Repaired after the split as well: a quoted item was not repaired before it.
    items = _repaired(items, "item").filter(pl.col("item") != "")
    return (
        items.with_columns(key=pl.col("item").str.to_lowercase())
        .unique([ROW, "key"], keep="first", maintain_order=True)
        .group_by(ROW, maintain_order=True)
        .agg(pl.col("item").alias(field))
    )


def companion_decisions(companion: Companion) -> pl.LazyFrame | None:
    """``external_id`` and ``companion_decision`` of each paper the companion decides (its first
    row for the paper); None when it cannot be read or names no decisions."""
    try:
        text = decode(companion.data).text
        table = read_table(text, companion.file_format, _mapping(companion.sidecar))
    except (UndecodableFile, UnparsableFile):
        return None
    if not {"external_id", "decision"} <= set(table.fields):
        return None
    return (
        table.rows.select(external_id=_stripped("external_id"), companion_decision=_stripped("decision"))
        .drop_nulls()
        .unique("external_id", keep="first", maintain_order=True)
    )
