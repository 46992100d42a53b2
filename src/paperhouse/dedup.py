"""Find the papers behind the records: exact duplicates, then near duplicates.

1. Exact: records whose normalised word sequence is identical collapse into one text.
2. Near: each distinct text gets a one-permutation MinHash signature over its word
   3-shingles (densified, so short texts still fill every bin); LSH banding proposes
   candidate pairs; each candidate is verified on the exact shingle and word sets.
   Signatures are computed a batch of texts at a time and the sets are rebuilt only for the
   texts of candidate pairs, so memory holds signatures, not every text's shingles.
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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from paperhouse.arrays import ColumnBuffer, dense_codes, slices, sorted_unique
from paperhouse.normalize import joined_words

_U64 = np.uint64
_MASK32 = _U64(0xFFFFFFFF)
_GOLDEN = _U64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class DedupParams:
    shingle_size: int = 3
    num_bins: int = 256
    bands: int = 64  # 64 bands of 4 rows: a pair at Jaccard 0.5 collides in some band with p = 0.984
    max_bucket: int = 500  # larger LSH buckets hold boilerplate, not one paper's copies
    # Verification is exact but costs a join; estimates from the signatures skip hopeless pairs,
    # with about two standard errors of margin below the loosest rule.
    min_estimated_jaccard: float = 0.18
    min_estimated_containment: float = 0.45
    min_jaccard: float = 0.5
    min_containment: float = 0.8
    min_containment_shingles: int = 20  # containment of a tiny text proves nothing
    min_revision_containment: float = 0.6  # a revision keeps most of the smaller text's phrasing
    min_revision_word_jaccard: float = 0.6  # ... and of its vocabulary
    min_word_jaccard: float = 0.7
    min_jaccard_with_words: float = 0.25


# Texts signed together (about 9M shingles, 0.5 GB of working memory); two batches are signed at once.
SIGNATURE_BATCH = 50_000
# Candidate pairs whose signatures (2 x 100 MB of 256-bin signatures) or sets are compared at once.
_PAIRS_PER_CHUNK = 100_000
# Keys hashed through Python strings at once (about 20 MB of them).
_KEYS_PER_SLICE = 10_000

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
    "text_hash": pl.String,  # SHA-256 of the normalised word sequence: the key of exact duplicates
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


def text_hash(normalized_words: str) -> str:
    return hashlib.sha256(normalized_words.encode()).hexdigest()


def _text_hashes(keys: pl.Series) -> pl.Series:
    """``text_hash`` of each key, a slice at a time: a million keys as Python strings at once took
    1.8 GB that the allocator kept after they were freed."""
    parts = slices(keys, _KEYS_PER_SLICE)
    return pl.concat([pl.Series([text_hash(key) for key in part.to_list()], dtype=pl.String) for part in parts])


def paper_id_for(normalized_words: str) -> str:
    """The id a new paper is minted with (``paperhouse.registry`` keeps it from then on)."""
    return "p_" + text_hash(normalized_words)[:16]


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
    _n_docs, num_bins = signature.shape
    rows = num_bins // params.bands
    usable = np.flatnonzero(signature[:, 0] != np.iinfo(np.uint32).max)

    def band_pairs(band: int) -> pl.DataFrame:
        # Strided bins (band, band + bands, ...): densification copies a filled bin into the empty
        # bins to its left, so adjacent bins are correlated and would make a band collide too easily.
        block = signature[usable, band : band + rows * params.bands : params.bands].astype(_U64)
        key = np.full(len(usable), _U64(band), dtype=_U64)
        for column in block.T:
            key = _mix(key * _GOLDEN + column)
        buckets = pl.DataFrame({"key": key, "doc": usable.astype(np.uint32)})
        shared = buckets.filter(pl.len().over("key").is_between(2, params.max_bucket))
        pairs = shared.join(shared, on="key", suffix="_b").filter(pl.col("doc") < pl.col("doc_b"))
        return _promising(pairs.select(a="doc", b="doc_b"), signature, sizes, params)

    with ThreadPoolExecutor(max_workers=2) as pool:
        bands = pool.map(band_pairs, range(params.bands if len(usable) >= 2 else 0))
        promising = [pl.DataFrame(schema={"a": pl.UInt32, "b": pl.UInt32}), *bands]
    return pl.concat(promising).unique().sort("a", "b")


def _promising(pairs: pl.DataFrame, signature: np.ndarray, sizes: np.ndarray, params: DedupParams) -> pl.DataFrame:
    """The pairs whose whole signatures say a merge rule could hold: a band can collide by chance,
    while the signature estimates the Jaccard similarity and, with the sizes, the containment:
    |A and B| = J (|A| + |B|) / (1 + J)."""
    a, b = pairs["a"].to_numpy(), pairs["b"].to_numpy()
    # Signatures compared a chunk of pairs at a time, so memory stays flat however many pairs collide.
    jaccard = np.concatenate(
        [np.zeros(0)]
        + [
            (signature[a[start : start + _PAIRS_PER_CHUNK]] == signature[b[start : start + _PAIRS_PER_CHUNK]]).mean(
                axis=1
            )
            for start in range(0, len(a), _PAIRS_PER_CHUNK)
        ]
    )
    containment = jaccard * (sizes[a] + sizes[b]) / ((1 + jaccard) * np.maximum(np.minimum(sizes[a], sizes[b]), 1))
    promising = (jaccard >= params.min_estimated_jaccard) | (containment >= params.min_estimated_containment)
    return pairs.filter(pl.Series(promising))


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
    for start in range(0, len(a), _PAIRS_PER_CHUNK):
        chunk = slice(start, start + _PAIRS_PER_CHUNK)
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


def paper_edges(merged: pl.DataFrame) -> pl.DataFrame:
    """The merged pairs that define papers: every symmetric match, and for each text matched
    only by being *contained* in others (a truncated copy), the single best container.

    A short fragment can be contained in two different papers that share an opening; letting
    it join both would chain the two papers together.
    """
    symmetric = merged.filter(pl.col("matched_by") != "containment").select("a", "b")
    has_symmetric = pl.concat([symmetric["a"], symmetric["b"]]).unique().implode()
    contained = (
        merged.filter(pl.col("matched_by") == "containment")
        .with_columns(
            fragment=pl.when(pl.col("size_a") <= pl.col("size_b")).then("a").otherwise("b"),
            container=pl.when(pl.col("size_a") <= pl.col("size_b")).then("b").otherwise("a"),
        )
        .filter(~pl.col("fragment").is_in(has_symmetric))
        .sort(["fragment", "jaccard", "container"], descending=[False, True, False])
        .group_by("fragment", maintain_order=True)
        .first()
        .select("a", "b")
    )
    return pl.concat([symmetric, contained])


def _words_of(keys: pl.Series) -> pl.Series:
    """Each text's words back from its exact key (its words joined by single spaces); null when none."""
    key = pl.col(keys.name)
    return keys.to_frame().select(pl.when(key != "").then(key.str.split(" "))).to_series()


