"""What each file of the seeds folder is, and what its parse depends on besides its own bytes.

A text list (``*.txt``) depends on nothing else: its header names the list, and the parse cache
keys it by its SHA-256. A structured file (``*.csv``, ``*.tsv``, ``*.jsonl``, ``*.json``) may take
its venue and year from its name (``neurips_2022.csv``, ``ICLR2021_papers.tsv``), other names of
its columns and a default venue and year from a sidecar ``<file>.yml``, and each paper's decision
from a companion table beside it (``NeurIPS2022_ratings.csv`` beside ``NeurIPS2022_papers.csv``).
Its cache key hashes all of these with its bytes (``TableSource.content_key``): a changed
sidecar or companion parses the file again, a touched or renamed one does not.

A companion is a structured file named like a list with a role word (ratings, decisions,
reviews, scores) in place of the list's (papers, paperlist, abstracts, submissions), that has
no abstract column but an id and a decision column. It is listed in ``raw.seed_files`` as a
``companion`` and yields no records of its own; a file that fits only part of that is read as a
list of its own (and quarantined when it has no abstract column).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from paperhouse.ingest.encoding import UndecodableFile, decode
from paperhouse.ingest.structured_inputs import Companion, Sidecar, TableSource
from paperhouse.ingest.table_reading import FIELDS, UnparsableFile, field_named, read_table

INPUT_PATTERNS = ("*.txt", "*.csv", "*.tsv", "*.jsonl", "*.json")
TABLE_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "json"}
SIDECAR_SUFFIXES = (".yml", ".yaml")
# A sidecar is named after its file: papers.csv.yml. The sensor's fingerprint watches these too.
SIDECAR_PATTERNS = tuple(f"*{suffix}{sidecar}" for suffix in TABLE_FORMATS for sidecar in SIDECAR_SUFFIXES)
_SIDECAR_KEYS = ("venue", "year", "columns")
# Venues as they spell themselves, so that neurips_2022.csv lands in the same list as a text
# list headed "NeurIPS 2022 Papers". A name not among them is kept as written.
KNOWN_VENUES = {
    venue.lower(): venue
    for venue in (
        "AAAI",
        "ACL",
        "AISTATS",
        "CHI",
        "COLING",
        "COLT",
        "CoNLL",
        "CoRL",
        "CVPR",
        "EACL",
        "ECCV",
        "EMNLP",
        "ICASSP",
        "ICCV",
        "ICLR",
        "ICML",
        "ICRA",
        "IJCAI",
        "Interspeech",
        "IROS",
        "JMLR",
        "KDD",
        "MICCAI",
        "NAACL",
        "NeurIPS",
        "NIPS",
        "SIGIR",
        "TACL",
        "TMLR",
        "UAI",
        "WACV",
        "WWW",
    )
}
_YEAR = re.compile(r"19[5-9]\d|20\d\d")
_COMPANION_ROLE = re.compile(r"(?i)ratings?|decisions?|reviews?|scores?")
_LIST_ROLE = re.compile(r"(?i)papers?|paperlist|abstracts?|submissions?|lists?")
# Words of a file name that describe the file rather than name the venue.
_FILE_WORDS = re.compile(r"(?i)accepted|export|data|dataset|all|main|track|conference|proceedings|openreview|of|the")


def table_format(name: str) -> str | None:
    """csv, tsv, jsonl or json for a structured file's name; None for a text list."""
    return TABLE_FORMATS.get(Path(name).suffix.lower())


def name_tokens(name: str) -> list[str]:
    """The words of a file name without its suffix, split at separators and between letters and
    digits: ``evanzd_ICLR2021_paperlist.tsv`` -> evanzd, ICLR, 2021, paperlist."""
    stem = Path(name).stem
    spaced = re.sub(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])", " ", stem)
    return [token for token in re.split(r"[\s_.\-]+", spaced) if token]


def name_venue_year(name: str) -> tuple[str | None, int | None]:
    """Venue and year a file's name gives, only when it holds a year (``papers.csv``,
    ``inspec_valid.jsonl``: none); the venue is a known venue among its words, else its words."""
    tokens = name_tokens(name)
    years = [token for token in tokens if _YEAR.fullmatch(token)]
    if not years:
        return None, None
    words = [
        token
        for token in tokens
        if not token.isdigit()
        and not any(words.fullmatch(token) for words in (_COMPANION_ROLE, _LIST_ROLE, _FILE_WORDS))
    ]
    known = [KNOWN_VENUES[word.lower()] for word in words if word.lower() in KNOWN_VENUES]
    venue = known[0] if known else " ".join(words) or None
    return venue, int(years[0])


