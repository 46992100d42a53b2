"""Near-duplicate candidates: MinHash signatures of the texts' word shingles, paired up by LSH.

Each distinct text gets a one-permutation MinHash signature over its word 3-shingles (densified, so
short texts still fill every bin); LSH banding proposes candidate pairs, and the whole signatures
keep only those a merge rule could hold for (``paperhouse.dedup.verification`` then verifies them).
Signatures are computed a batch of texts at a time, so memory holds signatures, not every text's
shingles.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import polars as pl

from paperhouse.dedup.params import DedupParams

_U64 = np.uint64
_MASK32 = _U64(0xFFFFFFFF)
_GOLDEN = _U64(0x9E3779B97F4A7C15)

# Texts signed together (about 9M shingles, 0.5 GB of working memory); two batches are signed at once.
SIGNATURE_BATCH = 50_000
# Candidate pairs whose signatures (2 x 100 MB of 256-bin signatures) or sets are compared at once.
PAIRS_PER_CHUNK = 100_000


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


def shingle_table(word_lists: pl.Series, shingle_size: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Word hashes and word-shingle hashes of each text, as (doc, hash) frames in doc order
    (repeats kept).

    Words are hashed once per distinct word (through an Enum of the vocabulary), never
    per occurrence. A text shorter than one shingle contributes its words as shingles,
    so it still matches.
    """
    words = pl.DataFrame({"words": word_lists}).with_row_index("doc").explode("words").drop_nulls("words")
    vocabulary = words.select(pl.col("words").unique(maintain_order=True)).to_series()  # unsorted: 3x faster
    vocabulary_hash = stable_hash64(vocabulary.to_list())
    token_hash = vocabulary_hash[words["words"].cast(pl.Enum(vocabulary)).to_physical().to_numpy()]
    doc = words["doc"].to_numpy()

    k = shingle_size
    n = len(doc)
    start = np.arange(max(n - k + 1, 0))
    start = start[doc[start] == doc[start + k - 1]] if n >= k else start[:0]
    # A shingle's hash is a polynomial in its words' hashes (h0 G^2 + h1 G + h2 for three words),
    # in place: 50,000 texts' shingles in 0.3-0.5 s where a splitmix round after each word took
    # 1.55 s. The words' hashes are already random, so any two orders of them differ but with
    # chance 2^-61, and minhash_signatures mixes the result before it picks a bin.
    shingle = token_hash[start]
    with np.errstate(over="ignore"):
        for offset in range(1, k):
            shingle *= _GOLDEN
            shingle += token_hash[start + offset]
    has_shingle = np.zeros(int(doc.max()) + 1 if n else 0, dtype=bool)
    has_shingle[doc[start]] = True
    short = ~has_shingle[doc]
    shingles = pl.DataFrame(
        {"doc": np.concatenate([doc[start], doc[short]]), "hash": np.concatenate([shingle, token_hash[short]])}
    )
    if short.any():  # the short texts' rows come last: back into doc order
        shingles = shingles.sort("doc", maintain_order=True)
    return pl.DataFrame({"doc": doc, "hash": token_hash}), shingles


def minhash_signatures(shingles: pl.DataFrame, n_docs: int, num_bins: int) -> np.ndarray:
    """Densified one-permutation MinHash: one hash per shingle, the minimum per bin.

    Empty bins borrow the value of the next filled bin to their right (circularly),
    shifted by the distance, as in Shrivastava (2017); a text without shingles keeps
    the sentinel in every bin and takes no part in LSH.
    """
    bin_bits = int(np.log2(num_bins))
    h = _mix(shingles["hash"].to_numpy())
    cell = shingles["doc"].to_numpy().astype(np.int64) * num_bins + (h >> _U64(64 - bin_bits)).astype(np.int64)
    empty = np.iinfo(np.uint32).max
    signature = np.full(n_docs * num_bins, empty, dtype=np.uint32)
    np.minimum.at(signature, cell, (h & _MASK32).astype(np.uint32))
    signature = signature.reshape(n_docs, num_bins)

    filled = signature != empty
    has_any = filled.any(axis=1)
    # For each bin, the nearest filled bin at or to its right (circularly), found by a running
    # maximum over the reversed, doubled row of filled positions (int16: 2 * bins < 32768).
    doubled = np.concatenate([filled, filled], axis=1)[:, ::-1]
    positions = np.where(doubled, np.arange(2 * num_bins, dtype=np.int16), np.int16(-1))
    nearest = np.maximum.accumulate(positions, axis=1)[:, ::-1][:, :num_bins]
    source = (2 * num_bins - 1) - nearest.astype(np.int32)
    distance = (source - np.arange(num_bins, dtype=np.int32)).astype(np.uint32)
    borrowed = np.take_along_axis(signature, np.where(has_any[:, None], source % num_bins, 0), axis=1)
    with np.errstate(over="ignore"):
        dense = np.where(filled, signature, borrowed + distance * np.uint32(0x9E3779B1))
    return np.where(has_any[:, None], dense, empty)


