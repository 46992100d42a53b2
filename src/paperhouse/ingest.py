"""Read a folder of abstract lists into one Polars frame of records, with provenance.

Every paragraph read becomes exactly one row: accepted (``reject_reason`` null) or
rejected with a reason. A file that yields no paragraph at all (undecodable, binary,
empty, header only, unreadable, changing while read) and an entry that is no file (a
folder, a link that loops or dangles, a pipe) becomes one row with a null ``record_no``.
Nothing read is dropped silently.

Reading is split so that runs can be incremental: ``read_folder`` hashes every file and
parses only contents it is not told are ``known``, handing each parsed batch on as soon as it
is parsed; ``paperhouse.parse_cache`` keeps the parsed rows of each content by SHA-256 in
DuckDB and puts the folder's records together from new and cached rows. ``read_records``
(there) does both into an in-memory database, with nothing known.

Parsing happens in Polars, on batches of file contents: each decoded file is one row, split at
blank lines and exploded into one row per paragraph, then judged and normalised with string
expressions. No paragraph becomes a Python object (but the rare one holding an HTML entity, which
``html.unescape`` decodes), and memory is bounded by the batch.

Scraped text is repaired, not rejected: stray control bytes are dropped, HTML/XML entities
decoded and tags stripped (``paperhouse.normalize``), and ``repairs`` names what was done. Only a
paragraph that is mostly binary (or holds a run of NUL bytes, as binary data does) is rejected.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import os
import re
import stat
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple

import polars as pl

from paperhouse.encoding import UndecodableFile, decode
from paperhouse.normalize import (
    CONTROL_CHARACTERS, ENTITY_CANDIDATE, clean_text, decode_entities, normalized_text, only_where, rows_where,
    strip_controls, strip_tags,
)

# A paragraph ends at a line that is empty or holds only whitespace.
_PARAGRAPH_BREAK = r"\n[ \t\f\v\u00a0\u3000]*\n"
# Binary data pads with NUL bytes; prose never holds two in a row.
_NUL_RUN = "\x00\x00"
# What ``repairs`` may name, in the order it names them.
REPAIRS = ("html_entities", "markup", "control_characters")
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
    # More control characters and undecodable bytes than this, and a paragraph is binary data.
    max_binary_share: float = 0.1


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


SOURCE_RECORD_SCHEMA = {
    **RECORD_SCHEMA,
    "text": pl.String,
    "excerpt": pl.String,
    "normalized_text": pl.String,
    "repairs": pl.String,  # what cleaning repaired in an accepted record: names of REPAIRS, comma-separated
}
# What the parse cache keeps per file content: a source record without its file name.
PARSED_RECORD_SCHEMA = {name: dtype for name, dtype in SOURCE_RECORD_SCHEMA.items() if name != "source_file"}
# One row per entry of the seeds folder that matches the glob: what a run saw and did with it.
SEED_FILE_SCHEMA = {
    "source_file": pl.String,
    "file_sha256": pl.String,
    "file_bytes": pl.Int64,
    "status": pl.String,  # parsed | reused (unchanged content, parse cache) | unread (see reason)
    "reason": pl.String,
}
_READ_ATTEMPTS = 3
# New contents are parsed in batches of about this many bytes: many small files share one pass
# through Polars, and a folder of any size is never held in memory as text all at once.
_BATCH_BYTES = 16 << 20
# Batches parsed at once, one per core: Polars runs each string kernel of a batch on one core.
_PARSERS = 2


@dataclass(frozen=True)
class FolderEntry:
    """A name in the seeds folder that matches the glob; ``problem`` says why it cannot be read."""

    name: str  # as on disk; bytes that are not UTF-8 shown as \xNN
    path: Path
    problem: str | None = None


@dataclass(frozen=True)
class Snapshot:
    """The bytes of one file, read whole and unchanged while read, or why not."""

    data: bytes | None
    sha256: str | None
    problem: str | None = None


def display_name(name: str) -> str:
    """A file name as text: names that are not valid UTF-8 keep their odd bytes visible as ``\\xNN``."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _entry_problem(path: Path) -> str | None:
    try:
        info = os.stat(path)  # follows symbolic links
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "not a file: symbolic link loop"
        if error.errno == errno.ENOENT and path.is_symlink():
            return "not a file: dangling symbolic link"
        return f"unreadable file: {error.strerror or error}"
    if stat.S_ISDIR(info.st_mode):
        return "not a file: a folder"
    if not stat.S_ISREG(info.st_mode):
        return "not a file: a named pipe, socket or device"
    return None