def read_sidecar(name: str, data: bytes | None, sha256: str | None, problem: str | None = None) -> Sidecar:
    """A sidecar's settings, or the problem that quarantines its file (a sidecar that cannot be
    trusted must not be half applied)."""
    if data is None:
        return Sidecar(name, sha256 or "", problem=problem or "cannot be read")
    try:
        settings = yaml.safe_load(decode(data).text) if data.strip() else {}
    except (UndecodableFile, yaml.YAMLError) as error:
        return Sidecar(name, sha256, problem=f"not YAML: {(str(error).splitlines() or ['unreadable'])[0]}")
    settings = {} if settings is None else settings
    if not isinstance(settings, dict):
        return Sidecar(name, sha256, problem="not a mapping of settings (venue, year, columns)")
    unknown = sorted(str(key) for key in settings if key not in _SIDECAR_KEYS)
    if unknown:
        known = ", ".join(_SIDECAR_KEYS)
        return Sidecar(name, sha256, problem=f"unknown settings {', '.join(unknown)} (known: {known})")
    venue, year, columns = settings.get("venue"), settings.get("year"), settings.get("columns") or {}
    if year is not None and not (isinstance(year, (int, str)) and _YEAR.fullmatch(str(year).strip())):
        return Sidecar(name, sha256, problem=f"year {year!r} is no year")
    if not isinstance(columns, dict):
        return Sidecar(name, sha256, problem="columns is not a mapping of column: field")
    mapped = []
    for column, field in columns.items():
        target = field_named(str(field))
        if target is None:
            known = ", ".join("id" if known == "external_id" else known for known in FIELDS)
            return Sidecar(name, sha256, problem=f"column {column!r} maps to {field!r}, which is no field ({known})")
        mapped.append((str(column), target))
    return Sidecar(
        name,
        sha256,
        venue=None if venue is None else str(venue).strip() or None,
        year=None if year is None else int(str(year).strip()),
        columns=tuple(mapped),
    )


@dataclass(frozen=True)
class FolderPlan:
    sources: dict[str, TableSource]  # each structured file (by name) that is a list: what its parse depends on
    companions: dict[str, tuple[str, Any]]  # each companion (by name): the list it serves and its snapshot


def plan_folder(entries: list, read: Callable[[Path], Any]) -> FolderPlan:
    """What the structured files among ``entries`` (``paperhouse.ingest.reading.FolderEntry``) are;
    ``read`` is ``paperhouse.ingest.reading.read_snapshot``. Sidecars and companions are read here whole
    (they are small); the lists themselves are read later, one at a time."""
    tables = {entry.name: entry for entry in entries if entry.problem is None and table_format(entry.name)}
    sidecars = {name: _sidecar_of(entry.path, read) for name, entry in tables.items()}
    companions: dict[str, tuple[str, Any]] = {}
    companion_of: dict[str, Companion] = {}
    for name, entry in tables.items():
        served = _served_list(name, tables)
        if served is None:
            continue
        snapshot = read(entry.path)
        if snapshot.data is not None and _decides(snapshot.data, table_format(name), sidecars[name]):
            companions[name] = (served, snapshot)
            companion_of[served] = Companion(name, snapshot.sha256, snapshot.data, table_format(name), sidecars[name])
    sources = {
        name: TableSource(table_format(name), *name_venue_year(name), sidecars[name], companion_of.get(name))
        for name in tables
        if name not in companions
    }
    return FolderPlan(sources, companions)


def _sidecar_of(path: Path, read: Callable[[Path], Any]) -> Sidecar | None:
    for suffix in SIDECAR_SUFFIXES:
        sidecar = path.with_name(path.name + suffix)
        if sidecar.is_file():
            snapshot = read(sidecar)
            return read_sidecar(sidecar.name, snapshot.data, snapshot.sha256, snapshot.problem)
    return None


def _served_list(name: str, tables: dict) -> str | None:
    """The one list a file named with a companion's role word would serve: the structured file
    named the same but for a list's role word (or none)."""
    tokens = name_tokens(name)
    if not any(_COMPANION_ROLE.fullmatch(token) for token in tokens):
        return None
    base = [token.lower() for token in tokens if not _COMPANION_ROLE.fullmatch(token)]
    lists = [
        other
        for other in tables
        if other != name
        and not any(_COMPANION_ROLE.fullmatch(token) for token in name_tokens(other))
        and [token.lower() for token in name_tokens(other) if not _LIST_ROLE.fullmatch(token)] == base
    ]
    return lists[0] if len(lists) == 1 else None


def _decides(data: bytes, file_format: str, sidecar: Sidecar | None) -> bool:
    """Whether a table has ids and decisions but no abstracts."""
    if sidecar is not None and sidecar.problem is not None:
        return False
    try:
        fields = read_table(decode(data).text, file_format, dict(sidecar.columns) if sidecar else {}).fields
    except (UndecodableFile, UnparsableFile):
        return False
    return "abstract" not in fields and {"external_id", "decision"} <= set(fields)
