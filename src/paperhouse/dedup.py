"""Find the papers behind the records: exact duplicates, then near duplicates.

1. Exact: records whose normalised word sequence is identical collapse into one text.
2. Near: each distinct text gets a one-permutation MinHash signature over its word
   3-shingles (densified, so short texts still fill every bin); LSH banding proposes
   candidate pairs; each candidate is verified on the exact shingle and word sets.
   A pair is merged when its texts resemble each other (shingle Jaccard), when one is
   (nearly) contained in the other (a truncated or extended copy), or when they share
   almost all words and a fair part of their phrasing (a reworded revision).
3. Connected components of verified pairs are papers. Everything is vectorised over
   NumPy arrays and Polars frames: no per-document Python loops in the hot path.

Canonical record of a paper (deterministic, independent of file order and names):
the text with the most words (the most complete version); ties go to the smallest
normalised text. Among identical records, the one with the smallest
``(file_sha256, record_no)``. ``paper_id`` is a hash of the canonical normalised text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from paperhouse.normalize import words

_U64 = np.uint64
_MASK32 = _U64(0xFFFFFFFF)
_GOLDEN = _U64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class DedupParams:
    shingle_size: int = 3
    num_bins: int = 128
    bands: int = 32  # 32 bands of 4 rows: candidates from a Jaccard of about 0.4
    max_bucket: int = 500  # larger LSH buckets hold boilerplate, not one paper's copies
    min_jaccard: float = 0.5
    min_containment: float = 0.8
    min_containment_shingles: int = 20  # containment of a tiny text proves nothing
    min_word_jaccard: float = 0.7
    min_jaccard_with_words: float = 0.25


ASSIGNMENT_SCHEMA = {
    "source_file": pl.String,
    "record_no": pl.Int32,
    "paper_id": pl.String,
    "match_kind": pl.String,
    "matched_by": pl.String,
    "similarity": pl.Float64,
    "containment": pl.Float64,
    "word_jaccard": pl.Float64,
    "length_ratio": pl.Float64,
    "canonical_source_file": pl.String,
    "canonical_record_no": pl.Int32,
}


def stable_hash64(values: list[str]) -> np.ndarray:
    """A 64-bit hash of each string that is the same on every machine, run and version."""
    return np.array(
        [int.from_bytes(hashlib.blake2b(v.encode(), digest_size=8).digest(), "little") for v in values],
        dtype=_U64,
    )


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: spreads every input bit over the whole word."""
    x = x.astype(_U64, copy=True)
    with np.errstate(over="ignore"):
        x ^= x >> _U64(30)
        x *= _U64(0xBF58476D1CE4E5B9)
        x ^= x >> _U64(27)
        x *= _U64(0x94D049BB133111EB)
        x ^= x >> _U64(31)
    return x


def paper_id_for(normalized_words: str) -> str:
    return "p_" + hashlib.sha256(normalized_words.encode()).hexdigest()[:16]


