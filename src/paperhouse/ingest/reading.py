"""Read a folder of abstract lists into one Polars frame of records, with provenance.

Every paragraph of a text list and every row of a structured file (CSV, TSV, JSON lines, JSON)
read becomes exactly one row: accepted (``reject_reason`` null) or rejected with a reason. A file
that yields no record at all (undecodable, binary, empty, header only, unreadable, changing while
read, a table without an abstract column) and an entry that is no file (a folder, a link that
loops or dangles, a pipe) becomes one row with a null ``record_no``. A companion table (decisions
beside a list, ``paperhouse.ingest.input_files``) is listed but yields no rows: its decisions are its
list's. Nothing read is dropped silently.

Reading is split so that runs can be incremental: ``read_folder`` hashes every file and
parses only contents it is not told are ``known``, handing each parsed batch on as soon as it
is parsed; ``paperhouse.ingest.parse_cache`` keeps the parsed rows of each content by its key (a text
list's SHA-256; a structured file's with its sidecar, companion and name-given venue) in DuckDB
and puts the folder's records together from new and cached rows. ``read_records`` (there) does
both into an in-memory database, with nothing known.

Text lists are parsed by ``paperhouse.ingest.text_lists``, structured files by
``paperhouse.ingest.structured_inputs``, on batches of file contents; every record is then repaired and
judged by ``paperhouse.ingest.judging``, whatever its format.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import os
import stat
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from paperhouse.ingest.encoding import UndecodableFile, decode
from paperhouse.ingest.input_files import INPUT_PATTERNS, SIDECAR_PATTERNS, plan_folder
from paperhouse.ingest.judging import READ_REPAIR, REPAIRS, AcceptanceRules, judge_records, repair_paragraphs
from paperhouse.ingest.structured_inputs import (
    FALLBACK_EXCERPT,
    METADATA_SCHEMA,
    TableContent,
    TableSource,
    parse_tables,
)
from paperhouse.ingest.text_lists import (
    RECORD_SCHEMA,
    DecodedContent,
    Header,
    parse_contents,
    parse_header,
    split_paragraphs,
)

__all__ = [  # the parsers' and judge's names, read from here as before they had modules of their own
    "REPAIRS",
    "AcceptanceRules",
    "DecodedContent",
    "Header",
    "judge_records",
    "parse_contents",
    "parse_header",
    "repair_paragraphs",
    "split_paragraphs",
]

SOURCE_RECORD_SCHEMA = {
    **RECORD_SCHEMA,
    **METADATA_SCHEMA,
    "text": pl.String,
    "excerpt": pl.String,
    "normalized_text": pl.String,
    "repairs": pl.String,  # what cleaning repaired in an accepted record: names of REPAIRS, comma-separated
}
# What the parse cache keeps per file content: a source record without its file name, by the
# content's key (see read_folder).
PARSED_RECORD_SCHEMA = {
    "content_key": pl.String,
    **{name: dtype for name, dtype in SOURCE_RECORD_SCHEMA.items() if name != "source_file"},
}
# One row per entry of the seeds folder that matches the glob: what a run saw and did with it.
SEED_FILE_SCHEMA = {
    "source_file": pl.String,
    "file_sha256": pl.String,
    "file_bytes": pl.Int64,
    # parsed | reused (unchanged content, parse cache) | unread (see reason) | companion (decisions
    # for the list named in reason: no records of its own)
    "status": pl.String,
    "reason": pl.String,
    "content_key": pl.String,  # the parse cache's key of its content; null when unread or a companion
}
# The parsing code's revision: raise it with any change to how bytes become judged records (the
# modules of PARSING_MODULES); tests/test_parser_revision.py holds the sources it was set for.
PARSER_REVISION = "2026-12-07.4"
PARSING_MODULES = (
    "encoding.py",
    "reading.py",
    "normalize.py",
    "text_lists.py",
    "judging.py",
    "table_reading.py",
    "row_recovery.py",
    "structured_inputs.py",
    "input_files.py",
)
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


def scan_folder(seeds_dir: Path, glob: str | tuple[str, ...] = INPUT_PATTERNS) -> list[FolderEntry]:
    """Every entry directly in the folder whose name matches (any of) ``glob``, in a stable order.

    Symbolic links to files are followed; links that loop or dangle, folders, pipes and
    devices that carry a matching name are listed with the reason they are not read.
    """
    with os.scandir(seeds_dir) as entries:
        names = sorted(entry.name for entry in entries if _matches(entry.name, glob))
    return [FolderEntry(display_name(name), seeds_dir / name, _entry_problem(seeds_dir / name)) for name in names]


def _matches(name: str, glob: str | tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in ((glob,) if isinstance(glob, str) else glob))


def list_seed_files(seeds_dir: Path, glob: str | tuple[str, ...] = INPUT_PATTERNS) -> list[Path]:
    """Every readable list (text or structured) directly in the folder, in a stable order."""
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


def folder_fingerprint(seeds_dir: Path, glob: str | tuple[str, ...] = INPUT_PATTERNS) -> str:
    """A hash of the folder's list files and structured files' sidecars by name and content: it
    changes when a file is added, changed or removed, and not when a file is only touched."""
    digest = hashlib.sha256()
    patterns = ((glob,) if isinstance(glob, str) else glob) + SIDECAR_PATTERNS
    for entry in scan_folder(seeds_dir, patterns):
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


def decode_content(data: bytes, digest: str) -> DecodedContent:
    try:
        decoded = decode(data)
    except UndecodableFile as error:
        return DecodedContent(digest, len(data), reject_reason=str(error))
    return DecodedContent(digest, len(data), decoded.encoding, decoded.text)


def content_key(sha256: str, source: TableSource | None) -> str:
    """The parse cache's key of a file's content: a text list's SHA-256, or a structured file's
    hashed with what else its rows depend on (``source``, from ``paperhouse.ingest.input_files.plan_folder``)."""
    return sha256 if source is None else source.content_key(sha256)


def file_content(data: bytes, sha256: str, source: TableSource | None) -> DecodedContent | TableContent:
    """A file's bytes decoded, as a batch item of ``parse_batch``: a text list's, or (with its
    ``source``) a structured file's."""
    decoded = decode_content(data, sha256)
    return decoded if source is None else TableContent(content_key(sha256, source), *decoded, source)


