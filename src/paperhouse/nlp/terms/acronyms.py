"""Acronyms defined in the text itself: "sparse autoencoders (SAEs)" gives SAE <-> sparse autoencoders.

The algorithm is Schwartz and Hearst's (PSB 2003): a short form in parentheses is matched
right to left, character by character, against the words before it; the first character of
the short form must start a word of the long form, and the long form may span at most
min(|SF| + 5, 2 * |SF|) words. It needs no dictionary and no model, so it runs offline and
the same everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PARENTHESIS = re.compile(r"\(\s*([^()\s][^()]{0,14}?)\s*\)")
# A short form: 2-10 characters, starts with a letter or digit, holds a capital letter.
_SHORT_FORM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9\-./&]{1,9}$")
# What every definition's parenthesis matches (short-form characters, one a capital), for Polars:
# texts without a match define nothing, so callers skip them without running the matcher.
POSSIBLE_DEFINITION = r"\(\s*[A-Za-z0-9\-./&]*[A-Z][A-Za-z0-9\-./&]*\s*\)"
# Camel-case plurals of acronyms: SAEs, LLMs, GNNs (but not "CUDAs"-looking words in lower case).
_PLURAL = re.compile(r"(?<=[A-Z0-9])s$")
# Long forms starting like this were cut at a clause, not at a term.
_LONG_FORM_STOP = frozenset("a an the of for in on to and or with by as is are we our this that these its".split())


@dataclass(frozen=True)
class Definition:
    short_form: str  # as written, without a plural "s": "SAE"
    long_form: str  # as written: "sparse autoencoders"


def find_definitions(text: str) -> list[Definition]:
    """Every ``long form (SHORT)`` pair in a text, in order of appearance."""
    found = []
    for match in _PARENTHESIS.finditer(text):
        short_form = _PLURAL.sub("", match.group(1))
        if not _is_short_form(short_form):
            continue
        # The long form is at most 2 x 10 words before the parenthesis: look no further back.
        preceding = text[max(0, match.start() - 300) : match.start()].split()
        window = preceding[-min(len(short_form) + 5, 2 * len(short_form)) :]
        long_form = _best_long_form(short_form, " ".join(window))
        if long_form:
            found.append(Definition(short_form=short_form, long_form=long_form))
    return found


def _is_short_form(candidate: str) -> bool:
    # The pattern first: it turns away most parentheses ("(e.g., ...)", "(2023)") at once.
    return (
        _SHORT_FORM.match(candidate) is not None
        and any(c.isupper() for c in candidate)
        and sum(c.isalpha() for c in candidate) >= 2
    )


def _best_long_form(short_form: str, candidate: str) -> str | None:
    """Schwartz-Hearst's right-to-left match of the short form's characters in the candidate."""
    short = short_form.lower()
    long = candidate.lower()
    s_index, l_index = len(short) - 1, len(long) - 1
    while s_index >= 0:
        char = short[s_index]
        if not char.isalnum():
            s_index -= 1
            continue
        while l_index >= 0 and (
            long[l_index] != char or (s_index == 0 and l_index > 0 and long[l_index - 1].isalnum())
        ):
            l_index -= 1
        if l_index < 0:
            return None
        l_index -= 1
        s_index -= 1
    start = long.rfind(" ", 0, l_index + 1) + 1
    long_form = candidate[start:].strip(" ,;:")
    words = long_form.split()
    if not words or words[0].lower() in _LONG_FORM_STOP or len(long_form) <= len(short_form):
        return None
    if long_form.lower() == short_form.lower():
        return None
    return long_form