def shingle_table(word_lists: pl.Series, shingle_size: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Distinct word hashes and word-shingle hashes of each text, as (doc, hash) frames.

    A text shorter than one shingle contributes its words as shingles, so it still matches.
    """
    exploded = pl.DataFrame({"words": word_lists}).with_row_index("doc").explode("words").drop_nulls("words")
    vocabulary = exploded.select(pl.col("words").unique(maintain_order=False).sort())
    vocabulary = vocabulary.with_columns(hash=pl.Series(stable_hash64(vocabulary["words"].to_list()), dtype=pl.UInt64))
    tokens = exploded.join(vocabulary, on="words", how="left", maintain_order="left")
    doc = tokens["doc"].to_numpy()
    token_hash = tokens["hash"].to_numpy()

    k = shingle_size
    n = len(doc)
    start = np.arange(max(n - k + 1, 0))
    whole = doc[start] == doc[start + k - 1] if n >= k else np.zeros(0, dtype=bool)
    start = start[whole]
    shingle = np.zeros(len(start), dtype=_U64)
    with np.errstate(over="ignore"):
        for offset in range(k):
            shingle = _mix(shingle * _GOLDEN + token_hash[start + offset])
    shingles = pl.DataFrame({"doc": doc[start], "hash": shingle})
    short_docs = np.setdiff1d(np.unique(doc), doc[start])
    short = tokens.filter(pl.col("doc").is_in(short_docs)).select("doc", hash=pl.col("hash"))
    shingles = pl.concat([shingles.with_columns(pl.col("doc").cast(pl.UInt32)), short]).unique().sort("doc", "hash")
    word_set = tokens.select("doc", "hash").unique().sort("doc", "hash")
    return word_set, shingles


def minhash_signatures(shingles: pl.DataFrame, n_docs: int, num_bins: int) -> np.ndarray:
    """Densified one-permutation MinHash: one hash per shingle, the minimum per bin.

    Empty bins borrow the value of the next filled bin to their right (circularly),
    shifted by the distance, as in Shrivastava (2017); a text without shingles keeps
    the sentinel in every bin and takes no part in LSH.
    """
    bin_bits = int(np.log2(num_bins))
    h = _mix(shingles["hash"].to_numpy())
    minima = (
        pl.DataFrame(
            {
                "doc": shingles["doc"].to_numpy(),
                "bin": (h >> _U64(64 - bin_bits)).astype(np.int64),
                "value": (h & _MASK32).astype(np.uint32),
            }
        )
        .group_by("doc", "bin")
        .agg(pl.col("value").min())
    )
    empty = np.iinfo(np.uint32).max
    signature = np.full((n_docs, num_bins), empty, dtype=np.uint32)
    signature[minima["doc"].to_numpy(), minima["bin"].to_numpy()] = minima["value"].to_numpy()

    filled = signature != empty
    doubled = np.concatenate([filled, filled], axis=1)[:, ::-1]
    positions = np.where(doubled, np.arange(2 * num_bins), -1)
    nearest = np.maximum.accumulate(positions, axis=1)[:, ::-1][:, :num_bins]
    source = 2 * num_bins - 1 - nearest  # index of the nearest filled bin at or right of each bin
    has_any = filled.any(axis=1)
    distance = (source - np.arange(num_bins)).astype(np.uint32)
    borrowed = np.take_along_axis(signature, np.where(has_any[:, None], source % num_bins, 0), axis=1)
    with np.errstate(over="ignore"):
        dense = np.where(filled, signature, borrowed + distance * np.uint32(0x9E3779B1))
    return np.where(has_any[:, None], dense, empty)


def candidate_pairs(signature: np.ndarray, params: DedupParams) -> pl.DataFrame:
    """Pairs of texts that agree on every row of at least one LSH band."""
    n_docs, num_bins = signature.shape
    rows = num_bins // params.bands
    usable = np.flatnonzero(signature[:, 0] != np.iinfo(np.uint32).max)
    if len(usable) < 2:
        return pl.DataFrame(schema={"a": pl.UInt32, "b": pl.UInt32})
    keys = []
    for band in range(params.bands):
        block = signature[usable, band * rows : (band + 1) * rows].astype(_U64)
        key = np.full(len(usable), _U64(band), dtype=_U64)
        for column in block.T:
            key = _mix(key * _GOLDEN + column)
        keys.append(key)
    buckets = pl.DataFrame(
        {
            "band": np.repeat(np.arange(params.bands, dtype=np.int32), len(usable)),
            "key": np.concatenate(keys),
            "doc": np.tile(usable.astype(np.uint32), params.bands),
        }
    )
    sizes = buckets.group_by("band", "key").len()
    shared = buckets.join(
        sizes.filter((pl.col("len") >= 2) & (pl.col("len") <= params.max_bucket)), on=["band", "key"], how="semi"
    )
    return (
        shared.join(shared, on=["band", "key"], suffix="_b")
        .filter(pl.col("doc") < pl.col("doc_b"))
        .select(a="doc", b="doc_b")
        .unique()
        .sort("a", "b")
    )


def set_overlap(pairs: pl.DataFrame, sets: pl.DataFrame) -> pl.DataFrame:
    """Intersection, Jaccard and containment of the hash sets of each (a, b) pair."""
    sizes = sets.group_by("doc").len()
    shared = (
        pairs.join(sets, left_on="a", right_on="doc")
        .join(sets, left_on=["b", "hash"], right_on=["doc", "hash"], how="semi")
        .group_by("a", "b")
        .len("shared")
    )
    overlap = (
        pairs.join(shared, on=["a", "b"], how="left")
        .join(sizes.rename({"doc": "a", "len": "size_a"}), on="a", how="left")
        .join(sizes.rename({"doc": "b", "len": "size_b"}), on="b", how="left")
        .with_columns(pl.col("shared", "size_a", "size_b").fill_null(0).cast(pl.Float64))
    )
    smaller = pl.min_horizontal("size_a", "size_b")
    return overlap.with_columns(
        jaccard=(pl.col("shared") / pl.max_horizontal(pl.col("size_a") + pl.col("size_b") - pl.col("shared"), 1)),
        containment=pl.col("shared") / pl.max_horizontal(smaller, 1),
        min_size=smaller,
    )


def verify_pairs(pairs: pl.DataFrame, shingles: pl.DataFrame, word_sets: pl.DataFrame, params: DedupParams) -> pl.DataFrame:
    """The evidence for each pair and the rule that merges it (null: kept apart)."""
    by_shingles = set_overlap(pairs, shingles).select("a", "b", "jaccard", "containment", "min_size")
    by_words = set_overlap(pairs, word_sets).select("a", "b", word_jaccard="jaccard")
    evidence = by_shingles.join(by_words, on=["a", "b"])
    return evidence.with_columns(
        matched_by=pl.when(pl.col("jaccard") >= params.min_jaccard)
        .then(pl.lit("shingle_jaccard"))
        .when((pl.col("containment") >= params.min_containment) & (pl.col("min_size") >= params.min_containment_shingles))
        .then(pl.lit("containment"))
        .when((pl.col("word_jaccard") >= params.min_word_jaccard) & (pl.col("jaccard") >= params.min_jaccard_with_words))
        .then(pl.lit("word_overlap"))
    )


def assign_papers(records: pl.DataFrame, params: DedupParams = DedupParams()) -> pl.DataFrame:
    """One row per record (``source_file``, ``record_no``, ``file_sha256``, ``normalized_text``)
    with its ``paper_id``, how it matched its paper's canonical record, and the evidence."""
    if records.height == 0:
        return pl.DataFrame(schema=ASSIGNMENT_SCHEMA)
    records = records.select("source_file", "record_no", "file_sha256", "normalized_text").with_columns(
        exact_key=words(pl.col("normalized_text").str.to_lowercase()).list.join(" ")
    )
    texts = (
        records.group_by("exact_key")
        .agg(n_words=pl.col("normalized_text").first().str.count_matches(r"[\p{L}\p{N}]+"))
        .sort("exact_key")
        .with_row_index("doc")
    )
    word_lists = texts["exact_key"].str.split(" ")
    word_sets, shingles = shingle_table(word_lists, params.shingle_size)
    signature = minhash_signatures(shingles, texts.height, params.num_bins)
    evidence = verify_pairs(candidate_pairs(signature, params), shingles, word_sets, params)
    merged = evidence.filter(pl.col("matched_by").is_not_null())

    graph = coo_matrix(
        (np.ones(merged.height), (merged["a"].to_numpy(), merged["b"].to_numpy())), shape=(texts.height, texts.height)
    )
    _, component = connected_components(graph, directed=False)
    texts = texts.with_columns(component=pl.Series(component, dtype=pl.Int64))
    canonical_text = (
        texts.sort(["component", "n_words", "exact_key"], descending=[False, True, False])
        .group_by("component", maintain_order=True)
        .first()
        .select("component", canonical_doc="doc", canonical_key="exact_key")
    )
    texts = texts.join(canonical_text, on="component").with_columns(
        paper_id=pl.col("canonical_key").map_batches(
            lambda keys: pl.Series([paper_id_for(k) for k in keys.to_list()], dtype=pl.String), return_dtype=pl.String
        )
    )

    # Evidence of every text against its canonical text, read off the merged pairs or computed anew.
    to_canonical = texts.filter(pl.col("doc") != pl.col("canonical_doc")).select(
        a=pl.min_horizontal("doc", "canonical_doc").cast(pl.UInt32),
        b=pl.max_horizontal("doc", "canonical_doc").cast(pl.UInt32),
        doc=pl.col("doc").cast(pl.UInt32),
    )
    canonical_evidence = to_canonical.join(
        verify_pairs(to_canonical.select("a", "b"), shingles, word_sets, params), on=["a", "b"]
    ).select("doc", "jaccard", "containment", "word_jaccard", "matched_by")
    matched_by = merged.select("a", "b", pair_rule="matched_by")
    canonical_evidence = (
        canonical_evidence.join(to_canonical, on="doc")
        .join(matched_by, on=["a", "b"], how="left")
        .with_columns(matched_by=pl.coalesce("matched_by", "pair_rule", pl.lit("chain")))
        .select("doc", "jaccard", "containment", "word_jaccard", "matched_by")
    )

    canonical_words = texts.select("doc", "n_words").rename({"doc": "canonical_doc", "n_words": "canonical_n_words"})
    texts = (
        texts.with_columns(pl.col("doc").cast(pl.UInt32))
        .join(canonical_evidence, on="doc", how="left")
        .join(canonical_words, on="canonical_doc")
        .with_columns(length_ratio=pl.col("n_words") / pl.max_horizontal(pl.col("canonical_n_words"), 1))
    )

    assigned = records.join(texts, on="exact_key").sort("file_sha256", "record_no", "source_file")
    canonical_record = (
        assigned.filter(pl.col("doc") == pl.col("canonical_doc"))
        .group_by("paper_id", maintain_order=True)
        .first()
        .select("paper_id", canonical_source_file="source_file", canonical_record_no="record_no",
                canonical_sha="file_sha256")
    )
    is_canonical = (pl.col("source_file") == pl.col("canonical_source_file")) & (
        pl.col("record_no") == pl.col("canonical_record_no")
    ) & (pl.col("file_sha256") == pl.col("canonical_sha"))
    same_text = pl.col("doc") == pl.col("canonical_doc")
    return (
        assigned.join(canonical_record, on="paper_id")
        .with_columns(
            match_kind=pl.when(is_canonical).then(pl.lit("canonical")).when(same_text).then(pl.lit("exact")).otherwise(pl.lit("near")),
            matched_by=pl.when(same_text).then(pl.when(is_canonical).then(pl.lit("canonical")).otherwise(pl.lit("identical_text"))).otherwise("matched_by"),
            similarity=pl.when(same_text).then(1.0).otherwise("jaccard"),
            containment=pl.when(same_text).then(1.0).otherwise("containment"),
            word_jaccard=pl.when(same_text).then(1.0).otherwise("word_jaccard"),
        )
        .select(list(ASSIGNMENT_SCHEMA))
        .cast(ASSIGNMENT_SCHEMA)
        .sort("source_file", "record_no")
    )
