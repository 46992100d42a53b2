""" "More like this": the most similar papers of each paper, by cosine of their term profiles.

A paper's profile has two halves of equal length: its row of the weight matrix (its best terms
shared with other papers, phrases kept whole), and the TF-IDF of the words of those terms (a
word counted once for each of those terms that holds it, times ln((n + 1) / (papers + 1)) + 1),
so two papers' cosine is the mean of the cosine of their terms and the cosine of their words.
Terms say which papers name the same thing; words let a paper on "sparse autoencoders" meet one on
"autoencoders", or "graph neural networks" meet "graph convolutional networks". On real lists a
paper's five nearest share one of its author keywords more often so than on its terms alone, and
far more than through LSA of the terms (`docs/similar.md` has the figures).

Where comparing every pair of profiles costs at most ``_EXACT_PRODUCTS`` multiply-adds (sparse
products: a field's lists up to about 11,000 papers), every pair is scored. Past that, the search
narrows with each paper's L2-normalised LSA vector (a truncated SVD of the weight matrix fitted on
at most 20,000 papers spread over the hash-ordered ids): each paper's k nearest papers by LSA
cosine are found, then scored by their profiles' cosine, so ``score`` and ``rank`` mean the same
whatever the corpus's size.

Up to ``exact_limit`` papers a paper is compared with every other. Past that, all pairs would be
quadratic, so the search is an inverted file, as in FAISS's IVF: k-means cells (of the LSA
vectors) of about 2,000 papers, and each paper is compared with the papers of its ``probes``
nearest cells. `make bench` reports its recall of the search without cells.
"""

from __future__ import annotations

from itertools import pairwise
from typing import NamedTuple

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix, hstack

from paperhouse.nlp.sklearn_setup import import_sklearn
from paperhouse.nlp.terms.extraction import TermWeights
from paperhouse.nlp.topics.model import spread_sample

SIMILAR_SCHEMA = {"paper_id": pl.String, "similar_paper_id": pl.String, "score": pl.Float64, "rank": pl.Int32}
# Rows of similarities scored at once: 512 x 20,000 floats stay within a few MB of cache.
_CHUNK_ROWS = 512
FIT_SAMPLE = 20_000  # papers the LSA model and the cells are fitted on
_PROJECT_ROWS = 50_000
# Profiles are compared exactly while the all-pairs products (over the profiles' columns, the
# number of papers holding the column, squared) stay within this many multiply-adds: about 3 s
# (9 ns each). Two real conference lists come to 2.3 n^2, so a field's lists up to about 11,000
# papers; the synthetic lists, drawn from 76 abstracts' words, to 7 n^2 (up to 6,500 papers).
_EXACT_PRODUCTS = 300_000_000
# The dense rows of the papers whose pairs are scored at once: 16 MB of float32.
_RESCORE_FLOATS = 1 << 22


class Profiles(NamedTuple):
    """Each paper's profile in two halves, rows in paper order, each row of length 1/sqrt(2) (or
    empty: a paper without shared terms)."""

    terms: csr_matrix  # the weight matrix's columns
    words: csr_matrix  # a column per word of the terms, in sorted order


def profiles(weights: TermWeights) -> Profiles | None:
    """Each paper's profile (float32); None when there is too little to compare (fewer than two
    papers or shared terms)."""
    matrix = weights.matrix.tocsr()
    n_papers = len(weights.paper_ids)
    if n_papers < 2 or np.count_nonzero(_papers_with(matrix) >= 2) < 2:
        return None
    holds = csr_matrix((np.ones(matrix.nnz, np.float32), matrix.indices, matrix.indptr), shape=matrix.shape)
    on_words = (holds @ _term_words(weights.terms)).tocsr()
    del holds
    on_words.data *= (np.log((n_papers + 1) / (_papers_with(on_words) + 1)) + 1)[on_words.indices]
    return Profiles(_scaled_rows(matrix, np.sqrt(0.5)), _scaled_rows(on_words, np.sqrt(0.5)))


