"""Dedup decisions on real abstracts from the bundled seeds and their typical variants."""

import itertools
import random
import textwrap

import polars as pl
import pytest
from corpus import seed_abstracts
from polars.testing import assert_frame_equal

from paperhouse.dedup import minhash
from paperhouse.dedup import papers as dedup
from paperhouse.dedup import verification as pair_verification
from paperhouse.dedup.papers import assign_papers
from paperhouse.dedup.params import DedupParams
from paperhouse.ingest.normalize import clean_text, joined_words, normalized_text

ABSTRACTS = seed_abstracts()


def frame(texts: dict[str, str]) -> pl.DataFrame:
    """One record per (file name -> text), each as record 1 of its own file."""
    return pl.DataFrame(
        {
            "source_file": list(texts),
            "record_no": [1] * len(texts),
            "file_sha256": [f"{i:064x}" for i in range(len(texts))],
            "text": list(texts.values()),
        },
        schema_overrides={"record_no": pl.Int32},
    ).with_columns(normalized_text=normalized_text(clean_text(pl.col("text"))))


def decisions(texts: dict[str, str]) -> dict[str, dict]:
    assigned = assign_papers(frame(texts))
    return {row["source_file"]: row for row in assigned.iter_rows(named=True)}


def sentences(text: str) -> list[str]:
    return [s for s in text.split(". ") if s]


def reword(text: str, n_words: int, seed: int = 0) -> str:
    words = text.split()
    rng = random.Random(seed)
    for index in rng.sample(range(len(words)), n_words):
        words[index] = rng.choice(["novel", "robust", "simple", "strong", "careful"])
    return " ".join(words)


VARIANTS = {
    "exact: hard-wrapped": lambda t: textwrap.fill(t, width=70),
    "exact: curly quotes and em dashes": lambda t: t.replace("'", "’").replace(" - ", " — "),
    "exact: markdown emphasis": lambda t: " ".join(f"*{w}*" if i % 9 == 4 else w for i, w in enumerate(t.split())),
    "near: code-availability sentence appended": lambda t: t + " Code is available at https://github.com/anon/repo.",
    "near: sentence dropped": lambda t: ". ".join(sentences(t)[:-2] + sentences(t)[-1:]),
    "near: a few words reworded": lambda t: reword(t, 6),
    "near: tail truncated": lambda t: t[: int(len(t) * 0.6)].rsplit(" ", 1)[0] + " ...",
}


@pytest.mark.parametrize("kind", VARIANTS)
@pytest.mark.parametrize("index", [0, 17, 42, 75])
def test_variant_is_merged_with_its_original(kind, index):
    original = ABSTRACTS[index]
    result = decisions(
        {"original.txt": original, "variant.txt": VARIANTS[kind](original), "other.txt": ABSTRACTS[index - 1]}
    )
    assert result["variant.txt"]["paper_id"] == result["original.txt"]["paper_id"]
    assert result["other.txt"]["paper_id"] != result["original.txt"]["paper_id"]
    kinds = {result["variant.txt"]["match_kind"], result["original.txt"]["match_kind"]}
    assert kinds == {"canonical", kind.split(":")[0]}


def test_different_papers_sharing_an_opening_sentence_stay_apart():
    opening = sentences(ABSTRACTS[3])[0]
    hard_negative = opening + ". " + ABSTRACTS[10]
    result = decisions({"a.txt": ABSTRACTS[3], "b.txt": hard_negative, "c.txt": ABSTRACTS[10]})
    assert len({row["paper_id"] for row in result.values()}) == 2  # b is a revision of c, not of a
    assert result["b.txt"]["paper_id"] == result["c.txt"]["paper_id"]


def test_all_bundled_abstracts_are_distinct_papers():
    result = decisions({f"{i}.txt": text for i, text in enumerate(ABSTRACTS)})
    assert len({row["paper_id"] for row in result.values()}) == len(ABSTRACTS) == 76


