"""The corpus' table of terms, from the (paper, n-gram) counts: spelling variants merged into one
term, stock terms dropped, and each term's sums over the corpus described (``doc_freq``, ``idf``,
``kind``). The Spark engine computes the sums as aggregations and calls ``describe_terms`` and
``stock_term`` per partition of terms."""

from __future__ import annotations

import numpy as np
import polars as pl

from paperhouse.nlp.terms.words import ENDS_IN_PARTICIPLE, GENERIC_WORDS, STOCK_PHRASES, variant_key


def merge_spellings(
    parts: list[pl.DataFrame], vocabulary: pl.DataFrame, stock: pl.Series
) -> tuple[list[pl.DataFrame], pl.DataFrame]:
    """The parts of the (paper, term) counts, each still in paper order, with spelling variants
    merged into one term (the variant written most often, then the first in order) and then
    ``stock`` terms dropped; and the merged spellings as aliases.

    ``parts`` is emptied as its frames are filtered, so one part at a time is copied."""
    spellings = (
        term_sums(parts, vocabulary.height)
        .join(vocabulary, on="term_idx")
        .with_columns(key=variant_key(pl.col("term")))
    )
    spellings = spellings.with_columns(
        preferred=pl.col("term_idx").sort_by(["uses", "term_idx"], descending=[True, False]).first().over("key")
    )
    variants = spellings.filter(pl.col("term_idx") != pl.col("preferred"))
    # Only rows of a variant or of its preferred spelling can meet; the rest pass through untouched.
    is_involved = pl.col("term_idx").is_in(pl.concat([variants["term_idx"], variants["preferred"]]).unique().implode())
    is_stock = pl.col("term_idx").is_in(stock.implode())
    untouched, involved = [], []
    while parts:
        grams = parts.pop(0)
        untouched.append(grams.filter(~is_involved & ~is_stock))
        involved.append(grams.filter(is_involved))
        del grams
    regrouped = (
        pl.concat(involved)
        .join(variants.select("term_idx", "preferred"), on="term_idx", how="left")
        .with_columns(term_idx=pl.coalesce("preferred", "term_idx"))
        .group_by("paper_idx", "term_idx")
        .agg(pl.col("count", "heads").sum())
        .filter(~is_stock)
        .sort("paper_idx")
    )
    merged = [*untouched, regrouped.cast(untouched[0].schema)]
    aliases = variants.join(
        vocabulary.rename({"term_idx": "preferred", "term": "preferred_term"}), on="preferred"
    ).select(alias="term", term="preferred_term", alias_kind=pl.lit("spelling"), papers=pl.col("papers").cast(pl.Int32))
    return merged, aliases


def term_sums(parts: list[pl.DataFrame], n_terms: int) -> pl.DataFrame:
    """``term_idx``, ``papers``, ``uses`` and ``heads`` of every term that occurs in ``parts``: summed
    part by part, as a group-by over the parts would first copy them into one frame."""
    papers, uses, heads = (np.zeros(n_terms, dtype=np.int64) for _ in range(3))
    for part in parts:
        term_idx = part["term_idx"].to_numpy()
        papers += np.bincount(term_idx, minlength=n_terms)
        uses += np.bincount(term_idx, weights=part["count"].to_numpy(), minlength=n_terms).astype(np.int64)
        heads += np.bincount(term_idx, weights=part["heads"].to_numpy(), minlength=n_terms).astype(np.int64)
    occurring = np.flatnonzero(papers)
    return pl.DataFrame(
        {
            "term_idx": occurring.astype(np.uint32),
            "papers": papers[occurring],
            "uses": uses[occurring],
            "heads": heads[occurring],
        }
    )


def stock_terms(vocabulary: pl.DataFrame) -> pl.Series:
    """The ``term_idx`` of stock terms (``stock_term``), decided once per term."""
    return vocabulary.filter(stock_term(pl.col("term")))["term_idx"]


def stock_term(term: pl.Expr) -> pl.Expr:
    """Whether a term is a stock phrase, made only of generic words, or ends in a participle: dropped."""
    return (
        variant_key(term).is_in(STOCK_PHRASES)
        | term.str.split(" ").list.eval(pl.element().is_in(GENERIC_WORDS)).list.all()
        | term.str.contains(ENDS_IN_PARTICIPLE)
    )


def with_capital_uses(sums: pl.DataFrame, capitalised: pl.DataFrame) -> pl.DataFrame:
    """The terms' sums with ``capital_uses`` (0 where none) from ``capitalised_words``."""
    uses = capitalised.select(term="word", capital_uses="capital_uses")
    return sums.join(uses, on="term", how="left").with_columns(pl.col("capital_uses").fill_null(0))


def describe_terms(sums: pl.DataFrame, n_papers: int) -> pl.DataFrame:
    """Each term's row from its sums over the corpus (``term``, ``papers``, ``uses``, ``heads``,
    ``capital_uses``; other columns kept): ``doc_freq``, ``head_share``, ``n_words``, ``idf`` and
    ``kind``. A word is an acronym when the texts mostly write it in capitals: a heading in capitals
    ("GRAPH NEURAL NETWORKS") or a label ("Estimator B") does not make "graph" or "estimator" one."""
    return sums.with_columns(
        doc_freq=pl.col("papers").cast(pl.Int32),
        head_share=pl.col("heads") / pl.col("uses"),
        n_words=pl.col("term").str.count_matches(" ").cast(pl.Int32) + 1,
        idf=((1 + n_papers) / (1 + pl.col("papers").cast(pl.Int32))).log() + 1,
        kind=pl.when(pl.col("term").str.contains(r"[ -]"))
        .then(pl.lit("phrase"))
        .when(2 * pl.col("capital_uses") > pl.col("uses"))
        .then(pl.lit("acronym"))
        .otherwise(pl.lit("word")),
    )
