"""Every run of one to four words inside a chunk, numbered and counted per paper, as NumPy arrays of
integer codes: the counting is runs of one sorted array, with no hashing of strings."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import numpy as np
import polars as pl

from paperhouse.common.arrays import FirstSeenNumbers

# The n-grams of this many words of the corpus (whole papers) are numbered and counted at a time.
_TOKENS_PER_PART = 1 << 23


# An n-gram id's low bits number it among the n-grams of its length; the bits above hold the length.
_NUMBER_BITS = 29


# One part of the (paper, n-gram) counts: sorted (paper << 32 | n-gram id) keys, counts, heads.
NgramCounts = tuple[np.ndarray, np.ndarray, np.ndarray]


def count_ngrams(tokens: pl.DataFrame, lemmas: pl.Series, max_words: int) -> tuple[list[NgramCounts], list[pl.Series]]:
    """Every run of 1..max_words words inside one chunk, counted per paper.

    Returns the counts, one part per ``_TOKENS_PER_PART`` words of the corpus (cut between papers,
    so each part's keys follow the last's), and, per length, the text of each number. An n-gram
    is numbered by the pair (its first n-1 words' number, its last word), in the order pairs are
    first seen, so each occurrence is one integer and each distinct n-gram's text is built once.
    Its id (``_ngram_id``) is its length and that number.

    ``heads`` counts the occurrences that end their chunk. English noun phrases end in their
    head noun, so a candidate that rarely ends a chunk is a modifier ("erroneous") or a cut
    phrase ("rotor-invariant shift" of "rotor-invariant shift estimation").
    """
    if max_words > 1 << (32 - _NUMBER_BITS):
        raise ValueError(f"n-grams of up to {1 << (32 - _NUMBER_BITS)} words are counted, not {max_words}")
    # 32-bit arrays, widened only for the arithmetic: each is one word per word of the corpus.
    paper_idx = tokens["paper_idx"].to_numpy()
    code = tokens["code"].to_numpy()
    starts_chunk = tokens["starts_chunk"].to_numpy()
    # A count is at most its paper's words: 16 bits hold any abstract's (ingest caps a record at
    # 20,000 characters), a quarter of each (paper, n-gram) row at 10^6 papers.
    count_type = np.uint16 if len(code) == 0 or np.bincount(paper_idx).max() < 2**16 else np.uint32
    numberings = [FirstSeenNumbers(pl.Int64) for _ in range(2, max_words + 1)]
    # A cut every _TOKENS_PER_PART words, moved back to the first word of that word's paper.
    cuts = np.unique(np.r_[np.searchsorted(paper_idx, paper_idx[::_TOKENS_PER_PART]), len(code)])
    # A part is numbered here while the one before it is counted on a second thread (the numbering's
    # Polars joins and the counting's NumPy leave the interpreter free): two parts' n-grams are held.
    counted = []
    with ThreadPoolExecutor(max_workers=1) as counter:
        for start, end in pairwise(cuts):
            starts, ids, heads = _number_part(code[start:end], starts_chunk[start:end], len(lemmas), numberings)
            if counted:
                counted[-1].result()
            counted.append(counter.submit(_count_part, paper_idx[start:end][starts], ids, heads, count_type))
            del starts, ids, heads
        parts = [part.result() for part in counted]
    texts = [lemmas]
    for numbering in numberings:
        pairs = numbering.values
        texts.append(texts[-1].gather(pairs // len(lemmas)) + " " + lemmas.gather(pairs % len(lemmas)))
    return parts, texts


def _number_part(
    code: np.ndarray, starts_chunk: np.ndarray, n_lemmas: int, numberings: list[FirstSeenNumbers]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The n-grams of one part's words (whole papers), every length one after another: the word
    each starts at, its id, and whether it ends its chunk. ``numberings`` number the pairs of
    lengths 2 and up, across parts."""
    n_tokens = len(code)
    starts = np.arange(n_tokens, dtype=np.int32)  # the words an n-gram starts at
    number = code  # the number of the n-gram at each start; here n = 1
    all_starts, all_ids, all_heads = [], [], []
    for n in range(1, len(numberings) + 2):
        if n > 1:
            # An n-gram is an (n-1)-gram whose next word continues its chunk.
            last = starts + n - 1
            longer = last < n_tokens
            longer[longer] = ~starts_chunk[last[longer]]
            starts = starts[longer]
            pair = number[longer].astype(np.int64) * n_lemmas + code[starts + n - 1]
            number = numberings[n - 2].number(pl.Series(pair, dtype=pl.Int64)).to_numpy()
        ends = starts + n
        all_starts.append(starts)
        all_ids.append(_ngram_id(n, number))
        # The part ends where a paper does: an n-gram that reaches its end ends its chunk.
        all_heads.append((ends >= n_tokens) | starts_chunk[np.minimum(ends, n_tokens - 1)])
    return np.concatenate(all_starts), np.concatenate(all_ids), np.concatenate(all_heads)


def _ngram_id(n: int, number: np.ndarray) -> np.ndarray:
    """An n-gram's id, 32 bits: its length less one above ``_NUMBER_BITS`` bits of its number."""
    if len(number) and number.max() >= 1 << _NUMBER_BITS:
        raise ValueError(f"more than 2^{_NUMBER_BITS} distinct n-grams of {n} words")
    return (np.uint64(n - 1) << np.uint64(_NUMBER_BITS)) | number.astype(np.uint64)


def number_ngrams(counts: list[NgramCounts], texts: list[pl.Series]) -> tuple[list[pl.DataFrame], pl.DataFrame]:
    """Each part of ``count_ngrams`` as a frame (``paper_idx``, ``term_idx``, ``count``, ``heads``;
    in paper order), and the ``vocabulary`` (``term_idx``, ``term``) they index, numbered in the
    terms' sort order so ties break alphabetically on integers.

    ``counts`` is emptied as each part becomes a frame, so the counts are held once."""
    # An id's position in the texts of every length, one after another.
    first_positions = np.cumsum([0] + [len(length) for length in texts[:-1]]).astype(np.uint64)

    def positions(keys: np.ndarray) -> np.ndarray:
        ids = keys & np.uint64(0xFFFFFFFF)
        return first_positions[ids >> np.uint64(_NUMBER_BITS)] + (ids & np.uint64((1 << _NUMBER_BITS) - 1))

    all_texts = pl.concat(texts)
    occurs = np.zeros(len(all_texts), dtype=bool)
    for keys, _, _ in counts:
        occurs[positions(keys)] = True
    present = np.flatnonzero(occurs)
    terms = all_texts.gather(present)
    order = terms.arg_sort().to_numpy()
    term_idx = np.empty(len(all_texts), dtype=np.uint32)
    term_idx[present[order]] = np.arange(len(present), dtype=np.uint32)
    frames = []
    while counts:
        keys, count, heads = counts.pop(0)
        frames.append(
            pl.DataFrame(
                {
                    "paper_idx": (keys >> np.uint64(32)).astype(np.uint32),
                    "term_idx": term_idx[positions(keys)],
                    "count": count,
                    "heads": heads,
                }
            )
        )
        del keys, count, heads
    return frames, pl.DataFrame({"term": terms.gather(order)}).with_row_index("term_idx")


def _count_part(papers: np.ndarray, ids: np.ndarray, heads: np.ndarray, count_type: type) -> NgramCounts:
    """One part's n-gram occurrences (their papers, ids and whether each ends its chunk) as sorted
    (paper, id) keys, each with its count and the occurrences that end their chunk."""
    # The head flag rides in the lowest bit, so one sort groups occurrences and counts heads.
    packed = pl.Series((papers.astype(np.uint64) << np.uint64(33)) | (ids << np.uint64(1)) | heads).sort().to_numpy()
    keys = packed >> np.uint64(1)
    firsts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    counts = np.diff(np.r_[firsts, len(packed)]).astype(count_type)
    head_counts = np.add.reduceat((packed & np.uint64(1)).astype(count_type), firsts, dtype=count_type)
    return keys[firsts], counts, head_counts
