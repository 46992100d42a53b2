"""A topic's top terms, chosen coherent and distinct, and its label.

A topic's ten top terms are read off its NMF weights, but chosen to be coherent and distinct: from
the topic's 100 heaviest terms, greedily, the one with the best mean NPMI with the terms already
chosen plus its weight relative to the topic's heaviest term. A term that is a near-copy of one
already chosen ("adversarial network" after "generative adversarial network", "graph" after "graph
neural network": one's words, stemmed, inside the other's, or sharing half of them; see
``near_copy``) is skipped and its weight folds into the term it copies.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.sparse import csc_matrix

from paperhouse.nlp.topics.coherence import WORD, npmi_matrix

TOP_TERMS = 10
_CANDIDATE_TERMS = 100
_LABEL_TERMS = 3


# ---------------------------------------------------------------------------------------------
# Near-copies


_ENDINGS = frozenset(
    "s es e ed d ing y ies ied ying er ers ly ion ions ation ations ative atives ate ated ates ating ive ives al als "
    "ally ality alities ity ities ize ized izes izing izer izers ization izations ise ised ises ising iser isation "
    "ment ments ness ful fully fulness ic ics ical ically icity ism isms ist ists ance ances ence ences ant ants ent "
    "ents able ible ably ibly ibility ability bility ous ously ousness iveness ivity ivities or ors ator ators ency "
    "ancy ings edly ingly ial ially ian ians iness ier iest est alism".split()
)


@lru_cache(maxsize=1 << 16)
def _is_ending(rest: str, pieces: int) -> bool:
    """Whether ``rest`` is at most ``pieces`` inflectional or derivational endings in a row."""
    if not rest:
        return True
    return pieces > 0 and any(
        rest.startswith(ending) and _is_ending(rest[len(ending) :], pieces - 1) for ending in _ENDINGS
    )


@lru_cache(maxsize=1 << 16)
def same_word(a: str, b: str) -> bool:
    """Whether two words are forms of one (``masked``/``masking``, ``generative``/``generalization``):
    they share six letters, or a stem that both complete with endings (a stem of two or three
    letters with one ending only; a doubled last letter may start it). Meant to hold wherever
    Porter's stemmer gives the two words one stem, and then some."""
    if a == b:
        return True
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    if common >= 6:
        return True
    for stem in range(common, 1, -1):
        pieces, last = (3 if stem >= 4 else 1), a[stem - 1]
        if all(
            _is_ending(rest, pieces) or (rest[:1] == last and _is_ending(rest[1:], pieces))
            for rest in (a[stem:], b[stem:])
        ):
            return True
    return False


@lru_cache(maxsize=1 << 16)
def _words(term: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(WORD.findall(term.lower())))


def near_copy(a: str, b: str) -> bool:
    """Whether two terms say one idea twice: one's words (as ``same_word`` matches them) all inside
    the other's, or sharing at least half of their words."""
    words_a, words_b = _words(a), _words(b)
    if not words_a or not words_b:
        return False
    in_b = sum(any(same_word(x, y) for y in words_b) for x in words_a)
    in_a = sum(any(same_word(y, x) for x in words_a) for y in words_b)
    if in_b == len(words_a) or in_a == len(words_b):
        return True
    shared = max(in_a, in_b)
    return shared / (len(words_a) + len(words_b) - shared) >= 0.5


# ---------------------------------------------------------------------------------------------
# Choosing the top terms


def top_terms(component: np.ndarray, held: csc_matrix, terms: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """A topic's top terms (columns), their weights and their coherence (mean NPMI over ``held``).

    From the topic's heaviest terms, greedily: the heaviest first, then the term whose mean NPMI with
    those chosen plus its weight relative to the heaviest is best. A near-copy of a chosen term is
    skipped and its weight added to that term's. The terms are returned heaviest first."""
    order = np.argsort(-component, kind="stable")[:_CANDIDATE_TERMS]
    candidates = order[component[order] > 0]
    if len(candidates) == 0:
        return order[:1], component[order[:1]], 0.0
    npmi = npmi_matrix(held, candidates)
    relative = component[candidates] / component[candidates[0]]
    folded = component[candidates].astype(np.float64)
    chosen = [0]
    closed = np.zeros(len(candidates), dtype=bool)
    closed[0] = True
    together = npmi[:, 0].copy()
    while len(chosen) < TOP_TERMS:
        score = np.where(closed, -np.inf, together / len(chosen) + relative)
        pick = int(np.argmax(score))
        if score[pick] == -np.inf:
            break
        closed[pick] = True
        copied = next((c for c in chosen if near_copy(terms[candidates[pick]], terms[candidates[c]])), None)
        if copied is not None:
            folded[copied] += folded[pick]
            continue
        chosen.append(pick)
        together += npmi[:, pick]
    chosen = np.array(chosen)
    pairs = np.triu_indices(len(chosen), k=1)
    coherence = float(npmi[np.ix_(chosen, chosen)][pairs].mean()) if len(chosen) > 1 else 0.0
    ranked = chosen[np.argsort(-folded[chosen], kind="stable")]
    return candidates[ranked], folded[ranked], coherence


def label(top_terms: list[str]) -> str:
    """Two to four readable top terms: a term inside one already shown ("autoencoder" after
    "sparse autoencoder") or containing one (then it replaces it) says nothing new."""
    chosen: list[str] = []
    for term in top_terms:
        words = f" {term} "
        if any(f" {c} " in words for c in chosen):
            chosen = [c for c in chosen if f" {c} " not in words] + [term]
        elif not any(words in f" {c} " for c in chosen):
            chosen.append(term)
        if len(chosen) == _LABEL_TERMS:
            break
    return ", ".join(chosen)