@dataclass(frozen=True)
class FolderRead:
    """One pass over the seeds folder: every entry, and what was done with it."""

    files: pl.DataFrame  # SEED_FILE_SCHEMA

    @property
    def shas(self) -> set[str]:
        return set(self.files["file_sha256"].drop_nulls().to_list())

    @property
    def content_keys(self) -> set[str]:
        """The parse cache's keys of the contents the folder holds (companions have none)."""
        return set(self.files["content_key"].drop_nulls().to_list())

    def count(self, status: str) -> int:
        return self.files.filter(pl.col("status") == status).height


def read_folder(
    seeds_dir: Path,
    keep: Callable[[pl.DataFrame], None],
    rules: AcceptanceRules = AcceptanceRules(),
    known: set[str] | frozenset[str] = frozenset(),
    glob: str | tuple[str, ...] = INPUT_PATTERNS,
) -> FolderRead:
    """Read (and hash) every file of the folder; parse only contents whose key is not ``known``.

    A text list's key is its SHA-256; a structured file's hashes its SHA-256 with what else its
    rows depend on (``paperhouse.ingest.input_files``). The judged rows (``PARSED_RECORD_SCHEMA``) go to
    ``keep`` a batch at a time, as they are parsed, each content whole in one batch: nothing holds
    all of them. A content is parsed once however many files hold it. Files that cannot be read
    whole (not a file, unreadable, changing while read) are listed as ``unread`` with the reason.
    """
    files: dict[str, list] = {name: [] for name in SEED_FILE_SCHEMA}
    entries = scan_folder(seeds_dir, glob)
    plan = plan_folder(entries, read_snapshot)

    def listed(entry: FolderEntry, snapshot: Snapshot, status: str, reason: str | None, key: str | None) -> None:
        size = None if snapshot.data is None else len(snapshot.data)
        for name, value in zip(SEED_FILE_SCHEMA, (entry.name, snapshot.sha256, size, status, reason, key), strict=True):
            files[name].append(value)

    def new_contents() -> Iterator[DecodedContent | TableContent]:
        """Each content not seen before, decoded; every entry read is listed in ``files`` on the way."""
        seen = set(known)
        for entry in entries:
            if entry.name in plan.companions:
                served, snapshot = plan.companions[entry.name]
                listed(entry, snapshot, "companion", f"decisions for {served}", None)
                continue
            snapshot = Snapshot(None, None, entry.problem) if entry.problem else read_snapshot(entry.path)
            if snapshot.data is None:
                listed(entry, snapshot, "unread", snapshot.problem, None)
                continue
            source = plan.sources.get(entry.name)
            key = content_key(snapshot.sha256, source)
            listed(entry, snapshot, "reused" if key in known else "parsed", None, key)
            if key not in seen:
                seen.add(key)
                yield file_content(snapshot.data, snapshot.sha256, source)

    _parse_in_batches(new_contents(), rules, keep)
    return FolderRead(files=pl.DataFrame(files, schema=SEED_FILE_SCHEMA))


