"""Read a folder of abstract lists into one Polars frame of records, with provenance.

Every paragraph read becomes exactly one row: accepted (``reject_reason`` null) or
rejected with a reason. A file that yields no paragraph at all (undecodable, binary,
empty, header only, unreadable) becomes one row with a null ``record_no``. Nothing read
is dropped silently.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from paperhouse.encoding import UndecodableFile, decode
from paperhouse.normalize import clean_text, normalized_text

# A paragraph ends at a line that is empty or holds only whitespace.
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\f\v\u00a0\u3000]*\n")
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


@dataclass(frozen=True)
class AcceptanceRules:
    """What a paragraph must look like to count as an abstract."""

    min_chars: int = 100
    max_chars: int = 20_000
    min_letter_share: float = 0.5
    excerpt_chars: int = 200


@dataclass(frozen=True)
class Header:
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


def _is_header(line: str) -> bool:
    line = line.strip()
    return 0 < len(line) <= 120 and len(line.split()) <= 16 and not line.endswith((".", "!", "?", "。"))


def split_paragraphs(text: str) -> tuple[Header, list[str]]:
    """Split a decoded file into its header and its paragraphs (line breaks kept)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    paragraphs = [p.strip("\n") for p in _PARAGRAPH_BREAK.split(text)]
    paragraphs = [p for p in paragraphs if p.strip()]
    if not paragraphs:
        return Header(None, None, None), []
    first_line, _, rest_of_first = paragraphs[0].partition("\n")
    if not _is_header(first_line):
        return Header(None, None, None), paragraphs
    remaining = ([rest_of_first] if rest_of_first.strip() else []) + paragraphs[1:]
    return parse_header(first_line.strip()), remaining


def list_seed_files(seeds_dir: Path, glob: str = "*.txt") -> list[Path]:
    """Every ``*.txt`` directly in the folder, in a stable order."""
    return sorted(p for p in seeds_dir.glob(glob) if p.is_file())


def folder_fingerprint(seeds_dir: Path) -> str:
    """A hash of the folder's list files by name and content: it changes when a file is added,
    changed or removed, and not when a file is only touched."""
    digest = hashlib.sha256()
    for path in list_seed_files(seeds_dir):
        digest.update(path.name.encode() + b"\0")
        try:
            with open(path, "rb") as handle:
                digest.update(hashlib.file_digest(handle, "sha256").digest())
        except OSError as error:  # an unreadable file still counts, by its error
            digest.update(str(error).encode())
    return digest.hexdigest()


def read_file_records(path: Path) -> dict[str, list]:
    """The rows of one file as columns (see ``RECORD_SCHEMA``)."""
    columns: dict[str, list] = {name: [] for name in RECORD_SCHEMA}

    def add(record_no, raw_text, reject_reason, digest, size, encoding, header: Header):
        for name, value in zip(
            RECORD_SCHEMA,
            (path.name, digest, size, encoding, header.text, header.venue, header.year, record_no, raw_text, reject_reason),
        ):
            columns[name].append(value)

    no_header = Header(None, None, None)
    try:
        data = path.read_bytes()
    except OSError as error:
        add(None, None, f"unreadable file: {error.strerror or error}", None, None, None, no_header)
        return columns
    digest = hashlib.sha256(data).hexdigest()
    try:
        decoded = decode(data)
    except UndecodableFile as error:
        add(None, None, str(error), digest, len(data), None, no_header)
        return columns
    header, paragraphs = split_paragraphs(decoded.text)
    if not paragraphs:
        reason = "header only, no abstracts" if header.text else "no paragraphs"
        add(None, None, reason, digest, len(data), decoded.encoding, header)
    for record_no, paragraph in enumerate(paragraphs, start=1):
        add(record_no, paragraph, None, digest, len(data), decoded.encoding, header)
    return columns


def read_records(seeds_dir: Path, rules: AcceptanceRules = AcceptanceRules(), glob: str = "*.txt") -> pl.DataFrame:
    """All records of all seed files, normalised and judged; one row per paragraph or failed file."""
    frames = [pl.DataFrame(read_file_records(path), schema=RECORD_SCHEMA) for path in list_seed_files(seeds_dir, glob)]
    raw = pl.concat(frames) if frames else pl.DataFrame(schema=RECORD_SCHEMA)
    return judge_records(raw.lazy(), rules).collect()


def read_abstracts(seeds_dir: Path, glob: str = "*.txt") -> list[str]:
    """The accepted abstracts of a folder, as text: material for synthetic and evaluation corpora."""
    records = read_records(seeds_dir, glob=glob)
    return records.filter(pl.col("reject_reason").is_null())["text"].to_list()


def judge_records(records: pl.LazyFrame, rules: AcceptanceRules) -> pl.LazyFrame:
    """Add the display and matching texts, and a reason for each paragraph that is no abstract."""
    text = clean_text(pl.col("raw_text"))
    n_chars = pl.col("text").str.len_chars()
    letter_share = pl.col("text").str.count_matches(r"\p{L}") / pl.max_horizontal(n_chars, 1)
    paragraph_reason = (
        pl.when(n_chars > rules.max_chars)
        .then(pl.format("too long for one abstract: {} characters (blank lines between abstracts missing?)", n_chars))
        .when(n_chars < rules.min_chars)
        .then(pl.format("too short for an abstract: {} characters", n_chars))
        .when(letter_share < rules.min_letter_share)
        .then(pl.format("not prose: only {}% of characters are letters", (letter_share * 100).round(0).cast(pl.Int32)))
    )
    return (
        records.with_columns(text=text)
        .with_columns(reject_reason=pl.coalesce(pl.col("reject_reason"), paragraph_reason))
        .with_columns(
            excerpt=pl.col("text").str.slice(0, rules.excerpt_chars),
            # Rejected paragraphs keep an excerpt only: a multi-megabyte blob has no place in the warehouse.
            raw_text=pl.when(pl.col("reject_reason").is_null()).then(pl.col("raw_text")),
            text=pl.when(pl.col("reject_reason").is_null()).then(pl.col("text")),
        )
        .with_columns(normalized_text=normalized_text(pl.col("text")))
    )
