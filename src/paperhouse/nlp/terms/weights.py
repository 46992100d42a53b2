"""How much each term says about each paper: TF-IDF with the project's factors, each paper's best
terms ranked, and the weight matrix that topics and similar papers compare."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix

from paperhouse.common.arrays import ColumnBuffer, stable_argsort

PAPER_TERM_SCHEMA = {
    "paper_id": pl.String,
    "term": pl.String,
    "occurrences": pl.Int32,
    "weight": pl.Float64,
    "rank": pl.Int32,
}


# What links papers (topics, similar papers) are the terms they share: each paper's best 30 of those.
MAX_SHARED_TERMS_PER_PAPER = 30


# Weighting beyond TF-IDF (see weigh), chosen on the dev split of src/paperhouse/evaluation/gold/keyphrase_gold.jsonl.
_SUBSUMED_DISCOUNT = 0.5


_MODIFIER_FLOOR = 0.4


_PHRASE_BONUS = 1.6


# Papers weighed at once, on each of two threads: two chunks this size held what one twice the
# size did (10^5 papers: a peak of 1.62 GB against 1.66 GB).
_PAPERS_PER_WEIGHING = 10_000


# Weights are rounded to 8 decimals, so they sort exactly as integers below 2**27.
_WEIGHT_STEPS = np.uint64(10**8)


@dataclass(frozen=True)
class TermWeights:
    """Each paper's weights on its strongest terms shared with another paper, as a sparse
    papers x terms matrix: what the topic model and similar papers compare."""

    matrix: csr_matrix  # rows in paper_ids order, columns in terms order
    paper_ids: pl.Series  # sorted
    terms: np.ndarray  # sorted


def weigh(
    parts: list[pl.DataFrame],
    terms: pl.DataFrame,
    vocabulary: pl.DataFrame,
    paper_ids: pl.Series,
    max_terms: int,
    recurrence: float | None = None,
) -> tuple[pl.DataFrame, TermWeights]:
    """TF-IDF, scaled by how often the term ends a noun phrase, halved inside a longer phrase:
    each paper's ``max_terms`` best, ranked, and every weight as a matrix.

    ``recurrence`` is the corpus' ``phrase_recurrence``, read off ``terms`` unless given: the Spark
    engine weighs a partition of papers at a time, with only the terms they hold.

    Every sum and rank is within one paper, so papers are weighed ``_PAPERS_PER_WEIGHING`` at a time:
    each part is in paper order, so a chunk's rows are a slice of each. A chunk's rows are (paper,
    term) pairs held as NumPy arrays in (paper, term) order: per-paper sums and ranks are then runs
    of a sorted array, with no hashing of 10^7 keys.

    The chunks' rows are written into columns sized for the most rows there can be (``ColumnBuffer``),
    so they are held once: at 10^6 papers, chunks kept apart and then joined held 1.8 GB twice.
    ``parts`` is emptied once every chunk is weighed: the counts (2.5 GB at 10^6 papers) are gone
    before the step's result is built."""
    if recurrence is None:
        recurrence = phrase_recurrence(terms)
    terms = terms.with_columns(established=(1 + pl.col("doc_freq").cast(pl.Float64).log()) ** recurrence)
    by_term = {
        column: _by_term(terms, column, vocabulary.height)
        for column in ("idf", "established", "head_share", "n_words", "doc_freq")
    }
    sub_phrases = _sub_phrases(terms, vocabulary)
    n_papers = len(paper_ids)
    chunk_starts = np.arange(0, n_papers + _PAPERS_PER_WEIGHING, _PAPERS_PER_WEIGHING, dtype=np.uint64)
    bounds = [np.searchsorted(part["paper_idx"].to_numpy(), chunk_starts.astype(np.uint32)) for part in parts]
    best = ColumnBuffer(n_papers * max_terms, _BEST_COLUMNS)
    linking = ColumnBuffer(n_papers * MAX_SHARED_TERMS_PER_PAPER, _LINKING_COLUMNS)

    def weigh_chunk(index: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        rows = pl.concat(
            [part.slice(ends[index], ends[index + 1] - ends[index]) for part, ends in zip(parts, bounds, strict=True)]
        )
        pairs = (rows["paper_idx"].to_numpy().astype(np.uint64) << np.uint64(32)) | rows["term_idx"].to_numpy()
        in_order = stable_argsort(pairs)
        count = rows["count"].to_numpy()[in_order].astype(np.int32)
        return _weigh_papers(pairs[in_order], count, chunk_starts[index], by_term, sub_phrases, max_terms)

    # Chunks are weighed two at a time, on both cores: most of a chunk's work is single-threaded
    # NumPy, which leaves the interpreter free. Their rows are written in chunk order.
    with ThreadPoolExecutor(max_workers=2) as pool:
        for chosen, links in pool.map(weigh_chunk, range(len(chunk_starts) - 1)):
            best.append(chosen)
            linking.append(links)
    parts.clear()
    # The matrix's rows straight from the weighed rows, which come in paper order; the sort puts each
    # paper's terms in column order, as a matrix built from (row, column) pairs would have them.
    row_starts = np.r_[0, np.cumsum(np.bincount(linking["paper"], minlength=n_papers))]
    matrix = csr_matrix((linking["weight"], linking["term"], row_starts), shape=(n_papers, vocabulary.height))
    matrix.sort_indices()
    weights = TermWeights(matrix, paper_ids, vocabulary["term"].to_numpy())
    return pl.DataFrame(
        {
            "paper_id": paper_ids.gather(best["paper"]),
            "term": vocabulary["term"].gather(best["term"]),
            "occurrences": best["count"],
            "weight": best["weight"],
            "rank": best["rank"],
        }
    ).cast(PAPER_TERM_SCHEMA), weights


# The columns of a paper's best terms and of the weight matrix's entries, as the weighing fills them.
_BEST_COLUMNS = {"paper": np.uint32, "term": np.uint32, "count": np.int32, "weight": np.float64, "rank": np.int32}


_LINKING_COLUMNS = {"paper": np.uint32, "term": np.int32, "weight": np.float64}  # int32: a matrix's column index


def _weigh_papers(
    pairs: np.ndarray,
    count: np.ndarray,
    first_paper: np.uint64,
    by_term: dict[str, np.ndarray],
    sub_phrases: list[np.ndarray],
    max_terms: int,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``weigh`` for the sorted pairs of ``_PAPERS_PER_WEIGHING`` papers from ``first_paper``: the rows
    of their ``max_terms`` best terms, and the rows of the weight matrix."""
    paper, term = pairs >> np.uint64(32), (pairs & np.uint64(0xFFFFFFFF)).astype(np.int64)
    enclosing = _enclosing_counts(pairs, term, count, sub_phrases)
    tfidf = (
        (1 + np.log(count))
        * by_term["idf"][term]
        * by_term["established"][term]
        * (_MODIFIER_FLOOR + (1 - _MODIFIER_FLOOR) * by_term["head_share"][term])
        * np.where(by_term["n_words"][term] > 1, _PHRASE_BONUS, 1.0)
        * np.where(enclosing >= count, _SUBSUMED_DISCOUNT, 1.0)
    )
    local = (paper - first_paper).astype(np.int64)  # papers numbered from 0 within the chunk
    norms = np.sqrt(np.bincount(local, weights=tfidf**2, minlength=_PAPERS_PER_WEIGHING))
    weight = np.round(tfidf / norms[local], 8)
    # Best first within each paper; the stable sort keeps equal weights in term (alphabetical) order.
    descending = (paper << np.uint64(27)) | (_WEIGHT_STEPS - np.round(weight * _WEIGHT_STEPS).astype(np.uint64))
    order = stable_argsort(descending)
    paper, local, term, count, weight = paper[order], local[order], term[order], count[order], weight[order]
    paper_starts = np.searchsorted(local, np.arange(_PAPERS_PER_WEIGHING))
    rank = np.arange(len(paper)) - paper_starts[local] + 1
    shared = by_term["doc_freq"][term] >= 2
    shared_seen = np.cumsum(shared)
    shared_rank = shared_seen - (shared_seen - shared)[paper_starts[local]]
    linking = shared & (shared_rank <= MAX_SHARED_TERMS_PER_PAPER)
    best = rank <= max_terms
    return (
        {"paper": paper[best], "term": term[best], "count": count[best], "weight": weight[best], "rank": rank[best]},
        {"paper": paper[linking], "term": term[linking], "weight": weight[linking]},
    )


def phrase_recurrence(terms: pl.DataFrame) -> float:
    """How much the corpus's papers share their phrases: of all (paper, phrase of two or more words)
    pairs, the share whose phrase some other paper uses too. 0 for an empty corpus.

    A term's weight is multiplied by ``(1 + ln doc_freq) ** phrase_recurrence``: a phrase that recurs
    across a list is one of its field's concepts, which is what authors name as their keywords,
    rather than a phrase cut out of one abstract ("gain superior quality"). How much recurrence
    says is read off the corpus itself: in one field's list phrases recur (two real conference
    lists: a third of the pairs), in a small or mixed collection they do not (the Inspec journal
    abstracts: a tenth), and there the weight stays close to plain TF-IDF."""
    phrases = terms.filter(pl.col("n_words") > 1)
    uses = phrases["doc_freq"].sum()
    return float(phrases.filter(pl.col("doc_freq") >= 2)["doc_freq"].sum() / uses) if uses else 0.0


def _by_term(terms: pl.DataFrame, column: str, n_terms: int) -> np.ndarray:
    """A column of ``terms`` as an array indexed by ``term_idx`` (zero for dropped terms)."""
    values = np.zeros(n_terms, dtype=terms[column].to_numpy().dtype)
    values[terms["term_idx"].to_numpy()] = terms[column].to_numpy()
    return values


def _sub_phrases(terms: pl.DataFrame, vocabulary: pl.DataFrame) -> list[np.ndarray]:
    """For a phrase that ends noun phrases, its two sub-phrases one word shorter (without its last
    word, without its first), as two arrays indexed by ``term_idx``: the sub-phrase's index, or -1."""
    by_text = vocabulary.rename({"term": "inner", "term_idx": "inner_idx"})
    parts = terms.filter((pl.col("head_share") >= 0.5) & (pl.col("n_words") >= 2)).select(
        "term_idx", first=pl.col("term").str.replace(r" [^ ]+$", ""), rest=pl.col("term").str.replace(r"^[^ ]+ ", "")
    )
    found_inner = []
    for column in ("first", "rest"):
        found = parts.join(by_text, left_on=column, right_on="inner")
        inner = np.full(vocabulary.height, -1, dtype=np.int64)
        inner[found["term_idx"].to_numpy()] = found["inner_idx"].to_numpy()
        found_inner.append(inner)
    return found_inner


def _enclosing_counts(
    pairs: np.ndarray, term: np.ndarray, count: np.ndarray, sub_phrases: list[np.ndarray]
) -> np.ndarray:
    """For each (paper, term) pair, in sorted order, the most occurrences in the paper of a phrase one
    word longer that holds the term and ends noun phrases (0 when none)."""
    enclosing = np.zeros(len(pairs), dtype=count.dtype)
    paper_bits = pairs & ~np.uint64(0xFFFFFFFF)
    for inner in sub_phrases:
        rows = np.flatnonzero(inner[term] >= 0)
        wanted = paper_bits[rows] | inner[term[rows]].astype(np.uint64)
        targets = np.minimum(np.searchsorted(pairs, wanted), len(pairs) - 1)
        found = pairs[targets] == wanted  # the sub-phrase may have been dropped as a stock phrase
        np.maximum.at(enclosing, targets[found], count[rows[found]])
    return enclosing


def weight_matrix(entries: pl.DataFrame, paper_ids: pl.Series, terms: pl.Series | np.ndarray) -> csr_matrix:
    """``paper_id``, ``term``, ``weight`` rows -> a papers x terms matrix, rows in the order of
    ``paper_ids`` and columns in the order of ``terms`` (each row's entries sorted by column)."""
    rows = entries.select(
        row=pl.col("paper_id").replace_strict(paper_ids, pl.int_range(len(paper_ids)), return_dtype=pl.Int64),
        column=pl.col("term").replace_strict(terms, pl.int_range(len(terms)), return_dtype=pl.Int64),
        weight="weight",
    )
    matrix = csr_matrix(
        (rows["weight"].to_numpy(), (rows["row"].to_numpy(), rows["column"].to_numpy())),
        shape=(len(paper_ids), len(terms)),
    )
    matrix.sort_indices()
    return matrix