def _parse_in_batches(
    contents: Iterable[DecodedContent | TableContent], rules: AcceptanceRules, keep: Callable[[pl.DataFrame], None]
) -> None:
    """Polars parses ``_PARSERS`` batches at a time in worker threads while this thread reads and
    decodes the next and hands the parsed ones to ``keep``, in order; no more than ``_PARSERS`` + 1
    batches are held."""
    in_flight: deque[Future[pl.DataFrame]] = deque()
    with ThreadPoolExecutor(max_workers=_PARSERS) as parsers:
        for batch in content_batches(contents, _BATCH_BYTES):
            if len(in_flight) == _PARSERS:
                keep(in_flight.popleft().result())
            in_flight.append(parsers.submit(parse_batch, batch, rules))
        while in_flight:
            keep(in_flight.popleft().result())


def content_batches(
    contents: Iterable[DecodedContent | TableContent], max_bytes: int = _BATCH_BYTES
) -> Iterator[list[DecodedContent | TableContent]]:
    """``contents`` in order, in lists of about ``max_bytes`` of files each (a content is never split)."""
    batch, batch_bytes = [], 0
    for content in contents:
        batch.append(content)
        batch_bytes += content.file_bytes
        if batch_bytes >= max_bytes:
            yield batch
            batch, batch_bytes = [], 0
    if batch:
        yield batch


def parse_batch(contents: list[DecodedContent | TableContent], rules: AcceptanceRules) -> pl.DataFrame:
    """The judged rows (``PARSED_RECORD_SCHEMA``) of a batch of decoded contents, text lists and
    structured files mixed: what ``read_folder`` hands to ``keep``, and what a Spark task runs."""
    texts = [content for content in contents if isinstance(content, DecodedContent)]
    tables = [content for content in contents if isinstance(content, TableContent)]
    frames = []
    if texts:  # a text list's key is its SHA-256; it carries none of a structured row's metadata
        frames.append(
            parse_contents(texts).with_columns(
                content_key=pl.col("file_sha256"),
                **{name: pl.lit(None, dtype) for name, dtype in METADATA_SCHEMA.items()},
                **{FALLBACK_EXCERPT: pl.lit(None, pl.String), READ_REPAIR: pl.lit(None, pl.String)},
            )
        )
    if tables:
        frames.append(parse_tables(tables))
    records = pl.concat(frames, how="diagonal_relaxed").lazy()
    return (
        judge_records(records, rules)
        # A rejected row without text to show (no abstract) shows its title or id instead.
        .with_columns(excerpt=pl.coalesce("excerpt", FALLBACK_EXCERPT))
        .select(list(PARSED_RECORD_SCHEMA))
        .collect()
    )


def parser_version(rules: AcceptanceRules = AcceptanceRules()) -> str:
    """Changes whenever the code, rules or columns that turn bytes into judged records change:
    cached parses of another version are not reused. The code's part is ``PARSER_REVISION``, a
    constant, so a run never reads its own sources (an installed package, or a checkout the
    run's user cannot read, has none to read); ``tests/test_parser_revision.py`` fails when the
    parsing modules change and the revision does not."""
    digest = hashlib.sha256(PARSER_REVISION.encode() + repr(rules).encode() + repr(PARSED_RECORD_SCHEMA).encode())
    return digest.hexdigest()[:16]
