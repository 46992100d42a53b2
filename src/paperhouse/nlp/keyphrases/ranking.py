"""Each paper's keyphrases (``raw.paper_keyphrases``): the ten phrases a reader would tag it with.

By default they are its ten best terms (``paper_terms`` by rank), each a term of the corpus. With
``paperhouse run --keyphrase-embeddings`` (``paperhouse.nlp.keyphrases.embeddings``) they are ranked by
meaning too, and may be noun phrases of the paper that are no term ("enhanced process integration":
terms are what papers share, and one paper's own concept is shared by none); ``term`` is then null.
"""

from __future__ import annotations

import polars as pl

KEYPHRASES_PER_PAPER = 10

KEYPHRASE_SCHEMA = {
    "paper_id": pl.String,
    "rank": pl.Int32,  # 1 = the paper's first keyphrase
    "keyphrase": pl.String,  # the term, or the noun phrase as terms are written (lower case, singular)
    "term": pl.String,  # the corpus term it is, null for a noun phrase of this paper only
    "score": pl.Float64,  # the term's weight, or the option's blend
}


def best_terms(paper_terms: pl.DataFrame) -> pl.DataFrame:
    """The default keyphrases: each paper's ``KEYPHRASES_PER_PAPER`` best terms (``paper_terms``:
    ``paper_id``, ``term``, ``weight``, ``rank``), scored by their weight."""
    return (
        paper_terms.filter(pl.col("rank") <= KEYPHRASES_PER_PAPER)
        .select("paper_id", "rank", keyphrase="term", term="term", score="weight")
        .cast(KEYPHRASE_SCHEMA)
        .sort("paper_id", "rank")
    )