def test_texts_and_pairs_taken_in_small_batches_give_the_same_papers(monkeypatch):
    texts = {f"{i}.txt": text for i, text in enumerate(ABSTRACTS)}
    texts |= {f"{kind} {i}.txt": variant(ABSTRACTS[i]) for kind, variant in VARIANTS.items() for i in range(3)}
    whole = assign_papers(frame(texts))
    keys = whole.join(frame(texts), on="source_file").select(joined_words(pl.col("normalized_text")))
    signature, sizes = minhash.signatures(keys.to_series(), DedupParams())
    every_pair = [(a, b) for a in range(len(keys)) for b in range(a + 1, len(keys))]
    pairs = pl.DataFrame(every_pair, schema={"a": pl.UInt32, "b": pl.UInt32}, orient="row")
    promising = minhash.promising_pairs(pairs, signature, sizes, DedupParams())

    for module in (minhash, pair_verification):  # both batch texts and pairs by these sizes
        monkeypatch.setattr(module, "SIGNATURE_BATCH", 7)
        monkeypatch.setattr(module, "PAIRS_PER_CHUNK", 3)
    monkeypatch.setattr(dedup, "_KEYS_PER_SLICE", 5)
    assert dedup._text_hashes(keys.to_series()).to_list() == [dedup.text_hash(key) for key in keys.to_series()]
    batched_signature, batched_sizes = minhash.signatures(keys.to_series(), DedupParams())
    assert (batched_signature == signature).all() and (batched_sizes == sizes).all()
    assert_frame_equal(minhash.promising_pairs(pairs, signature, sizes, DedupParams()), promising)
    assert 0 < promising.height < pairs.height  # some pairs are promising, not all
    assert_frame_equal(assign_papers(frame(texts)), whole)
    assert whole["paper_id"].n_unique() == len(ABSTRACTS)  # every variant found its original


def test_paper_ids_do_not_depend_on_file_order_or_names():
    texts = [*ABSTRACTS[:10], VARIANTS["near: sentence dropped"](ABSTRACTS[2]), ABSTRACTS[5]]
    first = decisions({f"{i}.txt": t for i, t in enumerate(texts)})
    shuffled = list(enumerate(texts))
    random.Random(1).shuffle(shuffled)
    second = decisions({f"renamed_{i}.txt": t for i, t in shuffled})
    ids_by_text_first = sorted((texts[int(name.split(".")[0])], row["paper_id"]) for name, row in first.items())
    ids_by_text_second = sorted(
        (texts[int(name.split("_")[1].split(".")[0])], row["paper_id"]) for name, row in second.items()
    )
    assert ids_by_text_first == ids_by_text_second


def test_canonical_record_is_the_most_complete_version_and_similarity_is_bounded():
    original = ABSTRACTS[30]
    truncated = VARIANTS["near: tail truncated"](original)
    result = decisions({"truncated.txt": truncated, "full.txt": original, "copy.txt": original})
    assert result["full.txt"]["match_kind"] == "canonical" or result["copy.txt"]["match_kind"] == "canonical"
    assert result["truncated.txt"]["match_kind"] == "near"
    assert result["truncated.txt"]["matched_by"] in {"containment", "shingle_jaccard"}
    assert result["truncated.txt"]["containment"] == pytest.approx(1.0, abs=0.02)
    assert all(0.0 <= row["similarity"] <= 1.0 for row in result.values())
    assert sum(row["match_kind"] == "canonical" for row in result.values()) == 1


def shingle_jaccard(text: str, other: str) -> float:
    """The two texts' exact Jaccard similarity over their word shingles, from Python sets."""
    keys = frame({"x": text, "y": other}).select(joined_words(pl.col("normalized_text"))).to_series()
    _, shingles = minhash.shingle_table(keys.str.split(" "), DedupParams().shingle_size)
    first, second = (set(shingles.filter(pl.col("doc") == doc)["hash"]) for doc in (0, 1))
    return len(first & second) / len(first | second)