def lsa_vectors(weights: TermWeights, dims: int = 128) -> np.ndarray | None:
    """Each paper's L2-normalised LSA vector (float32, rows in paper order); None when there is
    too little to compare (fewer than two papers or shared terms)."""
    n_papers = len(weights.paper_ids)
    shared = shared_columns(weights.matrix)
    if n_papers < 2 or len(shared) < 2:
        return None
    matrix = weights.matrix[:, shared]
    return projected(fit_lsa(matrix[spread_sample(n_papers, FIT_SAMPLE)], n_papers, dims), matrix)


def shared_columns(matrix: csr_matrix) -> np.ndarray:
    """The columns (terms) at least two papers hold: the only ones that can make papers similar."""
    return np.flatnonzero(matrix.getnnz(axis=0) >= 2)


def fit_lsa(sample: csr_matrix, n_papers: int, dims: int = 128):
    """The truncated SVD of ``sample`` (``spread_sample``'s rows of the shared columns of a corpus
    of ``n_papers``): the LSA model whose ``projected`` vectors the search narrows with."""
    import_sklearn()
    from sklearn.decomposition import TruncatedSVD

    components = min(dims, sample.shape[1] - 1, n_papers - 1)
    return TruncatedSVD(n_components=components, random_state=0).fit(sample)


def projected(svd, matrix: csr_matrix) -> np.ndarray:
    """Rows of ``matrix`` (the shared columns) as L2-normalised LSA vectors of ``svd`` (float32)."""
    # Projected a slice of papers at a time into float32 and normalised in place: projected at once,
    # 10^6 papers' vectors were 1 GB of float64, then copied twice.
    vectors = np.empty((matrix.shape[0], svd.n_components), dtype=np.float32)
    for start in range(0, matrix.shape[0], _PROJECT_ROWS):
        vectors[start : start + _PROJECT_ROWS] = svd.transform(matrix[start : start + _PROJECT_ROWS])
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[norms[:, 0] == 0] = 0
    return np.divide(vectors, norms, out=vectors, where=norms > 0)


