"""Read a folder of abstract lists into one Polars frame of records, with provenance.

Every paragraph read becomes exactly one row: accepted (``reject_reason`` null) or
rejected with a reason. A file that yields no paragraph at all (undecodable, binary,
empty, header only, unreadable, changing while read) and an entry that is no file (a
folder, a link that loops or dangles, a pipe) becomes one row with a null ``record_no``.
Nothing read is dropped silently.

Reading is split so that runs can be incremental: ``read_folder`` hashes every file and
parses only contents it is not told are ``known`` (``paperhouse.parse_cache`` keeps the
parsed rows of each content by SHA-256); ``assemble_records`` puts the folder's records
together from new and cached rows. ``read_records`` is both, with nothing known.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from paperhouse.encoding import UndecodableFile, decode
from paperhouse.normalize import clean_text, normalized_text

# A paragraph ends at a line that is empty or holds only whitespace.
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\f\v\u00a0\u3000]*\n")
# Control characters that survive ``clean_text`` (which turns tab, line breaks and form feed into spaces).
_CONTROL_CHARS = r"[\x00-\x08\x0e-\x1f\x7f]"
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


SOURCE_RECORD_SCHEMA = {**RECORD_SCHEMA, "text": pl.String, "excerpt": pl.String, "normalized_text": pl.String}
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
_UNREAD_COLUMNS = ("file_sha256", "file_bytes", "reject_reason")
_READ_ATTEMPTS = 3


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


def parse_file(data: bytes, digest: str) -> dict[str, list]:
    """The rows of one file's content as columns of ``RECORD_SCHEMA`` without ``source_file``:
    one per paragraph, or one (``record_no`` null) saying why the file holds none."""
    names = [name for name in RECORD_SCHEMA if name != "source_file"]
    columns: dict[str, list] = {name: [] for name in names}

    def add(record_no, raw_text, reject_reason, encoding, header: Header):
        values = (digest, len(data), encoding, header.text, header.venue, header.year, record_no, raw_text, reject_reason)
        for name, value in zip(names, values):
            columns[name].append(value)

    no_header = Header(None, None, None)
    try:
        decoded = decode(data)
    except UndecodableFile as error:
        add(None, None, str(error), None, no_header)
        return columns
    header, paragraphs = split_paragraphs(decoded.text)
    if not paragraphs:
        add(None, None, "header only, no abstracts" if header.text else "no paragraphs", decoded.encoding, header)
    for record_no, paragraph in enumerate(paragraphs, start=1):
        add(record_no, paragraph, None, decoded.encoding, header)
    return columns


@dataclass(frozen=True)
class FolderRead:
    """One pass over the seeds folder: what is there, and the parsed rows of new content."""

    files: pl.DataFrame  # SEED_FILE_SCHEMA
    parsed: pl.DataFrame  # PARSED_RECORD_SCHEMA: rows of the contents parsed in this pass

    @property
    def shas(self) -> set[str]:
        return set(self.files["file_sha256"].drop_nulls().to_list())

    def count(self, status: str) -> int:
        return self.files.filter(pl.col("status") == status).height


def read_folder(
    seeds_dir: Path,
    rules: AcceptanceRules = AcceptanceRules(),
    known: set[str] | frozenset[str] = frozenset(),
    glob: str = "*.txt",
) -> FolderRead:
    """Read (and hash) every file of the folder; parse only contents whose SHA-256 is not ``known``.

    A content is parsed once however many files hold it. Files that cannot be read whole
    (not a file, unreadable, changing while read) are listed as ``unread`` with the reason.
    """
    files: dict[str, list] = {name: [] for name in SEED_FILE_SCHEMA}
    parsed: dict[str, list] = {name: [] for name in RECORD_SCHEMA if name != "source_file"}
    seen = set(known)
    for entry in scan_folder(seeds_dir, glob):
        snapshot = Snapshot(None, None, entry.problem) if entry.problem else read_snapshot(entry.path)
        if snapshot.data is None:
            status, size = "unread", None
        else:
            status, size = ("reused" if snapshot.sha256 in known else "parsed"), len(snapshot.data)
            if snapshot.sha256 not in seen:
                seen.add(snapshot.sha256)
                for name, values in parse_file(snapshot.data, snapshot.sha256).items():
                    parsed[name].extend(values)
        for name, value in zip(SEED_FILE_SCHEMA, (entry.name, snapshot.sha256, size, status, snapshot.problem)):
            files[name].append(value)
    raw = pl.DataFrame(parsed, schema={n: t for n, t in RECORD_SCHEMA.items() if n != "source_file"})
    judged = judge_records(raw.lazy(), rules).select(list(PARSED_RECORD_SCHEMA)).collect()
    return FolderRead(files=pl.DataFrame(files, schema=SEED_FILE_SCHEMA), parsed=judged)


def assemble_records(files: pl.DataFrame, contents: pl.DataFrame) -> pl.DataFrame:
    """The source records of the folder: each listed file's rows by its content (``contents``:
    ``PARSED_RECORD_SCHEMA``, parsed now or taken from the cache), plus one rejected row per file
    that could not be read. Sorted by file name and position, however the rows were obtained."""
    readable = files.filter(pl.col("status") != "unread").select("source_file", "file_sha256")
    unread = files.filter(pl.col("status") == "unread").select(
        "source_file", file_sha256=pl.lit(None, pl.String), file_bytes=pl.lit(None, pl.Int64), reject_reason="reason"
    )
    return (
        pl.concat(
            [readable.join(contents, on="file_sha256", how="inner"), unread],
            how="diagonal_relaxed",
        )
        .select([pl.col(name).cast(dtype) for name, dtype in SOURCE_RECORD_SCHEMA.items()])
        .sort("source_file", "record_no", nulls_last=False)
    )


def read_records(seeds_dir: Path, rules: AcceptanceRules = AcceptanceRules(), glob: str = "*.txt") -> pl.DataFrame:
    """All records of all seed files, normalised and judged; one row per paragraph or failed file."""
    folder = read_folder(seeds_dir, rules, glob=glob)
    return assemble_records(folder.files, folder.parsed)


def read_abstracts(seeds_dir: Path, glob: str = "*.txt") -> list[str]:
    """The accepted abstracts of a folder, as text: material for synthetic and evaluation corpora."""
    records = read_records(seeds_dir, glob=glob)
    return records.filter(pl.col("reject_reason").is_null())["text"].to_list()


def parser_version(rules: AcceptanceRules = AcceptanceRules()) -> str:
    """Changes whenever the code or rules that turn bytes into judged records change: cached
    parses of another version are not reused."""
    digest = hashlib.sha256(repr(rules).encode())
    for module in ("encoding.py", "ingest.py", "normalize.py"):
        digest.update((Path(__file__).parent / module).read_bytes())
    return digest.hexdigest()[:16]


def judge_records(records: pl.LazyFrame, rules: AcceptanceRules) -> pl.LazyFrame:
    """Add the display and matching texts, and a reason for each paragraph that is no abstract."""
    text = clean_text(pl.col("raw_text"))
    n_chars = pl.col("text").str.len_chars()
    letter_share = pl.col("text").str.count_matches(r"\p{L}") / pl.max_horizontal(n_chars, 1)
    undecodable = pl.col("text").str.count_matches("\ufffd", literal=True)
    controls = pl.col("text").str.count_matches(_CONTROL_CHARS)
    paragraph_reason = (
        pl.when(n_chars > rules.max_chars)
        .then(pl.format("too long for one abstract: {} characters (blank lines between abstracts missing?)", n_chars))
        .when(undecodable > 0)
        .then(pl.format("undecodable bytes: {} characters could not be decoded", undecodable))
        .when(controls > 0)
        .then(pl.format("control characters: {} NUL or other control bytes in the text", controls))
        .when(n_chars < rules.min_chars)
        .then(pl.format("too short for an abstract: {} characters", n_chars))
        .when(letter_share < rules.min_letter_share)
        .then(pl.format("not prose: only {}% of characters are letters", (letter_share * 100).round(0).cast(pl.Int32)))
    )
    return (
        records.with_columns(text=text)
        .with_columns(reject_reason=pl.coalesce(pl.col("reject_reason"), paragraph_reason))
        .with_columns(
            # Control bytes shown as U+FFFD: an excerpt is for people and for any client to display.
            excerpt=pl.col("text").str.slice(0, rules.excerpt_chars).str.replace_all(_CONTROL_CHARS, "\ufffd"),
            # Rejected paragraphs keep an excerpt only: a multi-megabyte blob has no place in the warehouse.
            raw_text=pl.when(pl.col("reject_reason").is_null()).then(pl.col("raw_text")),
            text=pl.when(pl.col("reject_reason").is_null()).then(pl.col("text")),
        )
        .with_columns(normalized_text=normalized_text(pl.col("text")))
    )
