"""How coherent a topic's top terms are: NPMI over the papers that hold them.

NPMI is measured on whether each sample paper's text holds the term (its words in a row,
singular), when the texts are given; on the term weights otherwise.
"""

from __future__ import annotations

import re

import numpy as np
import polars as pl
from scipy.sparse import csc_matrix

from paperhouse.nlp.terms.extraction import singular

# A word as the topic model reads a term or a text: hyphens and punctuation split words.
WORD = re.compile(r"[a-z0-9]+")


def npmi_coherence(present: csc_matrix, top_terms: np.ndarray) -> np.ndarray:
    """Mean NPMI over pairs of each topic's top terms; ``present`` is papers x terms, 1 where used.

    NPMI(i, j) = log(P(i,j) / (P(i) P(j))) / -log P(i,j), from document co-occurrence; -1 for
    pairs that never meet (Bouma 2009; Röder et al. 2015's C_NPMI without a sliding window).
    """
    scores = []
    for terms in top_terms:
        npmi = npmi_matrix(present, np.asarray(terms))
        i, j = np.triu_indices(len(terms), k=1)
        scores.append(float(npmi[i, j].mean()) if len(i) else 0.0)
    return np.array(scores)


def npmi_matrix(present: csc_matrix, columns: np.ndarray) -> np.ndarray:
    """NPMI of every pair of the given columns of ``present`` (papers x terms, 1 where used)."""
    n = max(present.shape[0], 1)
    held = present[:, columns]
    together = (held.T @ held).toarray() / n
    alone = np.diag(together)
    with np.errstate(divide="ignore", invalid="ignore"):
        npmi = np.where(together > 0, np.log(together / np.outer(alone, alone)) / -np.log(together), -1.0)
    return np.where(together >= 1, 1.0, npmi)


def text_presence(texts: list[str], terms: np.ndarray) -> csc_matrix:
    """Texts x terms, 1 where a text holds the term: its words in a row, lower case and singular,
    as in the text (hyphens and punctuation split words)."""
    keys = [" " + " ".join(singular(word) for word in WORD.findall(term.lower())) + " " for term in terms]
    if not texts or not keys:
        return csc_matrix((len(texts), len(keys)))
    words = (
        pl.DataFrame(
            {"row": np.arange(len(texts), dtype=np.int64), "text": texts}, schema={"row": pl.Int64, "text": pl.String}
        )
        .select("row", word=pl.col("text").str.to_lowercase().str.extract_all(WORD.pattern))
        .explode("word")
        .drop_nulls("word")
    )
    spellings = words["word"].unique()
    singulars = pl.DataFrame({"word": spellings, "singular": [singular(word) for word in spellings.to_list()]})
    texts_read = (
        words.with_row_index("position")
        .join(singulars, on="word", how="left")
        .sort("position")
        .group_by("row", maintain_order=True)
        .agg(text=pl.lit(" ") + pl.col("singular").str.join(" ") + pl.lit(" "))
    )
    found = (
        texts_read.select("row", key=pl.col("text").str.extract_many(keys, overlapping=True))
        .explode("key")
        .drop_nulls("key")
        .unique()
    )
    columns = pl.DataFrame({"key": keys, "column": np.arange(len(keys), dtype=np.int64)})
    pairs = found.join(columns, on="key")  # terms of one key (spellings merged alike) all count
    return csc_matrix(
        (np.ones(pairs.height), (pairs["row"].to_numpy(), pairs["column"].to_numpy())), shape=(len(texts), len(keys))
    )
