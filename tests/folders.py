"""Random input folders, as users bring them: hypothesis strategies for the property-based tests of
whole runs (tests/test_fuzz_folders.py, ``make fuzz``).

A folder is built from the bundled seeds and, where ``../shared/realdata`` is there, real conference
lists and exports read in place: random subsets of lists and of their records, duplicated files,
revised copies (sentences edited, dropped, reordered; the year moved), re-encodings (UTF-16,
GB18030, cp1252, byte-order marks, CRLF), mirror lists, broken and empty files, and exports with
malformed rows injected. ``build`` writes it and says, for each file, how many records it holds
when that is known (text lists and clean exports), so the tests can count every one of them.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from corpus import SEEDS
from hypothesis import strategies as st

from paperhouse.evaluation.real_data import realdata_dir

EDITS = (
    "duplicate",
    "revise",
    "reencode",
    "mirror",
    "broken",
    "empty",
    "header_only",
    "other_venue",
    "export_csv",
    "export_tsv",
    "export_jsonl",
    "broken_export",
)
ENCODINGS = ("utf-16", "utf-16-le-bom", "gb18030", "cp1252", "utf-8-sig", "utf-8")
WHOLE_FILE = None  # a file that is rejected whole: one row of rejected_records, record_no null
_EXPORT_COLUMNS = ("paper_id", "title", "link", "keywords", "abstract")


@dataclass(frozen=True)
class Recipe:
    """What a folder is made of; hypothesis shrinks it edit by edit."""

    seed: int
    lists: frozenset[int]  # which bundled lists
    keep: float  # the share of each list's records kept
    edits: tuple[str, ...]
    added_later: int  # records of another list added before the second run


@dataclass
class Folder:
    path: Path
    expected: dict[str, int | None] = field(default_factory=dict)  # file name -> records (None: whole file)
    at_least: dict[str, int] = field(default_factory=dict)  # file name -> records that must be accepted


@st.composite
def recipes(draw) -> Recipe:
    return Recipe(
        seed=draw(st.integers(0, 2**31 - 1)),
        lists=frozenset(draw(st.sets(st.integers(0, len(seed_lists()) - 1), min_size=1))),
        keep=draw(st.floats(0.2, 1.0)),
        edits=tuple(draw(st.lists(st.sampled_from(EDITS), max_size=6))),
        added_later=draw(st.integers(0, 6)),
    )


def seed_lists() -> list[tuple[str, list[str]]]:
    """Each bundled list: its header and its abstracts."""
    lists = []
    for path in sorted(SEEDS.glob("*.txt")):
        paragraphs = [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
        lists.append((paragraphs[0], paragraphs[1:]))
    return lists


def real_records(rng: random.Random, n: int) -> list[dict]:
    """``n`` rows of a real OpenReview export (id, title, link, keywords, abstract), read in place;
    none when the real data is not there."""
    export = realdata_dir() / "raw" / "NeurIPS2022_papers.csv"
    if not export.exists():
        return []
    rows = _export_rows(export)
    return [rows[i] for i in sorted(rng.sample(range(len(rows)), min(n, len(rows))))]


_EXPORT_CACHE: dict[Path, list[dict]] = {}


def _export_rows(path: Path) -> list[dict]:
    if path not in _EXPORT_CACHE:
        with path.open(encoding="utf-8", newline="") as handle:
            rows = [r for r in csv.DictReader(handle) if len(r.get("abstract") or "") > 200 and None not in r]
        _EXPORT_CACHE[path] = rows
    return _EXPORT_CACHE[path]


def other_venue(rng: random.Random, n: int) -> tuple[str, list[str]]:
    """A small list of another venue: real abstracts when the real data is there, else seeds'
    abstracts reworded so they are no copies."""
    records = real_records(rng, n)
    if records:
        return "NeurIPS 2022 Papers", [r["abstract"] for r in records]
    abstracts = [a for _, list_abstracts in seed_lists() for a in list_abstracts]
    return "ACL 2025 Papers", [_reworded(rng, a, 0.5) for a in rng.sample(abstracts, min(n, len(abstracts)))]


def build(recipe: Recipe, folder: Path) -> Folder:
    rng = random.Random(recipe.seed)
    folder.mkdir(parents=True, exist_ok=True)
    made = Folder(folder)
    lists = seed_lists()
    written: list[tuple[str, list[str]]] = []
    for index in sorted(recipe.lists):
        header, abstracts = lists[index]
        kept = [a for a in abstracts if rng.random() < recipe.keep] or abstracts[:1]
        _write_list(made, f"list_{index}.txt", header, kept)
        written.append((header, kept))
    for number, edit in enumerate(recipe.edits):
        name = f"edit_{number}_{edit}"
        header, abstracts = rng.choice(written)
        if edit == "duplicate":
            _write_list(made, f"{name}.txt", header, abstracts)
        elif edit == "revise":
            year = re.sub(r"\d{4}", lambda m: str(int(m.group()) + 1), header)
            _write_list(made, f"{name}.txt", year, [_revised(rng, a) for a in abstracts])
        elif edit == "reencode":
            _write_list(made, f"{name}.txt", header, abstracts, encoding=rng.choice(ENCODINGS), crlf=rng.random() < 0.5)
        elif edit == "mirror":
            pool = [a for _, list_abstracts in written for a in list_abstracts]
            mirrored = rng.sample(pool, max(1, len(pool) // 2))
            _write_list(made, f"{name}.txt", "Mirror of accepted papers", [_wrapped(rng, a) for a in mirrored])
        elif edit == "broken":
            noise = bytes(rng.randrange(256) for _ in range(rng.randrange(64, 2048)))
            # How random bytes end (a binary file, or text of paragraphs that are no prose) is the
            # reader's call: only that each lands somewhere is asserted.
            (folder / f"{name}.txt").write_bytes(b"\x00\x00\xff" + noise)
            made.at_least[f"{name}.txt"] = 0
        elif edit == "empty":
            _write_bytes(made, f"{name}.txt", b"", WHOLE_FILE)
        elif edit == "header_only":
            _write_bytes(made, f"{name}.txt", f"{header}\n".encode(), WHOLE_FILE)
        elif edit == "other_venue":
            other_header, other = other_venue(rng, rng.randrange(3, 12))
            _write_list(made, f"{name}.txt", other_header, other)
        elif edit in ("export_csv", "export_tsv", "export_jsonl"):
            _write_export(made, f"{name}.{edit.split('_')[1]}", _export_records(rng, abstracts), broken=False, rng=rng)
        elif edit == "broken_export":
            kind = rng.choice(("csv", "tsv"))
            _write_export(made, f"{name}.{kind}", _export_records(rng, abstracts), broken=True, rng=rng)
    return made


def add_records(recipe: Recipe, made: Folder) -> None:
    """More papers for the second run: a list of another venue of ``recipe.added_later`` records."""
    if recipe.added_later:
        header, abstracts = other_venue(random.Random(recipe.seed + 1), recipe.added_later)
        _write_list(made, "added_later.txt", header, abstracts)


def _write_list(
    made: Folder, name: str, header: str, abstracts: list[str], encoding: str = "utf-8", crlf: bool = False
) -> None:
    text = "\n\n".join([header, *abstracts]) + "\n"
    if crlf:
        text = text.replace("\n", "\r\n")
    if encoding == "utf-16-le-bom":
        data = b"\xff\xfe" + text.encode("utf-16-le")
    else:
        try:
            data = text.encode(encoding)
        except UnicodeEncodeError:  # cp1252 or GB18030 cannot hold every character: the file as UTF-8 then
            data = text.encode("utf-8")
    _write_bytes(made, name, data, len(abstracts))


def _write_bytes(made: Folder, name: str, data: bytes, records: int | None) -> None:
    (made.path / name).write_bytes(data)
    made.expected[name] = records


def _export_records(rng: random.Random, abstracts: list[str]) -> list[dict]:
    real = real_records(rng, rng.randrange(2, 8))
    seeded = [
        {
            "paper_id": f"s{rng.randrange(10**8):08d}",
            "title": " ".join(a.split()[:8]).rstrip(".,:;"),
            "link": "",
            "keywords": ", ".join(w.strip(".,;:()") for w in rng.sample(a.split(), 3)),
            "abstract": a,
        }
        for a in rng.sample(abstracts, min(len(abstracts), rng.randrange(1, 6)))
    ]
    records = real + seeded
    for record in records:
        record["link"] = record["link"] or f"https://openreview.net/forum?id={record['paper_id']}"
    return records


def _write_export(made: Folder, name: str, records: list[dict], broken: bool, rng: random.Random) -> None:
    kind = name.rsplit(".", 1)[1]
    if kind == "jsonl":
        lines = [json.dumps({c: r[c] for c in _EXPORT_COLUMNS}, ensure_ascii=rng.random() < 0.5) for r in records]
        _write_bytes(made, name, ("\n".join(lines) + "\n").encode(), len(records))
        return
    separator = "," if kind == "csv" else "\t"
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=separator, lineterminator="\n")
    writer.writerow(_EXPORT_COLUMNS)
    clean = 0
    for record in records:
        if broken and rng.random() < 0.5:
            buffer.write(_malformed(rng, record, separator) + "\n")
        else:
            writer.writerow([record[c] for c in _EXPORT_COLUMNS])
            clean += 1
    (made.path / name).write_bytes(buffer.getvalue().encode())
    if broken:  # how many rows a broken row reads as is the reader's call: its clean rows must stay
        made.at_least[name] = clean
    else:
        made.expected[name] = len(records)


def _malformed(rng: random.Random, record: dict, separator: str) -> str:
    """A row as careless scrapers write it: unquoted fields holding the separator, a stray quote,
    a field opening with a quote, a field missing, an embedded newline or NUL, a huge field."""
    fields = [record[c] for c in _EXPORT_COLUMNS]
    how = rng.choice(("unquoted", "stray_quote", "opening_quote", "missing", "newline", "nul", "huge"))
    if how == "unquoted":
        fields[1] = fields[1].replace(" ", f"{separator} ", 1)
    elif how == "stray_quote":
        words = fields[4].split(" ")
        words.insert(rng.randrange(len(words)), 'compile"')
        fields[4] = " ".join(words)
    elif how == "opening_quote":
        fields[1] = '"' + fields[1]
    elif how == "missing":
        del fields[rng.randrange(1, 4)]
    elif how == "newline":
        fields[4] = fields[4].replace(". ", ".\n", 1)
    elif how == "nul":
        fields[4] = fields[4].replace(" ", " \x00", 1)
    else:
        fields[4] = fields[4] + " lorem" * rng.randrange(50_000, 200_000)
    return separator.join(fields)


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if s]


def _revised(rng: random.Random, abstract: str) -> str:
    """A later version: a sentence edited, dropped or moved."""
    sentences = _sentences(abstract)
    how = rng.choice(("edit", "drop", "reorder", "append"))
    if how == "drop" and len(sentences) > 3:
        del sentences[rng.randrange(1, len(sentences))]
    elif how == "reorder" and len(sentences) > 3:
        i = rng.randrange(1, len(sentences) - 1)
        sentences[i], sentences[i + 1] = sentences[i + 1], sentences[i]
    elif how == "append":
        sentences.append("Code is available at https://github.com/example/repository.")
    else:
        sentences[rng.randrange(len(sentences))] = _reworded(rng, sentences[rng.randrange(len(sentences))], 0.2)
    return " ".join(sentences)


def _reworded(rng: random.Random, text: str, share: float) -> str:
    words = text.split()
    fillers = ("novel", "robust", "simple", "scalable", "general", "efficient", "principled")
    return " ".join(rng.choice(fillers) if rng.random() < share else w for w in words)


def _wrapped(rng: random.Random, abstract: str) -> str:
    """Hard-wrapped at a random width, as a list copied out of a PDF."""
    return textwrap.fill(abstract, rng.randrange(50, 100), break_long_words=False, break_on_hyphens=False)
