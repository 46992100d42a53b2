"""Find the papers behind the records: exact duplicates, then near duplicates.

1. Exact: records whose normalised word sequence is identical collapse into one text.
2. Near: each distinct text gets a MinHash signature over its word 3-shingles, and LSH
   banding proposes candidate pairs (``paperhouse.dedup.minhash``); each candidate is verified on
   the exact shingle and word sets and merged by the first rule that holds
   (``paperhouse.dedup.verification``; the thresholds are ``DedupParams``).
3. Connected components of verified pairs are papers. Everything is vectorised over
   NumPy arrays and Polars frames: no per-document Python loops in the hot path.

Canonical record of a paper (deterministic, independent of file order and names):
the text with the most words (the most complete version); ties go to the smallest
normalised text. Among identical records, the one with the smallest
``(file_sha256, record_no)``. ``paper_id`` is a hash of the canonical normalised text.
"""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from paperhouse.common.arrays import slices
from paperhouse.dedup.minhash import candidate_pairs, signatures
from paperhouse.dedup.params import DedupParams
from paperhouse.dedup.verification import sets_of_pairs, verify_pairs
from paperhouse.ingest.normalize import joined_words

# Keys hashed through Python strings at once (about 20 MB of them).
_KEYS_PER_SLICE = 10_000
_DEFAULT_PARAMS = DedupParams()  # frozen: one instance serves every call

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


def text_hash(normalized_words: str) -> str:
    return hashlib.sha256(normalized_words.encode()).hexdigest()


def _text_hashes(keys: pl.Series) -> pl.Series:
    """``text_hash`` of each key, a slice at a time: a million keys as Python strings at once took
    1.8 GB that the allocator kept after they were freed."""
    parts = slices(keys, _KEYS_PER_SLICE)
    return pl.concat([pl.Series([text_hash(key) for key in part.to_list()], dtype=pl.String) for part in parts])


def paper_id_for(normalized_words: str) -> str:
    """The id a new paper is minted with (``paperhouse.dedup.registry`` keeps it from then on)."""
    return "p_" + text_hash(normalized_words)[:16]


def paper_id_of(text_hash: pl.Expr) -> pl.Expr:
    """``paper_id_for`` from the SHA-256 of the canonical text, without hashing the text again."""
    return pl.lit("p_") + text_hash.str.slice(0, 16)


def keyed_records(records: pl.DataFrame) -> pl.DataFrame:
    """The records' ids (``source_file``, ``record_no``, ``file_sha256``) and each one's
    ``exact_key``: its normalised words joined by single spaces, the same for exact duplicates."""
    # Streamed: the engine splits the one chunk DuckDB hands over, so both cores build the keys.
    return (
        records.lazy()
        .select("source_file", "record_no", "file_sha256", exact_key=joined_words(pl.col("normalized_text")))
        .collect(engine="streaming")
    )


def word_count(exact_key: pl.Expr) -> pl.Expr:
    """The words of each text, from its exact key (UInt32)."""
    return pl.when(exact_key == "").then(0).otherwise(exact_key.str.count_matches(" ") + 1).cast(pl.UInt32)


def with_text_facts(texts: pl.DataFrame) -> pl.DataFrame:
    """``texts`` (one ``exact_key`` each) with each text's ``n_words`` and ``text_hash``."""
    return texts.with_columns(
        n_words=word_count(pl.col("exact_key")),
        text_hash=pl.col("exact_key").map_batches(_text_hashes, return_dtype=pl.String),
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


def assign_papers(records: pl.DataFrame, params: DedupParams = _DEFAULT_PARAMS) -> pl.DataFrame:
    """One row per record (``source_file``, ``record_no``, ``file_sha256``, ``normalized_text``
    as ``paperhouse.ingest.normalize`` makes it) with its ``paper_id``, how it matched its paper's
    canonical record, and the evidence."""
    if records.height == 0:
        return pl.DataFrame(schema=ASSIGNMENT_SCHEMA)
    records = keyed_records(records)
    texts = with_text_facts(records.select("exact_key").unique().sort("exact_key").with_row_index("doc"))
    # Records and texts then refer to a text by number (``doc``: its key's rank among the sorted
    # distinct keys), and the keys are held once, in ``keys``, until the sets are built.
    records = records.select("source_file", "record_no", "file_sha256", doc=pl.col("exact_key").rank("dense") - 1)
    keys, texts = texts["exact_key"], texts.drop("exact_key")
    signature, sizes = signatures(keys, params)
    candidates = candidate_pairs(signature, sizes, params)
    del signature  # a gigabyte at a million texts, and verification does not need it
    # Every text merged into a paper is in a candidate pair, its paper's canonical text too: the
    # sets of the candidates serve the evidence against the canonical texts below as well.
    shingles, word_sets = sets_of_pairs(candidates, keys, texts["n_words"].to_numpy(), params)
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
    texts = texts.join(canonical_text, on="component").with_columns(paper_id=paper_id_of(pl.col("canonical_hash")))

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
        "matched_by",
    )

    canonical_words = texts.select("doc", "n_words").rename({"doc": "canonical_doc", "n_words": "canonical_n_words"})
    texts = (
        texts.with_columns(pl.col("doc").cast(pl.UInt32))
        .join(canonical_evidence, on="doc", how="left")
        .join(canonical_words, on="canonical_doc")
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
    return assignment_rows(assigned.join(canonical_record, on="paper_id")).sort("source_file", "record_no")


def assignment_rows(assigned: pl.DataFrame) -> pl.DataFrame:
    """The ``ASSIGNMENT_SCHEMA`` row of each record, from the record (``source_file``, ``record_no``,
    ``file_sha256``, ``doc``: its text's number), its text (``n_words``, ``text_hash``), its paper
    (``paper_id``, ``canonical_doc``, ``canonical_n_words``, and ``canonical_source_file``,
    ``canonical_record_no``, ``canonical_sha``: the canonical record), and the evidence of its text
    against the canonical text (``jaccard``, ``containment``, ``word_jaccard``, and ``matched_by``,
    null where no rule holds; all null for the canonical text). Row by row: the records may come in any parts."""
    is_canonical = (
        (pl.col("source_file") == pl.col("canonical_source_file"))
        & (pl.col("record_no") == pl.col("canonical_record_no"))
        & (pl.col("file_sha256") == pl.col("canonical_sha"))
    )
    same_text = pl.col("doc") == pl.col("canonical_doc")
    return (
        assigned.with_columns(
            length_ratio=pl.col("n_words") / pl.max_horizontal(pl.col("canonical_n_words"), 1),
            match_kind=pl.when(is_canonical)
            .then(pl.lit("canonical"))
            .when(same_text)
            .then(pl.lit("exact"))
            .otherwise(pl.lit("near")),
            matched_by=pl.when(same_text)
            .then(pl.when(is_canonical).then(pl.lit("canonical")).otherwise(pl.lit("identical_text")))
            # No rule holds between the two texts directly: the text reached its paper through another.
            .otherwise(pl.coalesce("matched_by", pl.lit("chain"))),
            similarity=pl.when(same_text).then(1.0).otherwise("jaccard"),
            containment=pl.when(same_text).then(1.0).otherwise("containment"),
            word_jaccard=pl.when(same_text).then(1.0).otherwise("word_jaccard"),
        )
        .select(list(ASSIGNMENT_SCHEMA))
        .cast(ASSIGNMENT_SCHEMA)
    )
