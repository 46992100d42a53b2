"""How the real-data evaluation scores an answer against its reference (the protocols of
``paperhouse.evaluation.real_lists``): phrases matched Porter-stemmed and whole, keyphrase recall and F1
at k, topic NPMI over the documents holding each term, near-copy top terms, the share of
neighbours sharing an author keyword, and a title's content words."""

from __future__ import annotations

import numpy as np
import polars as pl

from paperhouse.nlp.stems import stem_key
from paperhouse.nlp.terms.extraction import singular
from paperhouse.nlp.topics.coherence import WORD, npmi_coherence

K = 10


def _contains(text_key: str, phrase_key: str) -> bool:
    return bool(phrase_key) and f" {phrase_key} " in f" {text_key} "


def keyphrase_scores(predicted: list[list[str]], gold: list[list[str]], k: int = K) -> dict[str, float]:
    """Mean recall@k and F1@k over the papers with gold phrases; precision over the (at most k)
    phrases a system gave, each gold phrase found at most once."""
    recalls, f1s = [], []
    for phrases, gold_phrases in zip(predicted, gold, strict=True):
        gold_keys = {stem_key(g) for g in gold_phrases} - {""}
        if not gold_keys:
            continue
        top = list(dict.fromkeys(key for key in map(stem_key, phrases) if key))[:k]
        hits = len(gold_keys.intersection(top))
        precision, recall = (hits / len(top) if top else 0.0), hits / len(gold_keys)
        recalls.append(recall)
        f1s.append(0.0 if hits == 0 else 2 * precision * recall / (precision + recall))
    return {
        f"recall@{k}": round(float(np.mean(recalls)), 4),
        f"f1@{k}": round(float(np.mean(f1s)), 4),
        "papers": len(f1s),
    }


def present_keywords(labels: pl.DataFrame) -> list[list[str]]:
    """Each paper's author keywords that occur in its abstract (stemmed, as a whole phrase)."""
    return [
        [keyword for keyword in keywords if _contains(stem_key(text), stem_key(keyword))]
        for text, keywords in labels.select("text", "keywords").iter_rows()
    ]


def document_ngrams(texts: list[str], max_words: int = 4) -> list[set[str]]:
    held = []
    for text in texts:
        words = [singular(word) for word in WORD.findall(text.lower())]
        held.append({" ".join(words[i : i + n]) for n in range(1, max_words + 1) for i in range(len(words) - n + 1)})
    return held


def _term_key(term: str) -> str:
    return " ".join(singular(word) for word in WORD.findall(term.lower()))


def topic_npmi(documents: list[set[str]], topics: list[list[str]]) -> float:
    """Mean NPMI of the topics' top terms over the documents holding each term."""
    from scipy.sparse import csc_matrix

    keys = sorted({_term_key(term) for terms in topics for term in terms})
    column = {key: i for i, key in enumerate(keys)}
    rows, columns = [], []
    for row, held in enumerate(documents):
        for key in keys:
            if key in held:
                rows.append(row)
                columns.append(column[key])
    present = csc_matrix((np.ones(len(rows)), (rows, columns)), shape=(len(documents), len(keys)))
    top = [np.array(sorted({column[_term_key(t)]: None for t in terms}), dtype=np.int64) for terms in topics]
    return round(float(np.mean([npmi_coherence(present, [terms])[0] for terms in top])), 4)


def near_copies(terms: list[str]) -> list[tuple[str, str]]:
    """Pairs of top terms that say one idea twice: one's stemmed words inside the other's, or
    sharing at least half of their words."""
    keys = [set(stem_key(term).split()) for term in terms]
    return [
        (terms[i], terms[j])
        for i in range(len(terms))
        for j in range(i + 1, len(terms))
        if keys[i]
        and keys[j]
        and (keys[i] <= keys[j] or keys[j] <= keys[i] or len(keys[i] & keys[j]) / len(keys[i] | keys[j]) >= 0.5)
    ]


def keyword_keys(keywords: list[str]) -> set[str]:
    """A paper's author keywords in the form they match in (``stem_key``)."""
    return {key for key in map(stem_key, keywords) if key}


def shared_keyword_share(keys: list[set[str]], neighbours: list[list[int]]) -> float:
    """Mean share of a paper's neighbours sharing an author keyword with it (papers with keywords)."""
    shares = [
        sum(bool(keys[i] & keys[j]) for j in found) / len(found)
        for i, found in enumerate(neighbours)
        if keys[i] and found
    ]
    return round(float(np.mean(shares)), 4)


def content_words(text: str) -> set[str]:
    """A text's stemmed words, English stop words and numbers aside: what a name shares with a title."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return {
        stem_key(word) for word in WORD.findall(text.lower()) if word not in ENGLISH_STOP_WORDS and not word.isdigit()
    }
