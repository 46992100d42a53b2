"""Noun phrases of abstracts, by Brill's lexicon (as TextBlob ships it): runs of words the lexicon
does not tag as verbs, adverbs or function words, ending in a noun. A word the lexicon lacks counts
as a noun: most of a field's terms ("autoencoder", "ReLU") are in no general lexicon.

The keyphrase embeddings option (``paperhouse.nlp.keyphrases.embeddings``) parses each paper's text once
(``runs_by_paper``) and reads two things off its runs: whether a term is a whole noun phrase of its
paper (``wholeness``), and the paper's own noun phrases that are none of its terms
(``own_noun_phrases``), as further keyphrases.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from functools import cache
from importlib.metadata import distribution

import polars as pl

from paperhouse.nlp.stems import stem_key
from paperhouse.nlp.terms.table import stock_term
from paperhouse.nlp.terms.words import STOPWORDS, singular

# The longest phrase a term can be (``paperhouse.nlp.terms.extraction.index_terms``' ``max_words``).
MAX_WORDS = 4
# Parts of speech (Penn Treebank tags) a word of a noun phrase may have; a phrase ends in a noun.
# Participles and past tenses modify ("supervised learning"); a gerund may be the head ("learning").
_NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS", "VBG"})
_MODIFIER_TAGS = frozenset({"JJ", "JJR", "JJS", "VBN", "VBD"})
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-']*|[^\sA-Za-z0-9]")

OWN_NOUN_PHRASE_SCHEMA = {"paper_id": pl.String, "keyphrase": pl.String, "term": pl.String}
Run = list[tuple[str, bool]]  # a whole noun phrase: its words, each with whether it is a noun


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


def phrase_runs(text: str) -> list[Run]:
    """The text's whole noun phrases in order, each as its words with whether each is a noun."""
    lexicon = _lexicon()
    runs, run = [], []
    for token in [*_TOKEN.findall(text), "."]:
        tag = lexicon.get(token.lower(), "NN") if token[0].isalnum() else "."
        if tag in _NOUN_TAGS or tag in _MODIFIER_TAGS:
            run.append((token, tag in _NOUN_TAGS))
            continue
        while run and not run[-1][1]:
            run.pop()
        if run:
            runs.append(run)
        run = []
    return runs


def runs_by_paper(texts: pl.DataFrame) -> dict[str, list[Run]]:
    """Each paper's ``phrase_runs`` (``texts``: ``paper_id``, ``text``)."""
    return {paper: phrase_runs(text) for paper, text in texts.select("paper_id", "text").iter_rows()}


def phrase_keys(runs: list[Run]) -> tuple[set[str], set[str]]:
    """A text's noun phrases (its ``phrase_runs``) as ``stem_key``s: the whole ones, and every run of
    up to four of their words that ends in a noun."""
    whole, inner = set(), set()
    for run in runs:
        keys = [stem_key(word) for word, _ in run]
        whole.add(" ".join(keys))
        for start in range(len(run)):
            for end in range(start + 1, min(len(run), start + MAX_WORDS) + 1):
                if run[end - 1][1]:
                    inner.add(" ".join(keys[start:end]))
    return whole, inner


def wholeness(paper_terms: pl.DataFrame, runs: Mapping[str, list[Run]]) -> pl.Series:
    """For each row of ``paper_terms`` (``paper_id``, ``term``): 1 where the term is a whole noun
    phrase of the paper's text (``runs``: ``runs_by_paper``), else the square root of the share of
    the corpus' papers holding it as a noun phrase that hold it whole (0 when none does)."""
    by_paper = {paper: phrase_keys(paper_runs) for paper, paper_runs in runs.items()}
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


def term_keys(terms: pl.Series, aliases: pl.DataFrame) -> dict[str, str]:
    """The corpus term each ``stem_key`` stands for: the terms' own, then their aliases' (``alias``,
    ``term``: "GANs" stands for "generative adversarial network")."""
    keys = {stem_key(alias): term for alias, term in aliases.select("alias", "term").iter_rows()}
    return keys | {stem_key(term): term for term in terms}


def own_noun_phrases(
    paper_terms: pl.DataFrame, runs: Mapping[str, list[Run]], terms_by_key: dict[str, str]
) -> pl.DataFrame:
    """Each paper's whole noun phrases (``runs``: ``runs_by_paper``) of up to ``MAX_WORDS`` words that
    are none of its terms (``paper_terms``: ``paper_id``, ``term``), once each, as the terms are written (lower case,
    singular) without a leading word of how abstracts talk ("proposed", "novel"); none that is a stock
    phrase. One that is a corpus term (``terms_by_key``, ``term_keys``) is written as the term,
    ``term``; else ``term`` is null."""
    held = dict(paper_terms.group_by("paper_id").agg(pl.col("term")).iter_rows())
    rows = []
    for paper, paper_runs in runs.items():
        # What the paper holds already, as keys and as terms ("GANs" is its "generative adversarial network").
        seen = {stem_key(term) for term in held.get(paper, ())} | set(held.get(paper, ()))
        for run in paper_runs:
            words = [word.lower() for word, _ in run]
            while words and words[0] in STOPWORDS:
                words.pop(0)
            words = [singular(word) for word in words]  # as the terms: "graph neural network"
            phrase = " ".join(words)
            key = stem_key(phrase)
            term = terms_by_key.get(key)
            if not words or len(words) > MAX_WORDS or key in seen or (term is not None and term in seen):
                continue
            seen.update((key, term) if term is not None else (key,))
            rows.append((paper, term or phrase, term))
    found = pl.DataFrame(rows, schema=OWN_NOUN_PHRASE_SCHEMA, orient="row")
    return found.filter(~stock_term(pl.col("keyphrase")))
