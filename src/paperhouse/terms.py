"""Candidate terms of each paper: words and phrases between stop words, vectorised in Polars.

A phrase never crosses punctuation or a stop word ("graph neural network", not
"network for"), words are singularised ("networks" -> "network"), and boilerplate
verbs of abstracts ("propose", "show") end a phrase like stop words do. Weights and
document frequencies are derived downstream, in dbt, over these counts.
"""

from __future__ import annotations

import re

import polars as pl

STOPWORDS = frozenset(
    """a about above across after again against all almost also although always among an and another any are
    around as at be because been before being below between both but by can could did do does doing done down
    due during each either else enough especially etc even ever every few for from further had has have having
    here how however i if in into is it its itself just least less many may might more most much must my
    neither no nor not now of off often on once one only onto or other others otherwise our ours out over own
    per perhaps rather same several shall she should since so some such than that the their theirs them then
    there thereby therefore these they this those though through thus to too toward towards under until up upon
    us very via was we well were what whatever when where whereas whether which while who whom whose why will
    with within without would yet you your
    paper work approach method methods propose proposes proposed present presents introduce introduces
    introduced show shows shown demonstrate demonstrates study studies result results use used using based
    new novel existing first second third two three various different significant significantly extensive
    experiment experiments achieve achieves achieved provide provides enable enables allow allows able
    further key large small high low well-known""".split()
)
TERM_OCCURRENCE_SCHEMA = {"paper_id": pl.String, "term": pl.String, "n_words": pl.Int32, "count": pl.Int32}
_TOKEN = r"\p{L}[\p{L}\p{N}]*(?:-[\p{L}\p{N}]+)*"
_BREAK = "|"
_IRREGULAR_PLURALS = {"data": "data", "analyses": "analysis", "hypotheses": "hypothesis", "indices": "index",
                      "matrices": "matrix", "vertices": "vertex", "criteria": "criterion", "phenomena": "phenomenon"}
_KEEP_S = re.compile(r"(ss|us|is|ics|ous|ness|sis|xis|as|ys|'s)$")


def singular(word: str) -> str:
    """A conservative English singular: wrong guesses hurt more than missed ones."""
    last = word.rsplit("-", 1)[-1]
    head = word[: len(word) - len(last)]
    if last in _IRREGULAR_PLURALS:
        return head + _IRREGULAR_PLURALS[last]
    if len(last) <= 3 or _KEEP_S.search(last):
        return word
    if last.endswith("ies") and len(last) > 4:
        return head + last[:-3] + "y"
    if last.endswith(("ches", "shes", "xes", "sses")):
        return head + last[:-2]
    if last.endswith("s"):
        return head + last[:-1]
    return word


def extract_terms(papers: pl.DataFrame, max_words: int = 3) -> pl.DataFrame:
    """``paper_id``, ``normalized_text`` -> one row per paper and term with its count."""
    tokens = (
        papers.lazy()
        .select(
            "paper_id",
            token=pl.col("normalized_text")
            .str.replace_all(r"[.,;:!?()\[\]\"'/]+", f" {_BREAK} ")
            .str.extract_all(f"{_TOKEN}|\\{_BREAK}"),
        )
        .explode("token")
        .drop_nulls("token")
        .with_row_index("position")
        .with_columns(
            is_break=(pl.col("token") == _BREAK)
            | pl.col("token").is_in(STOPWORDS)
            | (pl.col("token").str.len_chars() < 2)
        )
        .with_columns(chunk=pl.col("is_break").cum_sum())
        .filter(~pl.col("is_break"))
        .collect()
    )
    vocabulary = tokens.select(pl.col("token").unique())
    vocabulary = vocabulary.with_columns(
        lemma=pl.Series([singular(t) for t in vocabulary["token"].to_list()], dtype=pl.String)
    )
    tokens = tokens.join(vocabulary, on="token").sort("position")
    grams = []
    for n in range(1, max_words + 1):
        parts = [pl.col("lemma").shift(-i) for i in range(n)]
        same_chunk = pl.col("chunk").shift(-(n - 1)) == pl.col("chunk")
        grams.append(
            tokens.lazy()
            .select("paper_id", term=pl.concat_str(parts, separator=" "), keep=same_chunk)
            .filter(pl.col("keep"))
            .select("paper_id", "term", n_words=pl.lit(n, dtype=pl.Int32))
        )
    return (
        pl.concat(grams)
        .group_by("paper_id", "term", "n_words")
        .agg(count=pl.len().cast(pl.Int32))
        .sort("paper_id", "term")
        .collect()
        .cast(TERM_OCCURRENCE_SCHEMA)
    )