def scan_folder(seeds_dir: Path, glob: str = "*.txt") -> list[FolderEntry]:
    """Every entry directly in the folder whose name matches, in a stable order.

    Symbolic links to files are followed; links that loop or dangle, folders, pipes and
    devices that carry a matching name are listed with the reason they are not read.
    """
    with os.scandir(seeds_dir) as entries:
        names = sorted(entry.name for entry in entries if fnmatch.fnmatchcase(entry.name, glob))
    return [FolderEntry(display_name(name), seeds_dir / name, _entry_problem(seeds_dir / name)) for name in names]


def list_seed_files(seeds_dir: Path, glob: str = "*.txt") -> list[Path]:
    """Every readable ``*.txt`` directly in the folder, in a stable order."""
    return [entry.path for entry in scan_folder(seeds_dir, glob) if entry.problem is None]


def _open_regular(path: Path) -> int:
    """An open descriptor of a regular file; never blocks (a pipe that appeared since the scan)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise IsADirectoryError(errno.EISDIR, "not a regular file")
    return fd


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _version(info: os.stat_result) -> tuple:
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns


def read_snapshot(path: Path, attempts: int = _READ_ATTEMPTS) -> Snapshot:
    """Read a file whole, and make sure it did not change while it was read.

    Size and modification times are compared before and after the read; a file being written
    to is read again (after a short pause) up to ``attempts`` times, then reported. A file
    replaced by a rename while being read is fine: the old version is read whole.
    """
    for attempt in range(attempts):
        try:
            fd = _open_regular(path)
        except OSError as error:
            return Snapshot(None, None, f"unreadable file: {error.strerror or error}")
        try:
            before = os.fstat(fd)
            data = _read_all(fd)
            after = os.fstat(fd)
        except OSError as error:
            return Snapshot(None, None, f"unreadable file: {error.strerror or error}")
        finally:
            os.close(fd)
        if _version(before) == _version(after) and len(data) == after.st_size:
            return Snapshot(data, hashlib.sha256(data).hexdigest())
        time.sleep(0.05 * (attempt + 1))
    return Snapshot(None, None, f"changed while being read ({attempts} attempts): it is read again on the next run")


def folder_fingerprint(seeds_dir: Path, glob: str = "*.txt") -> str:
    """A hash of the folder's list files by name and content: it changes when a file is added,
    changed or removed, and not when a file is only touched."""
    digest = hashlib.sha256()
    for entry in scan_folder(seeds_dir, glob):
        digest.update(entry.name.encode() + b"\0")
        if entry.problem is not None:
            digest.update(entry.problem.encode())
            continue
        try:
            fd = _open_regular(entry.path)
            try:
                with os.fdopen(fd, "rb", closefd=False) as handle:
                    digest.update(hashlib.file_digest(handle, "sha256").digest())
            finally:
                os.close(fd)
        except OSError as error:  # an unreadable file still counts, by its error
            digest.update(str(error).encode())
    return digest.hexdigest()


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


def decode_content(data: bytes, digest: str) -> DecodedContent:
    try:
        decoded = decode(data)
    except UndecodableFile as error:
        return DecodedContent(digest, len(data), reject_reason=str(error))
    return DecodedContent(digest, len(data), decoded.encoding, decoded.text)


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
    first_lines = firsts["text"].str.splitn("\n", 2).struct.field("field_0")
    return pl.DataFrame(
        [(sha, *_header_of(line)) for sha, line in zip(firsts["file_sha256"], first_lines)],
        schema={"file_sha256": pl.String, "header": pl.String, "venue": pl.String, "year": pl.Int32},
        orient="row",
    )


@dataclass(frozen=True)
class FolderRead:
    """One pass over the seeds folder: every entry, and what was done with it."""

    files: pl.DataFrame  # SEED_FILE_SCHEMA

    @property
    def shas(self) -> set[str]:
        return set(self.files["file_sha256"].drop_nulls().to_list())

    def count(self, status: str) -> int:
        return self.files.filter(pl.col("status") == status).height


def read_folder(
    seeds_dir: Path,
    keep: Callable[[pl.DataFrame], None],
    rules: AcceptanceRules = AcceptanceRules(),
    known: set[str] | frozenset[str] = frozenset(),
    glob: str = "*.txt",
) -> FolderRead:
    """Read (and hash) every file of the folder; parse only contents whose SHA-256 is not ``known``.

    The judged rows (``PARSED_RECORD_SCHEMA``) go to ``keep`` a batch at a time, as they are
    parsed, each content whole in one batch: nothing holds all of them. A content is parsed
    once however many files hold it. Files that cannot be read whole (not a file, unreadable,
    changing while read) are listed as ``unread`` with the reason.
    """
    files: dict[str, list] = {name: [] for name in SEED_FILE_SCHEMA}

    def new_contents() -> Iterator[DecodedContent]:
        """Each content not seen before, decoded; every entry read is listed in ``files`` on the way."""
        seen = set(known)
        for entry in scan_folder(seeds_dir, glob):
            snapshot = Snapshot(None, None, entry.problem) if entry.problem else read_snapshot(entry.path)
            if snapshot.data is None:
                status, size = "unread", None
            else:
                status, size = ("reused" if snapshot.sha256 in known else "parsed"), len(snapshot.data)
            for name, value in zip(SEED_FILE_SCHEMA, (entry.name, snapshot.sha256, size, status, snapshot.problem)):
                files[name].append(value)
            if snapshot.data is not None and snapshot.sha256 not in seen:
                seen.add(snapshot.sha256)
                yield decode_content(snapshot.data, snapshot.sha256)

    _parse_in_batches(new_contents(), rules, keep)
    return FolderRead(files=pl.DataFrame(files, schema=SEED_FILE_SCHEMA))


def _parse_in_batches(
    contents: Iterable[DecodedContent], rules: AcceptanceRules, keep: Callable[[pl.DataFrame], None]
) -> None:
    """Polars parses ``_PARSERS`` batches at a time in worker threads while this thread reads and
    decodes the next and hands the parsed ones to ``keep``, in order; no more than ``_PARSERS`` + 1
    batches are held."""
    in_flight: deque[Future[pl.DataFrame]] = deque()
    with ThreadPoolExecutor(max_workers=_PARSERS) as parsers:
        for batch in _batched(contents, _BATCH_BYTES):
            if len(in_flight) == _PARSERS:
                keep(in_flight.popleft().result())
            in_flight.append(parsers.submit(_parse_batch, batch, rules))
        while in_flight:
            keep(in_flight.popleft().result())


def _batched(contents: Iterable[DecodedContent], max_bytes: int) -> Iterator[list[DecodedContent]]:
    batch, batch_bytes = [], 0
    for content in contents:
        batch.append(content)
        batch_bytes += content.file_bytes
        if batch_bytes >= max_bytes:
            yield batch
            batch, batch_bytes = [], 0
    if batch:
        yield batch


def _parse_batch(contents: list[DecodedContent], rules: AcceptanceRules) -> pl.DataFrame:
    return judge_records(parse_contents(contents).lazy(), rules).select(list(PARSED_RECORD_SCHEMA)).collect()


def parser_version(rules: AcceptanceRules = AcceptanceRules()) -> str:
    """Changes whenever the code, rules or columns that turn bytes into judged records change:
    cached parses of another version are not reused."""
    digest = hashlib.sha256(repr(rules).encode() + repr(PARSED_RECORD_SCHEMA).encode())
    for module in ("encoding.py", "ingest.py", "normalize.py"):
        digest.update((Path(__file__).parent / module).read_bytes())
    return digest.hexdigest()[:16]


def judge_records(records: pl.LazyFrame, rules: AcceptanceRules) -> pl.LazyFrame:
    """Repair each paragraph, add the display and matching texts, what was repaired, and a reason
    for each paragraph that is no abstract."""
    text = pl.col("text")
    n_chars = text.str.len_chars()
    # Letters counted as what is not a letter: far fewer matches to find in prose.
    letters = n_chars - text.str.count_matches(r"\P{L}")
    letter_share = letters / pl.max_horizontal(n_chars, 1)
    undecodable = text.str.count_matches("\ufffd", literal=True)
    # Counted in the paragraph as read: the stripped control characters and what stays undecodable.
    binary = pl.col("_controls") + undecodable
    binary_share = binary / pl.max_horizontal(pl.col("raw_text").str.len_chars(), 1)
    paragraph_reason = (
        pl.when(n_chars > rules.max_chars)
        .then(pl.format("too long for one abstract: {} characters (blank lines between abstracts missing?)", n_chars))
        .when(pl.col("_nul_run"))
        .then(pl.format("binary data: a run of NUL bytes ({} control or undecodable characters)", binary))
        .when(binary_share > rules.max_binary_share)
        .then(pl.format(
            "binary data: {}% of characters are control bytes or undecodable",
            (binary_share * 100).round(0).cast(pl.Int32),
        ))
        .when(undecodable > 0)
        .then(pl.format("undecodable bytes: {} characters could not be decoded", undecodable))
        .when(n_chars < rules.min_chars)
        .then(pl.format("too short for an abstract: {} characters", n_chars))
        .when(letter_share < rules.min_letter_share)
        .then(pl.format("not prose: only {}% of characters are letters", (letter_share * 100).round(0).cast(pl.Int32)))
    )
    accepted = pl.col("reject_reason").is_null()
    # A rejected paragraph that held control bytes shows them as U+FFFD: an excerpt is for people and
    # for any client to display, and shows why.
    shown = only_where(
        ~accepted & (pl.col("_controls") > 0),
        pl.col("raw_text"),
        lambda raw: clean_text(raw).str.replace_all(CONTROL_CHARACTERS, "\ufffd"),
        otherwise=text,
    )
    return (
        repair_paragraphs(records)
        .with_columns(reject_reason=pl.coalesce(pl.col("reject_reason"), paragraph_reason))
        .with_columns(
            excerpt=shown.str.slice(0, rules.excerpt_chars),
            # Rejected paragraphs keep an excerpt only: a multi-megabyte blob has no place in the warehouse.
            # The paragraph as read keeps its line breaks, entities and tags, not its control bytes.
            raw_text=pl.when(accepted).then(pl.col("_without_controls")),
            text=pl.when(accepted).then(text),
            repairs=pl.when(accepted).then(pl.col("repairs")),
        )
        .with_columns(normalized_text=normalized_text(pl.col("text")))
        .drop("_controls", "_nul_run", "_without_controls")
    )


def repair_paragraphs(records: pl.LazyFrame) -> pl.LazyFrame:
    """``text``: ``raw_text`` without stray control characters, HTML/XML entities decoded, tags
    stripped, lines joined; ``repairs`` names what changed it (null when nothing did). Each repair
    runs only on the rows that a quick scan says need it. Also ``_controls`` (how many control
    characters ``raw_text`` holds), ``_nul_run`` and ``_without_controls`` for judging."""
    raw, has_controls = pl.col("raw_text"), pl.col("_has_controls")
    kept, decoded, stripped = pl.col("_without_controls"), pl.col("_decoded"), pl.col("_stripped")
    repaired = {
        REPAIRS[0]: pl.col("_entities") & (decoded != kept),
        REPAIRS[1]: stripped != decoded,
        REPAIRS[2]: has_controls,
    }
    repairs = pl.concat_str(
        [pl.when(done).then(pl.lit(name)) for name, done in repaired.items()], separator=",", ignore_nulls=True
    )
    return (
        records.with_columns(
            _has_controls=raw.str.contains(CONTROL_CHARACTERS), _entities=raw.str.contains(ENTITY_CANDIDATE)
        )
        .with_columns(
            _controls=rows_where(has_controls, raw).str.count_matches(CONTROL_CHARACTERS).fill_null(0),
            _nul_run=rows_where(has_controls, raw).str.contains(_NUL_RUN, literal=True).fill_null(False),
            _without_controls=only_where(has_controls, raw, strip_controls),
        )
        .with_columns(_decoded=only_where(pl.col("_entities"), kept, decode_entities))
        .with_columns(_stripped=only_where(decoded.str.contains("<", literal=True), decoded, strip_tags))
        .with_columns(text=clean_text(stripped), repairs=repairs)
        .with_columns(repairs=pl.when(pl.col("repairs") != "").then("repairs"))
        .drop("_has_controls", "_entities", "_decoded", "_stripped")
    )
