""""More like this": the most similar papers of each paper, by cosine of their term profiles.

Papers are compared as L2-normalised LSA vectors (a truncated SVD of the shared-term weight
matrix, so "sparse autoencoder" and "dictionary learning" papers can meet without sharing
a word); the SVD is fitted on at most 20,000 papers spread over the hash-ordered ids.

Up to ``exact_limit`` papers every pair is scored. Past that, all pairs would be quadratic,
so the search is an inverted file, as in FAISS's IVF: k-means cells of about 2,000 papers,
and each paper is scored against the papers of its ``probes`` nearest cells. `make bench`
reports its recall of the exact neighbours.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from paperhouse.terms import TermWeights
from paperhouse.topics import import_sklearn, spread_sample

SIMILAR_SCHEMA = {"paper_id": pl.String, "similar_paper_id": pl.String, "score": pl.Float64, "rank": pl.Int32}
# Rows of similarities scored at once: 512 x 20,000 floats stay within a few MB of cache.
_CHUNK_ROWS = 512
_FIT_SAMPLE = 20_000
_PROJECT_ROWS = 50_000


def lsa_vectors(weights: TermWeights, dims: int = 128) -> np.ndarray | None:
    """Each paper's L2-normalised LSA vector (float32, rows in paper order); None when there is
    too little to compare (fewer than two papers or shared terms)."""
    import_sklearn()
    from sklearn.decomposition import TruncatedSVD

    n_papers = len(weights.paper_ids)
    shared = np.flatnonzero(weights.matrix.getnnz(axis=0) >= 2)
    if n_papers < 2 or len(shared) < 2:
        return None
    matrix = weights.matrix[:, shared]
    components = min(dims, len(shared) - 1, n_papers - 1)
    svd = TruncatedSVD(n_components=components, random_state=0).fit(matrix[spread_sample(n_papers, _FIT_SAMPLE)])
    # Projected a slice of papers at a time into float32 and normalised in place: projected at once,
    # 10^6 papers' vectors were 1 GB of float64, then copied twice.
    vectors = np.empty((n_papers, components), dtype=np.float32)
    for start in range(0, n_papers, _PROJECT_ROWS):
        vectors[start : start + _PROJECT_ROWS] = svd.transform(matrix[start : start + _PROJECT_ROWS])
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[norms[:, 0] == 0] = 0
    return np.divide(vectors, norms, out=vectors, where=norms > 0)


def similar_papers(weights: TermWeights, k: int = 5, dims: int = 128, exact_limit: int = 20_000,
                   cell_size: int = 2000, probes: int = 3) -> pl.DataFrame:
    """Papers' shared-term weights -> the k most similar papers of each, with their cosine."""
    import_sklearn()
    from sklearn.cluster import KMeans

    paper_ids = weights.paper_ids
    n_papers = len(paper_ids)
    vectors = lsa_vectors(weights, dims)
    if vectors is None:
        return pl.DataFrame(schema=SIMILAR_SCHEMA)

    everyone = np.arange(n_papers)
    if n_papers <= exact_limit:
        found = [_neighbours(vectors, everyone, everyone, k)]
    else:
        n_cells = -(-n_papers // cell_size)
        cells = KMeans(n_clusters=n_cells, n_init=1, random_state=0).fit(vectors[spread_sample(n_papers, _FIT_SAMPLE)])
        home = cells.predict(vectors)
        visits = _nearest_cells(vectors, cells.cluster_centers_.astype(np.float32), probes)
        # Inverted lists: the papers in each cell, and the papers that visit it, both in paper order.
        members = np.split(np.argsort(home, kind="stable"), np.cumsum(np.bincount(home, minlength=n_cells))[:-1])
        visited = visits.ravel()
        order = np.argsort(visited, kind="stable")
        visitors = np.split(order // visits.shape[1], np.cumsum(np.bincount(visited, minlength=n_cells))[:-1])
        found = [_neighbours(vectors, np.sort(visitors[cell]), members[cell], k) for cell in range(n_cells)]
    source, target, score = (np.concatenate(parts) for parts in zip(*found))
    del found
    # Ranked on the papers' positions, which sort as their ids do (the ids are sorted): only the
    # rows kept become ids (at 10^6 papers, sorting the 15M scored rows by id strings took 4 GB).
    ranked = (
        pl.DataFrame({"source": source, "target": target, "score": np.round(score.astype(np.float64), 4)})
        .sort(["source", "score", "target"], descending=[False, True, False])
        .with_columns(rank=pl.int_range(1, pl.len() + 1).over("source"))
        .filter(pl.col("rank") <= k)
    )
    return pl.DataFrame(
        {"paper_id": paper_ids.gather(ranked["source"]), "similar_paper_id": paper_ids.gather(ranked["target"]),
         "score": ranked["score"], "rank": ranked["rank"]}
    ).cast(SIMILAR_SCHEMA)


def search_recall(weights: TermWeights, found: pl.DataFrame, queries: int = 1000, k: int = 5, dims: int = 128) -> float:
    """Share of the exact k nearest neighbours of a fixed sample of papers that ``found`` (the
    output of ``similar_papers``) lists: 1.0 for exact search."""
    vectors = lsa_vectors(weights, dims)
    if vectors is None:
        return 1.0
    sample = np.arange(len(vectors))[spread_sample(len(vectors), queries)]
    source, target, _ = _neighbours(vectors, sample, np.arange(len(vectors)), k)
    exact = pl.DataFrame({"paper_id": weights.paper_ids.gather(source),
                          "similar_paper_id": weights.paper_ids.gather(target)})
    return exact.join(found, on=["paper_id", "similar_paper_id"], how="semi").height / max(exact.height, 1)


def _nearest_cells(vectors: np.ndarray, centroids: np.ndarray, probes: int) -> np.ndarray:
    """Each paper's ``probes`` nearest cells, a chunk of papers at a time (papers x cells would not fit at 1M)."""
    probes = min(probes, len(centroids))
    nearest = np.empty((len(vectors), probes), dtype=np.int64)
    # Copied out chunk by chunk: a slice of each chunk's ranking, kept as a view, kept the whole
    # ranking alive (10^6 papers: 3.1 GB of the search's peak).
    for start in range(0, len(vectors), _CHUNK_ROWS * 8):
        similarity = vectors[start: start + _CHUNK_ROWS * 8] @ centroids.T
        nearest[start: start + len(similarity)] = np.argpartition(-similarity, probes - 1, axis=1)[:, :probes]
    return nearest


def _neighbours(vectors: np.ndarray, queries: np.ndarray, candidates: np.ndarray,
                k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The k most similar candidates of each query paper (never itself), by exact cosine, a
    chunk of queries at a time; both index arrays sorted."""
    take = min(k, len(candidates))
    if take == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32)
    members = vectors[candidates]
    sources, targets, scores = [], [], []
    for start in range(0, len(queries), _CHUNK_ROWS):
        chunk = queries[start: start + _CHUNK_ROWS]
        similarity = vectors[chunk] @ members.T
        position = np.minimum(np.searchsorted(candidates, chunk), len(candidates) - 1)
        is_self = candidates[position] == chunk
        similarity[np.flatnonzero(is_self), position[is_self]] = -np.inf
        nearest, best = _largest(similarity, take)
        sources.append(np.repeat(chunk, take))
        targets.append(candidates[nearest.ravel()])
        scores.append(best.ravel())
    source, target, score = np.concatenate(sources), np.concatenate(targets), np.concatenate(scores)
    keep = np.isfinite(score)
    return source[keep], target[keep], score[keep]


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
