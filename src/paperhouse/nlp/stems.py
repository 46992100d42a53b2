"""Phrases in the form they match in: lower case, words only, each Porter-stemmed. The real-data
evaluation matches answers to references this way, and the keyphrase embeddings option matches a
paper's terms (singular lemmas) to the noun phrases of its text (as written) this way."""

from __future__ import annotations

from functools import lru_cache

from paperhouse.nlp.topics.coherence import WORD


@lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=1 << 18)
def _stem(word: str) -> str:
    # A corpus repeats its words: Porter's rules run once per distinct word.
    return _stemmer().stem(word)


def stem_key(phrase: str) -> str:
    """Lower case, words only (hyphens split), each Porter-stemmed: the form phrases match in."""
    return " ".join(_stem(word) for word in WORD.findall(phrase.lower()))
