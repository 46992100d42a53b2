"""How one paper reaches a list twice: the variant kinds dedup must merge, and the look-alikes it must not.

Shared by the evaluation set (``paperhouse eval-dedup``), the synthetic corpus
(``paperhouse synth``) and the tests, so all three measure the same thing.
Every function is deterministic given its ``random.Random``.
"""

from __future__ import annotations

import random
import re
import textwrap
from collections.abc import Callable

Variant = Callable[[str, random.Random], str]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
CODE_SENTENCES = (
    "Code is available at https://github.com/anonymous/release.",
    "Our code and models are publicly available.",
    "The implementation will be released upon publication.",
    "Code and data: https://example.org/artifact.",
)
# Words swapped in by a reword: plausible in any abstract, so they never make it an exact copy.
_REWORDS = ("novel", "robust", "simple", "strong", "careful", "general", "efficient", "principled", "broad")
# Sentences so common in abstracts that sharing one says nothing about being the same paper.
STOCK_SENTENCES = (
    "Extensive experiments demonstrate the effectiveness of our approach.",
    "We release our code to facilitate future research.",
    "Our results highlight promising directions for future work.",
)


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def hard_wrap(text: str, rng: random.Random) -> str:
    return textwrap.fill(text, width=rng.randint(60, 90))


def typography(text: str, rng: random.Random) -> str:
    """Curly quotes made straight (or the reverse), dashes turned into em dashes."""
    swapped = (
        text.replace("’", "'").replace("“", '"').replace("”", '"')
        if "’" in text or "“" in text
        else (text.replace("'", "’"))
    )
    return swapped.replace(" - ", " — ").replace("---", "—").replace(" -- ", " — ")


def markup(text: str, rng: random.Random) -> str:
    """LaTeX or markdown emphasis added around a few words."""
    words = text.split(" ")
    style = rng.choice(("*{}*", "_{}_", "\\textit{{{}}}", "\\emph{{{}}}", "**{}**"))
    for index in rng.sample(range(len(words)), k=min(4, len(words))):
        if words[index].isalpha():
            words[index] = style.format(words[index])
    return " ".join(words)


def code_sentence_appended(text: str, rng: random.Random) -> str:
    return f"{text} {rng.choice(CODE_SENTENCES)}"


def sentence_dropped(text: str, rng: random.Random) -> str:
    parts = sentences(text)
    if len(parts) < 3:
        return text
    del parts[rng.randrange(1, len(parts))]
    return " ".join(parts)


def words_reworded(text: str, rng: random.Random, share: float = 0.03) -> str:
    words = text.split(" ")
    for index in rng.sample(range(len(words)), k=max(1, round(share * len(words)))):
        words[index] = rng.choice(_REWORDS)
    return " ".join(words)


def truncated(text: str, rng: random.Random) -> str:
    cut = int(len(text) * rng.uniform(0.5, 0.8))
    return text[:cut].rsplit(" ", 1)[0] + rng.choice((" ...", "…", "..."))


def camera_ready(text: str, rng: random.Random) -> str:
    """A heavier revision: a sentence dropped, words reworded, a sentence appended."""
    return code_sentence_appended(words_reworded(sentence_dropped(text, rng), rng, share=0.06), rng)


EXACT_VARIANTS: dict[str, Variant] = {"hard_wrap": hard_wrap, "typography": typography, "markup": markup}
NEAR_VARIANTS: dict[str, Variant] = {
    "code_sentence_appended": code_sentence_appended,
    "sentence_dropped": sentence_dropped,
    "words_reworded": words_reworded,
    "truncated": truncated,
    "camera_ready": camera_ready,
}
VARIANTS: dict[str, Variant] = {**EXACT_VARIANTS, **NEAR_VARIANTS}
