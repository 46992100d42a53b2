"""Verification of candidate pairs on their exact shingle and word sets, and the rule that merges each.

A pair is merged when its texts resemble each other (shingle Jaccard), when one is (nearly)
contained in the other (a truncated or extended copy), or when they share almost all words and a
fair part of their phrasing (a reworded revision). The sets are rebuilt only for the texts of
candidate pairs.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from paperhouse.common.arrays import ColumnBuffer, dense_codes, slices, sorted_unique
from paperhouse.dedup.minhash import PAIRS_PER_CHUNK, SIGNATURE_BATCH, shingle_table, words_of
from paperhouse.dedup.params import DedupParams

_U64 = np.uint64
_MASK32 = _U64(0xFFFFFFFF)


def set_overlap(pairs: pl.DataFrame, sets: pl.DataFrame) -> pl.DataFrame:
    """Intersection, Jaccard and containment of the hash sets of each (a, b) pair (``sets``: (doc,
    hash) rows in doc order, repeats allowed)."""
    doc = sets["doc"].to_numpy()
    a, b = pairs["a"].to_numpy().astype(doc.dtype), pairs["b"].to_numpy().astype(doc.dtype)
    involved = sorted_unique(np.concatenate([a, b]))
    # Pairs involve few texts: their rows are read as ranges of the doc-ordered rows, not searched for.
    rows = _ranges(np.searchsorted(doc, involved, "left"), np.searchsorted(doc, involved, "right"))
    # (doc, hash) as one sorted integer: hashes numbered densely below 2**32, the doc above.
    hashes = sets["hash"].to_numpy()[rows]
    hash_number = dense_codes(hashes)[1].astype(_U64)
    members = sorted_unique((doc[rows].astype(_U64) << _U64(32)) | hash_number)
    member_doc = members >> _U64(32)
    first, last = np.searchsorted(member_doc, a, "left"), np.searchsorted(member_doc, a, "right")
    size_a = last - first
    size_b = np.searchsorted(member_doc, b, "right") - np.searchsorted(member_doc, b, "left")
    # Each member of a, looked up among the members of b, a chunk of pairs at a time: all at once,
    # the lookups (five arrays the size of every pair's members of a) were 1-2 GB at 10^6 texts.
    shared = np.empty(len(a), dtype=np.float64)
    for start in range(0, len(a), PAIRS_PER_CHUNK):
        chunk = slice(start, start + PAIRS_PER_CHUNK)
        chunk_sizes = size_a[chunk]
        of_a = _ranges(first[chunk], last[chunk])
        pair = np.repeat(np.arange(len(chunk_sizes)), chunk_sizes)
        wanted = (b[chunk][pair].astype(_U64) << _U64(32)) | (members[of_a] & _MASK32)
        found = members[np.minimum(np.searchsorted(members, wanted), len(members) - 1)] == wanted
        shared[chunk] = np.bincount(pair[found], minlength=len(chunk_sizes))
    smaller = np.minimum(size_a, size_b).astype(np.float64)
    return pairs.with_columns(
        shared=shared,
        size_a=size_a.astype(np.float64),
        size_b=size_b.astype(np.float64),
        jaccard=shared / np.maximum(size_a + size_b - shared, 1),
        containment=shared / np.maximum(smaller, 1),
        min_size=smaller,
    )


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The indices of every range [start, end), concatenated."""
    lengths = ends - starts
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())


def verify_pairs(
    pairs: pl.DataFrame, shingles: pl.DataFrame, word_sets: pl.DataFrame, params: DedupParams
) -> pl.DataFrame:
    """The evidence for each pair and the rule that merges it (null: kept apart).

    The two overlaps are computed one after the other: side by side on two threads they took 21.5 s
    at 10^6 texts against 31.5-37.7 s, but raised dedup's peak from 7.5-7.7 to 9.8 GB."""
    by_shingles = set_overlap(pairs, shingles).select(
        "a", "b", "jaccard", "containment", "min_size", "size_a", "size_b"
    )
    by_words = set_overlap(pairs, word_sets).select("a", "b", word_jaccard="jaccard")
    evidence = by_shingles.join(by_words, on=["a", "b"])
    return evidence.with_columns(
        matched_by=pl.when(pl.col("jaccard") >= params.min_jaccard)
        .then(pl.lit("shingle_jaccard"))
        .when(
            (pl.col("containment") >= params.min_containment) & (pl.col("min_size") >= params.min_containment_shingles)
        )
        .then(pl.lit("containment"))
        .when(
            (pl.col("containment") >= params.min_revision_containment)
            & (pl.col("word_jaccard") >= params.min_revision_word_jaccard)
            & (pl.col("min_size") >= params.min_containment_shingles)
        )
        .then(pl.lit("revision"))
        .when(
            (pl.col("word_jaccard") >= params.min_word_jaccard) & (pl.col("jaccard") >= params.min_jaccard_with_words)
        )
        .then(pl.lit("word_overlap"))
    )


def sets_of_pairs(
    pairs: pl.DataFrame, keys: pl.Series, n_words: np.ndarray, params: DedupParams
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The shingle and word sets ``verify_pairs`` needs, built for the texts the pairs involve and
    no others (``n_words``: the words of every text), ``SIGNATURE_BATCH`` texts at a time.

    A batch's words are split out of its keys as strings and hashed; for all the involved texts
    at once (most texts, at 10^6) that was the step's peak (``assign_papers`` alone: 5.3 GB here,
    4.1 GB batched). The sets themselves, 12 bytes a word each, are written in place into columns
    sized by the texts' words."""
    involved = sorted_unique(np.concatenate([pairs["a"].to_numpy(), pairs["b"].to_numpy()])).astype(np.uint32)
    capacity = int(n_words[involved].sum())
    shingles, word_sets = (ColumnBuffer(capacity, {"doc": np.uint32, "hash": _U64}) for _ in range(2))
    for batch in slices(pl.Series(involved), SIGNATURE_BATCH):
        docs = batch.to_numpy()
        words, shingled = shingle_table(words_of(keys.gather(docs)), params.shingle_size)
        # shingle_table numbers the texts it is given 0, 1, ...: back to their numbers among all texts.
        for buffer, rows in ((word_sets, words), (shingles, shingled)):
            buffer.append({"doc": docs[rows["doc"].to_numpy()], "hash": rows["hash"].to_numpy()})
    frame = lambda buffer: pl.DataFrame({"doc": buffer["doc"], "hash": buffer["hash"]})  # noqa: E731
    return frame(shingles), frame(word_sets)
