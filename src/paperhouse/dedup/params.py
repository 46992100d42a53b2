"""How dedup shingles, signs and bands texts, and the rules by which it merges a pair."""

from __future__ import annotations

from dataclasses import dataclass


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