def candidate_pairs(signature: np.ndarray, sizes: np.ndarray, params: DedupParams) -> pl.DataFrame:
    """Pairs of texts that agree on every row of at least one LSH band, and whose whole
    signatures say a merge rule could hold (``sizes``: shingles per text).

    Bands are paired up one at a time on each of two threads (NumPy and Polars leave the
    interpreter free: 10^5 texts' 64 bands took 1.4-1.7 s on one, 0.9-1.0 s on two), and only
    promising pairs are kept: a million texts' colliding pairs of every band at once took over 10 GB."""
    usable = signed_texts(signature)

    def band_pairs(band: int) -> pl.DataFrame:
        buckets = pl.DataFrame({"key": band_keys(signature, usable, band, params), "doc": usable.astype(np.uint32)})
        shared = buckets.filter(pl.len().over("key").is_between(2, params.max_bucket))
        pairs = shared.join(shared, on="key", suffix="_b").filter(pl.col("doc") < pl.col("doc_b"))
        return promising_pairs(pairs.select(a="doc", b="doc_b"), signature, sizes, params)

    with ThreadPoolExecutor(max_workers=2) as pool:
        bands = pool.map(band_pairs, range(params.bands if len(usable) >= 2 else 0))
        promising = [pl.DataFrame(schema={"a": pl.UInt32, "b": pl.UInt32}), *bands]
    return pl.concat(promising).unique().sort("a", "b")


def signed_texts(signature: np.ndarray) -> np.ndarray:
    """The rows of the texts that have a signature (a text without shingles takes no part in LSH)."""
    return np.flatnonzero(signature[:, 0] != np.iinfo(np.uint32).max)


def band_keys(signature: np.ndarray, rows: np.ndarray, band: int, params: DedupParams) -> np.ndarray:
    """The LSH bucket of each of the texts at ``rows`` in one band: a hash of the band's bins and its
    number, so that equal keys mean the texts agree on every bin of that band."""
    bins_per_band = signature.shape[1] // params.bands
    # Strided bins (band, band + bands, ...): densification copies a filled bin into the empty
    # bins to its left, so adjacent bins are correlated and would make a band collide too easily.
    block = signature[rows, band : band + bins_per_band * params.bands : params.bands].astype(_U64)
    key = np.full(len(rows), _U64(band), dtype=_U64)
    for column in block.T:
        key = _mix(key * _GOLDEN + column)
    return key


def promising_pairs(pairs: pl.DataFrame, signature: np.ndarray, sizes: np.ndarray, params: DedupParams) -> pl.DataFrame:
    """The pairs whose whole signatures say a merge rule could hold: a band can collide by chance,
    while the signature estimates the Jaccard similarity and, with the sizes, the containment:
    |A and B| = J (|A| + |B|) / (1 + J)."""
    a, b = pairs["a"].to_numpy(), pairs["b"].to_numpy()
    # Signatures compared a chunk of pairs at a time, so memory stays flat however many pairs collide.
    jaccard = np.concatenate(
        [np.zeros(0)]
        + [
            (signature[a[start : start + PAIRS_PER_CHUNK]] == signature[b[start : start + PAIRS_PER_CHUNK]]).mean(
                axis=1
            )
            for start in range(0, len(a), PAIRS_PER_CHUNK)
        ]
    )
    containment = jaccard * (sizes[a] + sizes[b]) / ((1 + jaccard) * np.maximum(np.minimum(sizes[a], sizes[b]), 1))
    promising = (jaccard >= params.min_estimated_jaccard) | (containment >= params.min_estimated_containment)
    return pairs.filter(pl.Series(promising))


def words_of(keys: pl.Series) -> pl.Series:
    """Each text's words back from its exact key (its words joined by single spaces); null when none."""
    key = pl.col(keys.name)
    return keys.to_frame().select(pl.when(key != "").then(key.str.split(" "))).to_series()


def signatures(keys: pl.Series, params: DedupParams) -> tuple[np.ndarray, np.ndarray]:
    """The MinHash signature and the number of shingles of every text, ``SIGNATURE_BATCH`` texts at a time."""
    signature = np.empty((len(keys), params.num_bins), dtype=np.uint32)
    sizes = np.empty(len(keys), dtype=np.int64)

    def sign(start: int) -> None:
        batch = keys.slice(start, SIGNATURE_BATCH)
        _, shingles = shingle_table(words_of(batch), params.shingle_size)
        signature[start : start + len(batch)] = minhash_signatures(shingles, len(batch), params.num_bins)
        sizes[start : start + len(batch)] = np.bincount(shingles["doc"].to_numpy(), minlength=len(batch))

    # NumPy releases the GIL on whole-array work: two batches at a time keep both cores busy.
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(sign, range(0, len(keys), SIGNATURE_BATCH)))
    return signature, sizes