def _signatures(keys: pl.Series, params: DedupParams) -> tuple[np.ndarray, np.ndarray]:
    """The MinHash signature and the number of shingles of every text, ``SIGNATURE_BATCH`` texts at a time."""
    signature = np.empty((len(keys), params.num_bins), dtype=np.uint32)
    sizes = np.empty(len(keys), dtype=np.int64)

    def sign(start: int) -> None:
        batch = keys.slice(start, SIGNATURE_BATCH)
        _, shingles = shingle_table(_words_of(batch), params.shingle_size)
        signature[start : start + len(batch)] = minhash_signatures(shingles, len(batch), params.num_bins)
        sizes[start : start + len(batch)] = np.bincount(shingles["doc"].to_numpy(), minlength=len(batch))

    # NumPy releases the GIL on whole-array work: two batches at a time keep both cores busy.
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(sign, range(0, len(keys), SIGNATURE_BATCH)))
    return signature, sizes


def _sets_of_pairs(
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
        words, shingled = shingle_table(_words_of(keys.gather(docs)), params.shingle_size)
        # shingle_table numbers the texts it is given 0, 1, ...: back to their numbers among all texts.
        for buffer, rows in ((word_sets, words), (shingles, shingled)):
            buffer.append({"doc": docs[rows["doc"].to_numpy()], "hash": rows["hash"].to_numpy()})
    frame = lambda buffer: pl.DataFrame({"doc": buffer["doc"], "hash": buffer["hash"]})  # noqa: E731
    return frame(shingles), frame(word_sets)


def assign_papers(records: pl.DataFrame, params: DedupParams = DedupParams()) -> pl.DataFrame:
    """One row per record (``source_file``, ``record_no``, ``file_sha256``, ``normalized_text``
    as ``paperhouse.normalize`` makes it) with its ``paper_id``, how it matched its paper's
    canonical record, and the evidence."""
    if records.height == 0:
        return pl.DataFrame(schema=ASSIGNMENT_SCHEMA)
    # Streamed: the engine splits the one chunk DuckDB hands over, so both cores build the keys.
    records = (
        records.lazy()
        .select("source_file", "record_no", "file_sha256", exact_key=joined_words(pl.col("normalized_text")))
        .collect(engine="streaming")
    )
    texts = (
        records.select("exact_key")
        .unique()
        .sort("exact_key")
        .with_row_index("doc")
        .with_columns(
            n_words=pl.when(pl.col("exact_key") == "")
            .then(0)
            .otherwise(pl.col("exact_key").str.count_matches(" ") + 1)
            .cast(pl.UInt32),
            text_hash=pl.col("exact_key").map_batches(_text_hashes, return_dtype=pl.String),
        )
    )
    # Records and texts then refer to a text by number (``doc``: its key's rank among the sorted
    # distinct keys), and the keys are held once, in ``keys``, until the sets are built.
    records = records.select("source_file", "record_no", "file_sha256", doc=pl.col("exact_key").rank("dense") - 1)
    keys, texts = texts["exact_key"], texts.drop("exact_key")
    signature, sizes = _signatures(keys, params)
    candidates = candidate_pairs(signature, sizes, params)
    del signature  # a gigabyte at a million texts, and verification does not need it
    # Every text merged into a paper is in a candidate pair, its paper's canonical text too: the
    # sets of the candidates serve the evidence against the canonical texts below as well.
    shingles, word_sets = _sets_of_pairs(candidates, keys, texts["n_words"].to_numpy(), params)
    del keys
    evidence = verify_pairs(candidates, shingles, word_sets, params)
    merged = evidence.filter(pl.col("matched_by").is_not_null())
    edges = paper_edges(merged)

    graph = coo_matrix(
        (np.ones(edges.height), (edges["a"].to_numpy(), edges["b"].to_numpy())), shape=(texts.height, texts.height)
    )
    _, component = connected_components(graph, directed=False)
    texts = texts.with_columns(component=pl.Series(component, dtype=pl.Int64))
    canonical_text = (
        texts.sort(["component", "n_words", "doc"], descending=[False, True, False])  # doc: in key order
        .group_by("component", maintain_order=True)
        .first()
        .select("component", canonical_doc="doc", canonical_hash="text_hash")
    )
    # The same as paper_id_for(canonical text), without hashing it again.
    texts = texts.join(canonical_text, on="component").with_columns(
        paper_id=pl.lit("p_") + pl.col("canonical_hash").str.slice(0, 16)
    )

    # Evidence of every text against its paper's canonical text.
    to_canonical = texts.filter(pl.col("doc") != pl.col("canonical_doc")).select(
        a=pl.min_horizontal("doc", "canonical_doc").cast(pl.UInt32),
        b=pl.max_horizontal("doc", "canonical_doc").cast(pl.UInt32),
        doc=pl.col("doc").cast(pl.UInt32),
    )
    # Most texts were a candidate pair with their canonical text, so their evidence is at hand: only
    # those that reached their paper through another text are verified again.
    pairs = to_canonical.select("a", "b")
    verified = pl.concat(
        [
            evidence.join(pairs, on=["a", "b"], how="semi"),
            verify_pairs(pairs.join(evidence, on=["a", "b"], how="anti"), shingles, word_sets, params),
        ]
    )
    canonical_evidence = to_canonical.join(verified, on=["a", "b"]).select(
        "doc",
        "jaccard",
        "containment",
        "word_jaccard",
        # No rule holds between the two directly: the text reached its paper through another one.
        matched_by=pl.coalesce("matched_by", pl.lit("chain")),
    )

    canonical_words = texts.select("doc", "n_words").rename({"doc": "canonical_doc", "n_words": "canonical_n_words"})
    texts = (
        texts.with_columns(pl.col("doc").cast(pl.UInt32))
        .join(canonical_evidence, on="doc", how="left")
        .join(canonical_words, on="canonical_doc")
        .with_columns(length_ratio=pl.col("n_words") / pl.max_horizontal(pl.col("canonical_n_words"), 1))
    )

    assigned = records.join(texts, on="doc").sort("file_sha256", "record_no", "source_file")
    canonical_record = (
        assigned.filter(pl.col("doc") == pl.col("canonical_doc"))
        .group_by("paper_id", maintain_order=True)
        .first()
        .select(
            "paper_id",
            canonical_source_file="source_file",
            canonical_record_no="record_no",
            canonical_sha="file_sha256",
        )
    )
    is_canonical = (
        (pl.col("source_file") == pl.col("canonical_source_file"))
        & (pl.col("record_no") == pl.col("canonical_record_no"))
        & (pl.col("file_sha256") == pl.col("canonical_sha"))
    )
    same_text = pl.col("doc") == pl.col("canonical_doc")
    return (
        assigned.join(canonical_record, on="paper_id")
        .with_columns(
            match_kind=pl.when(is_canonical)
            .then(pl.lit("canonical"))
            .when(same_text)
            .then(pl.lit("exact"))
            .otherwise(pl.lit("near")),
            matched_by=pl.when(same_text)
            .then(pl.when(is_canonical).then(pl.lit("canonical")).otherwise(pl.lit("identical_text")))
            .otherwise("matched_by"),
            similarity=pl.when(same_text).then(1.0).otherwise("jaccard"),
            containment=pl.when(same_text).then(1.0).otherwise("containment"),
            word_jaccard=pl.when(same_text).then(1.0).otherwise("word_jaccard"),
        )
        .select(list(ASSIGNMENT_SCHEMA))
        .cast(ASSIGNMENT_SCHEMA)
        .sort("source_file", "record_no")
    )