def fit_cells(sample_vectors: np.ndarray, n_papers: int, cell_size: int):
    """The inverted file's cells: k-means of the sample's LSA vectors, one cell per ``cell_size``
    papers of the corpus."""
    import_sklearn()
    from sklearn.cluster import KMeans

    return KMeans(n_clusters=-(-n_papers // cell_size), n_init=1, random_state=0).fit(sample_vectors)


def similar_papers(
    weights: TermWeights, k: int = 5, dims: int = 128, exact_limit: int = 20_000, cell_size: int = 2000, probes: int = 3
) -> pl.DataFrame:
    """Papers' shared-term weights -> the k most similar papers of each, with their cosine."""
    paper_ids = weights.paper_ids
    n_papers = len(paper_ids)
    profile = _affordable_profiles(weights)
    vectors = None if profile is not None and n_papers <= exact_limit else lsa_vectors(weights, dims)
    if profile is None and vectors is None:
        return pl.DataFrame(schema=SIMILAR_SCHEMA)

    everyone = np.arange(n_papers)
    if n_papers <= exact_limit:
        cells = [(everyone, everyone)]
    else:
        fitted = fit_cells(vectors[spread_sample(n_papers, FIT_SAMPLE)], n_papers, cell_size)
        n_cells = fitted.n_clusters
        home = fitted.predict(vectors)
        visits = nearest_cells(vectors, fitted.cluster_centers_.astype(np.float32), probes)
        # Inverted lists: the papers in each cell, and the papers that visit it, both in paper order.
        members = np.split(np.argsort(home, kind="stable"), np.cumsum(np.bincount(home, minlength=n_cells))[:-1])
        visited = visits.ravel()
        order = np.argsort(visited, kind="stable")
        visitors = np.split(order // visits.shape[1], np.cumsum(np.bincount(visited, minlength=n_cells))[:-1])
        cells = [(np.sort(visitors[cell]), members[cell]) for cell in range(n_cells)]
    if profile is not None:
        del vectors
        joined = hstack(profile, format="csr")
        found = [_exact_neighbours(joined, queries, candidates, k) for queries, candidates in cells]
        source, target, score = (np.concatenate(parts) for parts in zip(*found, strict=True))
    else:
        found = [vector_neighbours(vectors, queries, candidates, k) for queries, candidates in cells]
        source, target, near = (np.concatenate(parts) for parts in zip(*found, strict=True))
        # The profiles are built once the LSA vectors are gone: at 10^6 papers each is 0.5 GB.
        del found, vectors
        if len(cells) > 1:
            source, target = _best(source, target, near, k)
        score = _rescore(profiles(weights), source, target)
    return _ranked(paper_ids, source, target, score, k)


def search_recall(weights: TermWeights, found: pl.DataFrame, queries: int = 1000, k: int = 5, dims: int = 128) -> float:
    """Share of the k most similar papers of a fixed sample of papers, as the search without cells
    finds them, that ``found`` (the output of ``similar_papers``) lists: 1.0 for that search."""
    n_papers = len(weights.paper_ids)
    sample = np.arange(n_papers)[spread_sample(n_papers, queries)]
    profile = _affordable_profiles(weights)
    if profile is not None:
        source, target, score = _exact_neighbours(hstack(profile, format="csr"), sample, np.arange(n_papers), k)
    else:
        vectors = lsa_vectors(weights, dims)
        if vectors is None:
            return 1.0
        source, target, _ = vector_neighbours(vectors, sample, np.arange(n_papers), k)
        del vectors
        score = _rescore(profiles(weights), source, target)
    exact = _ranked(weights.paper_ids, source, target, score, k).select("paper_id", "similar_paper_id")
    return exact.join(found, on=["paper_id", "similar_paper_id"], how="semi").height / max(exact.height, 1)


def _affordable_profiles(weights: TermWeights) -> Profiles | None:
    """The profiles, when comparing every pair of them costs at most ``_EXACT_PRODUCTS``
    multiply-adds; otherwise None. The terms' half alone mostly tells, without building the
    profiles (at 10^6 papers, beside the LSA vectors)."""
    if _all_pairs_products(weights.matrix) > _EXACT_PRODUCTS:
        return None
    profile = profiles(weights)
    if profile is None or sum(map(_all_pairs_products, profile)) > _EXACT_PRODUCTS:
        return None
    return profile


def _papers_with(matrix: csr_matrix) -> np.ndarray:
    """Each column's number of papers (rows) holding it."""
    return np.bincount(matrix.indices, minlength=matrix.shape[1])


def _all_pairs_products(matrix: csr_matrix) -> float:
    papers_with = _papers_with(matrix).astype(np.float64)
    return float(papers_with @ papers_with)


def _term_words(terms: np.ndarray) -> csr_matrix:
    """Terms x words: 1 where the word is one of the term's (words numbered in sorted order)."""
    pieces = (
        pl.DataFrame({"word": pl.Series(terms, dtype=pl.String)})
        .with_row_index("term")
        .with_columns(pl.col("word").str.split(" "))
        .explode("word")
    )
    word = pieces["word"].rank("dense").cast(pl.Int64).to_numpy() - 1
    n_words = int(word.max()) + 1 if len(word) else 0
    return csr_matrix((np.ones(len(word), np.float32), (pieces["term"].to_numpy(), word)), shape=(len(terms), n_words))


def _scaled_rows(matrix: csr_matrix, length: float) -> csr_matrix:
    """``matrix`` as float32, each row that is not empty scaled to ``length``."""
    per_row = np.diff(matrix.indptr)
    scale = np.zeros(len(per_row))
    filled = per_row > 0
    if matrix.nnz:
        squares = np.add.reduceat(matrix.data.astype(np.float64) ** 2, matrix.indptr[:-1][filled])
        scale[filled] = length / np.sqrt(squares)
    return csr_matrix(
        ((matrix.data * np.repeat(scale, per_row)).astype(np.float32), matrix.indices, matrix.indptr),
        shape=matrix.shape,
    )


def _exact_neighbours(
    profile: csr_matrix, queries: np.ndarray, candidates: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The k candidates of each query paper (never itself) whose profiles (both halves side by
    side) are most similar, by sparse products, a chunk of queries at a time; both index arrays
    sorted."""
    take = min(k, len(candidates))
    if take == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32)
    members = profile[candidates].T.tocsr()
    sources, targets, scores = [], [], []
    for start in range(0, len(queries), _CHUNK_ROWS):
        chunk = queries[start : start + _CHUNK_ROWS]
        similarity = (profile[chunk] @ members).toarray()
        _not_itself(similarity, chunk, candidates)
        nearest, best = _largest(similarity, take)
        sources.append(np.repeat(chunk, take))
        targets.append(candidates[nearest.ravel()])
        scores.append(best.ravel())
    source, target, score = np.concatenate(sources), np.concatenate(targets), np.concatenate(scores)
    keep = np.isfinite(score)
    return source[keep], target[keep], score[keep]


def _best(source: np.ndarray, target: np.ndarray, score: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each source's k pairs of highest score (the lower target first among equals), by source."""
    kept = (
        pl.DataFrame({"source": source, "target": target, "score": score})
        .sort(["source", "score", "target"], descending=[False, True, False])
        .filter(pl.int_range(pl.len()).over("source") < k)
    )
    return kept["source"].to_numpy(), kept["target"].to_numpy()


def _rescore(profile: Profiles, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The cosine of the profiles of each (source, target) pair, the pairs in source order."""
    return _pair_products(profile.terms, source, target) + _pair_products(profile.words, source, target)


def _pair_products(matrix: csr_matrix, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The products of ``matrix``'s rows for each (source, target) pair, the pairs in source order.

    A group of sources at a time is spread into dense rows (``_RESCORE_FLOATS`` in all) where each
    target's nonzeros look their columns up: faster than scipy's row-wise products, which merge
    the two rows' columns pair by pair (10^5 papers' 5 pairs each: 0.5 s against 0.7 s)."""
    n_columns = matrix.shape[1]
    at_once = int(np.clip(_RESCORE_FLOATS // max(n_columns, 1), 1, 256))
    dense = np.zeros(at_once * n_columns, dtype=np.float32)
    products = np.zeros(len(source), dtype=np.float32)
    new_source = np.r_[True, source[1:] != source[:-1]] if len(source) else np.empty(0, bool)
    # Each pair's dense row: its source's place in its group of sources, times the columns.
    offset = ((np.cumsum(new_source) - 1) % at_once) * n_columns
    bounds = np.r_[np.flatnonzero(new_source)[::at_once], len(source)]
    for start, end in pairwise(bounds):
        queries = source[start:end][new_source[start:end]]
        # Papers in a row (the search gives every paper's pairs) are a slice of the rows.
        rows = matrix[queries[0] : queries[-1] + 1] if queries[-1] - queries[0] + 1 == len(queries) else matrix[queries]
        spots = rows.indices + np.repeat(np.arange(len(queries)) * n_columns, np.diff(rows.indptr))
        dense[spots] = rows.data
        found = matrix[target[start:end]]
        per_pair = np.diff(found.indptr)
        if found.nnz:
            terms = dense[found.indices + np.repeat(offset[start:end], per_pair)] * found.data
            filled = per_pair > 0
            products[start:end][filled] = np.add.reduceat(terms, found.indptr[:-1][filled])
        dense[spots] = 0
    return products


def _ranked(paper_ids: pl.Series, source: np.ndarray, target: np.ndarray, score: np.ndarray, k: int) -> pl.DataFrame:
    """Each source's k best pairs by score (as computed; the lower target first among equals),
    ranked, with their scores rounded."""
    # Ranked on the papers' positions, which sort as their ids do (the ids are sorted): only the
    # rows kept become ids (at 10^6 papers, sorting the 15M scored rows by id strings took 4 GB).
    ranked = (
        pl.DataFrame({"source": source, "target": target, "score": score.astype(np.float64)})
        .sort(["source", "score", "target"], descending=[False, True, False])
        .with_columns(rank=pl.int_range(1, pl.len() + 1).over("source"))
        .filter(pl.col("rank") <= k)
    )
    return pl.DataFrame(
        {
            "paper_id": paper_ids.gather(ranked["source"]),
            "similar_paper_id": paper_ids.gather(ranked["target"]),
            "score": ranked["score"].round(4),
            "rank": ranked["rank"],
        }
    ).cast(SIMILAR_SCHEMA)


def nearest_cells(vectors: np.ndarray, centroids: np.ndarray, probes: int) -> np.ndarray:
    """Each paper's ``probes`` nearest cells, a chunk of papers at a time (papers x cells would not fit at 1M)."""
    probes = min(probes, len(centroids))
    nearest = np.empty((len(vectors), probes), dtype=np.int64)
    # Copied out chunk by chunk: a slice of each chunk's ranking, kept as a view, kept the whole
    # ranking alive (10^6 papers: 3.1 GB of the search's peak).
    for start in range(0, len(vectors), _CHUNK_ROWS * 8):
        similarity = vectors[start : start + _CHUNK_ROWS * 8] @ centroids.T
        nearest[start : start + len(similarity)] = np.argpartition(-similarity, probes - 1, axis=1)[:, :probes]
    return nearest


def vector_neighbours(
    vectors: np.ndarray, queries: np.ndarray, candidates: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The k most similar candidates of each query paper (never itself), by exact cosine, a
    chunk of queries at a time; both index arrays sorted."""
    take = min(k, len(candidates))
    if take == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32)
    members = vectors[candidates]
    sources, targets, scores = [], [], []
    for start in range(0, len(queries), _CHUNK_ROWS):
        chunk = queries[start : start + _CHUNK_ROWS]
        similarity = vectors[chunk] @ members.T
        _not_itself(similarity, chunk, candidates)
        nearest, best = _largest(similarity, take)
        sources.append(np.repeat(chunk, take))
        targets.append(candidates[nearest.ravel()])
        scores.append(best.ravel())
    source, target, score = np.concatenate(sources), np.concatenate(targets), np.concatenate(scores)
    keep = np.isfinite(score)
    return source[keep], target[keep], score[keep]


def _not_itself(similarity: np.ndarray, chunk: np.ndarray, candidates: np.ndarray) -> None:
    """Sets each query's similarity to itself, where it is a candidate, to -inf."""
    position = np.minimum(np.searchsorted(candidates, chunk), len(candidates) - 1)
    is_self = candidates[position] == chunk
    similarity[np.flatnonzero(is_self), position[is_self]] = -np.inf


def _largest(similarity: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The columns of each row's k largest values and the values, best first, the lower column
    first among equals; overwrites ``similarity``. For k of a few, k passes of argmax over the
    rows run 2-3x faster than argpartition."""
    rows = np.arange(len(similarity))
    columns = np.empty((len(similarity), k), dtype=np.int64)
    values = np.empty((len(similarity), k), dtype=similarity.dtype)
    for j in range(k):
        columns[:, j] = similarity.argmax(axis=1)
        values[:, j] = similarity[rows, columns[:, j]]
        similarity[rows, columns[:, j]] = -np.inf
    return columns, values
