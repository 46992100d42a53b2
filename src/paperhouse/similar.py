""""More like this": the most similar papers of each paper, by cosine of their term profiles.

Papers are compared as L2-normalised LSA vectors (a truncated SVD of the term-weight
matrix, so "sparse autoencoder" and "dictionary learning" papers can meet without sharing
a word). Exact search over all pairs is quadratic; past ``block_limit`` papers each paper
is compared within its primary topic only, which keeps 100,000 papers to seconds.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix

SIMILAR_SCHEMA = {"paper_id": pl.String, "similar_paper_id": pl.String, "score": pl.Float64, "rank": pl.Int32}
_CHUNK_ROWS = 2048


def similar_papers(paper_terms: pl.DataFrame, paper_topics: pl.DataFrame, k: int = 5, dims: int = 128,
                   block_limit: int = 20_000) -> pl.DataFrame:
    """``paper_id``, ``term``, ``weight`` and ``paper_id``, ``topic_id``, ``weight`` -> k neighbours each."""
    from sklearn.decomposition import TruncatedSVD

    paper_ids = paper_terms["paper_id"].unique().sort()
    n_papers = len(paper_ids)
    shared = paper_terms.group_by("term").agg(df=pl.len()).filter(pl.col("df") >= 2).select("term").sort("term")
    if n_papers < 2 or shared.height < 2:
        return pl.DataFrame(schema=SIMILAR_SCHEMA)
    rows = pl.DataFrame({"paper_id": paper_ids}).with_row_index("row")
    cells = paper_terms.join(rows, on="paper_id").join(shared.with_row_index("column"), on="term")
    matrix = csr_matrix(
        (cells["weight"].to_numpy(), (cells["row"].to_numpy(), cells["column"].to_numpy())),
        shape=(n_papers, shared.height),
    )
    components = min(dims, shared.height - 1, n_papers - 1)
    vectors = TruncatedSVD(n_components=components, random_state=0).fit_transform(matrix).astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)

    if n_papers <= block_limit:
        blocks = [np.arange(n_papers)]
    else:
        primary = (
            rows.join(paper_topics.sort("weight", descending=True).group_by("paper_id").first(), on="paper_id", how="left")
            .sort("row")["topic_id"].fill_null(0).to_numpy()
        )
        blocks = [np.flatnonzero(primary == topic) for topic in np.unique(primary)]
    found = [_neighbours(vectors, block, k) for block in blocks if len(block) > 1]
    if not found:
        return pl.DataFrame(schema=SIMILAR_SCHEMA)
    source, target, score = (np.concatenate(parts) for parts in zip(*found))
    return (
        pl.DataFrame(
            {"paper_id": paper_ids.gather(source), "similar_paper_id": paper_ids.gather(target),
             "score": np.round(score.astype(np.float64), 4)}
        )
        .sort(["paper_id", "score", "similar_paper_id"], descending=[False, True, False])
        .with_columns(rank=pl.int_range(1, pl.len() + 1).over("paper_id"))
        .cast(SIMILAR_SCHEMA)
    )


def _neighbours(vectors: np.ndarray, block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The k nearest of each paper within a block, by exact cosine, a chunk of rows at a time."""
    members = vectors[block]
    take = min(k, len(block) - 1)
    sources, targets, scores = [], [], []
    for start in range(0, len(block), _CHUNK_ROWS):
        chunk = members[start: start + _CHUNK_ROWS]
        similarity = chunk @ members.T
        own = np.arange(start, start + len(chunk))
        similarity[np.arange(len(chunk)), own] = -np.inf
        nearest = np.argpartition(-similarity, take - 1, axis=1)[:, :take] if take < len(block) - 1 else (
            np.argsort(-similarity, axis=1)[:, :take]
        )
        sources.append(np.repeat(block[own], take))
        targets.append(block[nearest.ravel()])
        scores.append(np.take_along_axis(similarity, nearest, axis=1).ravel())
    return np.concatenate(sources), np.concatenate(targets), np.concatenate(scores)
