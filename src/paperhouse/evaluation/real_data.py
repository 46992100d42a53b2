"""The real abstract lists kept beside the repository (``../shared/realdata``), split in two halves.

The lists are read in place and never copied into the repository. Each source is split by its
records' positions: odd ``record_no`` go to the half the methods are tuned on (``tune``), even
ones to the half that is only reported (``report``). A half is written as seed files of its own
into a scratch folder, so paperhouse builds it exactly as a user's folder, and each record keeps
its original file and position beside its new one, to find its labels again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import polars as pl

from paperhouse.settings import settings

# The team's gold sets, shipped with the package (make eval's gold-set reports read them).
GOLD = Path(files("paperhouse.evaluation").joinpath("gold"))
HALVES = ("tune", "report")
WHOLE = "whole"  # both halves together: what a user loading the lists gets
# Each source: the folder under realdata/ holding `inputs/*.txt` and `labels.jsonl`.
SOURCES = {"conferences": "conferences", "inspec": "inspec"}

LABEL_SCHEMA = {
    "source_file": pl.String,  # the file name in the half's folder
    "record_no": pl.Int32,  # the position in that file, as paperhouse counts it
    "original_file": pl.String,
    "original_record_no": pl.Int32,
    "title": pl.String,
    "keywords": pl.List(pl.String),
    "text": pl.String,
}


def realdata_dir() -> Path:
    """``$PAPERHOUSE_REALDATA``, else ``../shared/realdata`` (beside the checkout `make eval` runs in)."""
    return settings().realdata.expanduser().resolve()


def available() -> bool:
    return all((realdata_dir() / folder / "labels.jsonl").is_file() for folder in SOURCES.values())


def half_of(record_no: int) -> str:
    return HALVES[0] if record_no % 2 else HALVES[1]


@dataclass(frozen=True)
class Half:
    source: str
    half: str
    folder: Path  # seed files of this half only
    labels: pl.DataFrame  # LABEL_SCHEMA, one row per written paragraph


def input_lists(source: str) -> list[Path]:
    """The list files of ``source`` where the real data keeps them (none when it is missing)."""
    return sorted((realdata_dir() / SOURCES[source] / "inputs").glob("*.txt"))


def write_half(source: str, half: str, scratch: Path) -> Half:
    """Write the records of one half of ``source`` (or the ``WHOLE`` of it) as seed files under
    ``scratch``; return them with their labels. Paragraphs are taken as the files hold them (after the header line)."""
    root = realdata_dir() / SOURCES[source]
    labels = {
        (entry["file"], entry["record_no"]): entry
        for entry in map(json.loads, (root / "labels.jsonl").read_text(encoding="utf-8").splitlines())
    }
    folder = scratch / f"{source}_{half}"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for path in input_lists(source):
        header, *paragraphs = path.read_text(encoding="utf-8").split("\n\n")
        kept = []
        for record_no, paragraph in enumerate(paragraphs, start=1):
            if half != WHOLE and half_of(record_no) != half:
                continue
            kept.append(paragraph.strip("\n"))
            entry = labels[(path.name, record_no)]
            rows.append(
                {
                    "source_file": path.name,
                    "record_no": len(kept),
                    "original_file": path.name,
                    "original_record_no": record_no,
                    "title": entry.get("title"),
                    "keywords": entry.get("keywords") or [],
                    "text": kept[-1],
                }
            )
        (folder / path.name).write_text("\n\n".join([header, *kept]) + "\n", encoding="utf-8")
    return Half(source, half, folder, pl.DataFrame(rows, schema=LABEL_SCHEMA))
