"""`paperhouse synth`: lists learned from the seeds, with a known share of labelled duplicates of every kind."""

import csv
import re
from pathlib import Path

from paperhouse.cli import main
from paperhouse.evaluation.variants import VARIANTS, sentences
from paperhouse.ingest.parse_cache import read_abstracts
from paperhouse.settings import BUNDLED_SEEDS


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _records(folder: Path) -> dict[tuple[str, int], str]:
    records = {}
    for path in sorted(folder.glob("*.txt")):
        paragraphs = [p for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()][1:]  # after the header
        records |= {(path.name, number): text for number, text in enumerate(paragraphs, start=1)}
    return records


def test_synth_writes_several_lists_and_labels_a_known_share_of_every_kind_of_duplicate(tmp_path):
    lists = tmp_path / "lists"
    assert main(["synth", "--papers", "2000", "--out", str(lists), "--per-file", "500", "--seed", "3"]) == 0
    # Only the lists in the folder (a labels file inside would be read as an export); labels beside it.
    assert sorted(p.name for p in lists.iterdir()) == [f"synth_{i:04d}.txt" for i in range(4)]
    with open(tmp_path / "lists.labels.csv", newline="") as labels_file:
        labels = list(csv.DictReader(labels_file))
    records = _records(lists)
    assert len(labels) == len(records) == 2000
    kinds = [label["kind"] for label in labels]
    assert set(kinds) == {"original", *VARIANTS}
    assert 0.07 <= 1 - kinds.count("original") / len(kinds) <= 0.13  # --duplicate-share 0.1

    originals = [records[(row["source_file"], int(row["record_no"]))] for row in labels if row["kind"] == "original"]
    # Learned from the seeds: their words, in sentences none of which is a seed's, and no two papers alike.
    seeds = read_abstracts(BUNDLED_SEEDS)
    seed_words = set().union(*map(_words, seeds))
    seed_sentences = {s for abstract in seeds for s in sentences(abstract)}
    assert all(_words(text) <= seed_words for text in originals)
    written = [s for text in originals for s in sentences(" ".join(text.split()))]
    assert not seed_sentences & set(written) and len(set(written)) > 1000
    assert len(set(originals)) == len(originals)
    # Each duplicate is a variant of the original its label names.
    for label in labels:
        if label["kind"] != "original":
            text, original = records[(label["source_file"], int(label["record_no"]))], originals[int(label["original"])]
            shared = _words(text) & _words(original)
            assert len(shared) >= 0.5 * len(_words(text) | _words(original)), label


def test_synth_is_reproducible_from_its_seed(tmp_path):
    for run in ("a", "b"):
        main(["synth", "--papers", "300", "--out", str(tmp_path / run), "--seed", "7"])
    assert _records(tmp_path / "a") == _records(tmp_path / "b")
    assert (tmp_path / "a.labels.csv").read_text() == (tmp_path / "b.labels.csv").read_text()
