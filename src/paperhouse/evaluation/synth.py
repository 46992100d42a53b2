"""Realistic synthetic abstract lists, learned from the bundled seeds, with labelled duplicates.

Sentences come from a word-level Markov chain (order 2) trained on the seed abstracts, so
texts read like abstracts without repeating one template; each abstract strings together
sentences drawn from a large generated pool. A known share of records are variants of
earlier ones (every kind in ``paperhouse.evaluation.variants``), and a labels file beside the lists folder
(``<folder>.labels.csv``: not inside it, where paperhouse would read it as an export) names the
original of every record, so dedup quality can be measured at any scale.
"""

from __future__ import annotations

import csv
import random
from collections import defaultdict
from itertools import groupby
from pathlib import Path

from paperhouse.evaluation.variants import VARIANTS, sentences

_START = ("<s>", "<s>")


def train_chain(abstracts: list[str]) -> dict[tuple[str, str], list[str]]:
    chain: dict[tuple[str, str], list[str]] = defaultdict(list)
    for abstract in abstracts:
        for sentence in sentences(abstract):
            state = _START
            for word in [*sentence.split(), "</s>"]:
                chain[state].append(word)
                state = (state[1], word)
    return dict(chain)


def generate_sentence(chain: dict, rng: random.Random, max_words: int = 45) -> str:
    words: list[str] = []
    state = _START
    while len(words) < max_words:
        word = rng.choice(chain[state])
        if word == "</s>":
            break
        words.append(word)
        state = (state[1], word)
    sentence = " ".join(words)
    return sentence if sentence.endswith((".", "!", "?")) else sentence.rstrip(",;:") + "."


def generate(seed_abstracts: list[str], n_papers: int, duplicate_share: float = 0.1, seed: int = 0):
    """Yield (record_text, original_index, kind) for ``n_papers`` records; kind is 'original' or a variant."""
    rng = random.Random(seed)
    chain = train_chain(seed_abstracts)
    # Distinct sentences only, none copied whole from a seed: two synthetic papers should share
    # phrases, as real ones do, not whole sentences by accident.
    seen = {s for abstract in seed_abstracts for s in sentences(abstract)}
    pool = []
    for _ in range(max(2_000, n_papers // 2)):
        sentence = generate_sentence(chain, rng)
        if len(sentence.split()) >= 6 and sentence not in seen:
            seen.add(sentence)
            pool.append(sentence)
    kinds = list(VARIANTS)
    originals: list[str] = []
    for index in range(n_papers):
        if originals and rng.random() < duplicate_share:
            origin = rng.randrange(len(originals))
            kind = kinds[index % len(kinds)]
            yield VARIANTS[kind](originals[origin], rng), origin, kind
        else:
            text = " ".join(rng.sample(pool, rng.randint(6, 10)))
            originals.append(text)
            yield text, len(originals) - 1, "original"


def labels_path(out_dir: Path) -> Path:
    """Where ``write_corpus`` labels the records of the lists it writes into ``out_dir``."""
    return out_dir.with_name(out_dir.name + ".labels.csv")


def write_corpus(
    seed_abstracts: list[str],
    n_papers: int,
    out_dir: Path,
    per_file: int = 10_000,
    duplicate_share: float = 0.1,
    seed: int = 0,
) -> Path:
    """Write list files of ``per_file`` abstracts each and their labels; return the labels path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    labels = labels_path(out_dir)
    records = enumerate(generate(seed_abstracts, n_papers, duplicate_share, seed))
    with open(labels, "w", newline="") as labels_file:
        writer = csv.writer(labels_file)
        writer.writerow(["source_file", "record_no", "original", "kind"])
        # One list file per ``per_file`` records, written while it is open, so one handle at a time.
        for file_no, file_records in groupby(records, key=lambda item: item[0] // per_file):
            name = f"synth_{file_no:04d}.txt"
            with open(out_dir / name, "w", encoding="utf-8") as list_file:
                list_file.write(f"SYNTH {2000 + file_no % 26} Papers\n")
                for index, (text, origin, kind) in file_records:
                    list_file.write(f"\n{text}\n")
                    writer.writerow([name, index % per_file + 1, origin, kind])
    return labels