@pytest.mark.parametrize("index", [0, 33])
def test_a_text_merged_through_another_has_its_evidence_against_the_canonical_text(index):
    """A revision of a revision: c matches b, b matches a, c and a by no rule; each record's
    evidence is measured against a, its paper's canonical text, whichever way it was found."""
    original, ending, opening = (ABSTRACTS[index + offset].split() for offset in range(3))
    n = len(original)
    revised = original[: int(n * 0.72)] + ending[: int(n * 0.2)]
    texts = {"a": original, "b": revised, "c": opening[: int(n * 0.2)] + revised[int(n * 0.28) :]}
    texts = {name: " ".join(words) for name, words in texts.items()}
    result = decisions(texts)
    assert [result[name]["match_kind"] for name in "abc"] == ["canonical", "near", "near"]
    assert (result["b"]["matched_by"], result["c"]["matched_by"]) == ("shingle_jaccard", "chain")
    for name in "bc":
        assert result[name]["similarity"] == pytest.approx(shingle_jaccard(texts[name], texts["a"]))
    assert result["c"]["similarity"] < DedupParams().min_jaccard < result["b"]["similarity"]


def test_between_versions_of_the_same_length_the_smaller_normalised_text_is_canonical():
    original = ABSTRACTS[12]
    reworded = reword(original, 3)  # a revision with as many words
    smaller = min(original, reworded, key=lambda text: frame({"x": text})["normalized_text"].item())
    for names in (("a.txt", "b.txt"), ("b.txt", "a.txt")):
        result = decisions(dict(zip(names, (original, reworded), strict=True)))
        canonical = next(name for name, row in result.items() if row["match_kind"] == "canonical")
        assert dict(zip(names, (original, reworded), strict=True))[canonical] == smaller
        assert len({row["paper_id"] for row in result.values()}) == 1


def test_no_records_gives_an_empty_typed_frame():
    from paperhouse.dedup.papers import ASSIGNMENT_SCHEMA

    empty = pl.DataFrame(
        schema={"source_file": pl.String, "record_no": pl.Int32, "file_sha256": pl.String, "normalized_text": pl.String}
    )
    assert assign_papers(empty).schema == pl.Schema(ASSIGNMENT_SCHEMA)


def test_encoding_and_file_names_never_change_paper_ids(tmp_path):
    from paperhouse.ingest.parse_cache import read_records

    text = "ICLR 2026 论文列表\n\n" + "\n\n".join(ABSTRACTS[:5]).replace("—", "-") + "\n"
    ids = []
    for encoding, name in (("utf-8", "a.txt"), ("utf-16", "z.txt"), ("gb18030", "m.txt")):
        folder = tmp_path / encoding
        folder.mkdir()
        (folder / name).write_bytes(text.replace("\n", "\r\n").encode(encoding))
        records = read_records(folder)
        assert records["encoding"].unique().to_list() == [encoding]
        ids.append(sorted(assign_papers(records)["paper_id"].to_list()))
    assert ids[0] == ids[1] == ids[2] and len(set(ids[0])) == 5


def test_shingle_rows_stay_in_text_order_when_short_texts_give_their_words_instead():
    texts = pl.Series([["graph", "neural", "network", "pruning"], ["transformers"], ["sparse", "attention", "heads"]])
    _, shingles = minhash.shingle_table(texts, shingle_size=3)
    # Verification reads each text's rows as one run of the text-ordered rows.
    assert shingles["doc"].to_list() == [0, 0, 1, 2]
    words, _ = minhash.shingle_table(pl.Series([["transformers"]]), shingle_size=3)
    assert shingles.filter(pl.col("doc") == 1)["hash"].to_list() == words["hash"].to_list()


def test_a_shingle_hash_tells_every_order_of_its_words_apart_and_is_the_same_in_every_text():
    orders = [list(order) for order in itertools.permutations(["sparse", "attention", "heads"])]
    _, shingles = minhash.shingle_table(pl.Series([*orders, ["we", "study", *orders[0]]]), shingle_size=3)
    hashes = shingles["hash"].to_list()
    assert len(set(hashes[:6])) == 6  # one shingle per order
    assert hashes[6:].count(hashes[0]) == 1 and len(set(hashes[6:])) == 3  # the same words, in another text
