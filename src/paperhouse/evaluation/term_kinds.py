"""Are the terms the warehouse calls acronyms written as acronyms, and does each acronym alias point
to its own expansion? Judged by rule from the texts themselves, not by the code that decided
(``paperhouse.nlp.terms``), so a fault there shows here:

- an acronym term is right when the texts mostly write it as one (more capital letters than small
  ones: GAN, LoRA, CoT, not ResNet or Graph), or define it in parentheses ("... (GAN)");
- an acronym alias ``SF -> term`` is right when, of the places the texts define ``SF`` with the
  term's words last before the parenthesis, most have the whole long form in the term: the word
  before it spells no more of the short form's capitals ("large language models (LLMs)": "large"
  spells an L that "language model" leaves out, so LLM -> language model is wrong; "an anomaly
  detector (AD)": "an" adds nothing). An alias no text defines with its term last is wrong.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import polars as pl

from paperhouse.nlp.stems import stem_key

# A word as written (hyphenated words whole) and a short form in parentheses, plural "s" aside.
_WRITTEN_WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)*")
_DEFINED = re.compile(r"\(\s*([A-Za-z][A-Za-z0-9\-]{1,9}?)s?\s*\)")
_PRECEDING_WORDS = 12


def _singular_key(word: str) -> str:
    return word.lower().removesuffix("s")


def written_forms(texts: list[str]) -> tuple[dict[str, Counter], set[str]]:
    """Each word's (lower case, plural "s" off) forms as written, counted; and the keys of the
    short forms defined in parentheses."""
    forms: dict[str, Counter] = defaultdict(Counter)
    defined = set()
    for text in texts:
        for word in _WRITTEN_WORD.findall(text):
            forms[_singular_key(word)][word] += 1
        defined.update(_singular_key(short) for short in _DEFINED.findall(text) if any(c.isupper() for c in short))
    return forms, defined


def _mostly_capitals(form: str) -> bool:
    letters = [c for c in form if c.isalpha()]
    return sum(c.isupper() for c in letters) > len(letters) / 2


def acronym_precision(texts: list[str], acronyms: list[str]) -> dict:
    """The share of ``acronyms`` (terms of kind ``acronym``) the texts write or define as acronyms."""
    forms, defined = written_forms(texts)
    wrong = []
    for term in acronyms:
        key = _singular_key(term)
        written = forms.get(key, Counter())
        capital = sum(n for form, n in written.items() if _mostly_capitals(form))
        if key not in defined and 2 * capital <= sum(written.values()):
            wrong.append(term)
    return {
        "terms": len(acronyms),
        "precision": round(1 - len(wrong) / len(acronyms), 4) if acronyms else None,
        "wrong": sorted(wrong)[:12],
    }


def _definition_sites(texts: list[str], aliases: set[str]) -> dict[str, list[list[str]]]:
    """For each alias, the words before each parenthesis that defines it, nearest last."""
    sites: dict[str, list[list[str]]] = defaultdict(list)
    for text in texts:
        for match in _DEFINED.finditer(text):
            if match.group(1) in aliases:
                before = _WRITTEN_WORD.findall(text[max(0, match.start() - 200) : match.start()])
                sites[match.group(1)].append(before[-_PRECEDING_WORDS:])
    return sites


def _covered(initials: str, capitals: str) -> int:
    """How many of a short form's capitals the initials spell, in order (greedily)."""
    matched = 0
    for initial in initials:
        if matched < len(capitals) and initial == capitals[matched]:
            matched += 1
    return matched


def _judged_site(short_form: str, term: str, before: list[str]) -> bool | None:
    """None when the term is not the last words before this definition; else whether it is the
    whole long form: the word before it spells no more of the short form's capitals."""
    # Hyphenated words count as their pieces, on both sides.
    term_words = [word for word in re.split(r"[\s\-]+", term) if word]
    pieces = [piece for word in before for piece in word.split("-") if piece]
    n = len(term_words)
    if len(pieces) < n or [stem_key(p) for p in pieces[-n:]] != [stem_key(w) for w in term_words]:
        return None
    capitals = "".join(c for c in short_form if c.isupper()).lower()
    initials = "".join(word[0] for word in pieces[-n:]).lower()
    longer = pieces[-n - 1][0].lower() + initials if len(pieces) > n else initials
    return _covered(longer, capitals) == _covered(initials, capitals)


def alias_precision(texts: list[str], aliases: pl.DataFrame) -> dict:
    """The share of acronym aliases (``alias``, ``term``) that the texts' own definitions expand to
    the whole of the term; aliases defined nowhere in parentheses are left out (not judged)."""
    pairs = list(aliases.select("alias", "term").iter_rows())
    sites = _definition_sites(texts, {alias for alias, _ in pairs})
    judged, wrong = 0, []
    for alias, term in pairs:
        if not sites.get(alias):
            continue
        judged += 1
        verdicts = [v for before in sites[alias] if (v := _judged_site(alias, term, before)) is not None]
        # Wrong too when no definition ends in the term (no verdict): it names what no text defines.
        if 2 * sum(verdicts) <= len(verdicts):
            wrong.append(f"{alias} -> {term}")
    return {
        "aliases": judged,
        "precision": round(1 - len(wrong) / judged, 4) if judged else None,
        "wrong": sorted(wrong)[:12],
    }
