"""The named method, model, dataset or benchmark an abstract introduces: ``Lorsa``, ``CUPID``.

Abstracts have no titles, but most that introduce something name it right after saying so:
"we propose Low-Rank Sparse Attention (Lorsa)", "we introduce CodeBrain, a ...", "a
framework called RISE". The extractor looks only there, after an introducing verb, and
only at words that look like names (capitals inside or throughout the word, or a run of
capitalised words mid-sentence). Precision comes first: a wrong name on a dashboard is
worse than none, so anything doubtful gives null. Names many papers share ("LLM",
"Transformer") are prior work, not this paper's contribution.
"""

from __future__ import annotations

import re

import polars as pl

from paperhouse.acronyms import find_definitions
from paperhouse.normalize import strip_markup
from paperhouse.terms import FUNCTION_WORDS

NAME_SCHEMA = {"paper_id": pl.String, "method_name": pl.String, "method_long_form": pl.String}

_INTRODUCING = re.compile(
    r"\b(?:we|We|paper|work)\s+(?:also\s+|further\s+|then\s+)?"
    r"(?:propose|introduce|present|develop|design|release|construct|curate|build|contribute|offer)d?s?\b"
    r"|\b(?:called|named|dubbed|termed|coined|refer to as|formalize \w+ as)\b"
    r"|\b(?:Our|our) (?:method|model|framework|approach|benchmark|dataset|system|algorithm|tool|library),"
)
# How far after the verb a name may start, in tokens: "we propose a new benchmark, FRABench".
_WINDOW_TOKENS = 10
_TOKEN = re.compile(r"[(),]|[.;:](?=\s|$)|[^\s,;:()]+")
_NAME_LIKE = re.compile(r"^(?:[A-Za-z0-9\-]*[A-Z][A-Za-z0-9\-]*[A-Z0-9][A-Za-z0-9\-]*|[A-Z][a-z]+[A-Z]\w*)$")
_CAPITALISED = re.compile(r"^[A-Z][\w\-]*$")
# Inside a run of capitalised words: "Iterated in-Context Language Learning".
_CAPITAL_AFTER_HYPHEN = re.compile(r"^[a-z]+-[A-Z][\w\-]*$")
_CONNECTORS = ("and", "of", "for", "in", "on", "to", "with")
_PLURAL_ACRONYM = re.compile(r"^[A-Z][A-Za-z0-9\-]*[A-Z]s$")
# Capitalised words that start a phrase without naming anything.
_NOT_NAMES = frozenset("A An The Our This These We In To For Of On With".split())


def extract_method_names(papers: pl.DataFrame, max_shared_papers: int = 2) -> pl.DataFrame:
    """``paper_id``, ``text`` -> ``method_name`` (null when none) and its long form when defined."""
    texts = papers.select("paper_id", text=strip_markup(pl.col("text")))
    names = pl.DataFrame(
        [(paper_id, *_introduced_name(text)) for paper_id, text in texts.iter_rows()], schema=NAME_SCHEMA,
        orient="row",
    )
    # A name written in several papers is something they build on, not what one of them introduces.
    shared = max(max_shared_papers, int(0.01 * papers.height))
    named = names.drop_nulls("method_name").select("method_name").unique()
    # One Aho-Corasick pass over each text finds every name in it (a cross join would be papers x names).
    usage = (
        texts.lazy()
        .select("paper_id", method_name=pl.col("text").str.extract_many(named["method_name"].implode(), overlapping=True))
        .explode("method_name")
        .drop_nulls()
        .unique()
        .group_by("method_name")
        .agg(papers=pl.len())
        .collect()
    )
    common = pl.col("method_name").is_in(usage.filter(pl.col("papers") > shared)["method_name"].implode())
    return names.with_columns(
        method_long_form=pl.when(common).then(None).otherwise("method_long_form"),
        method_name=pl.when(common).then(None).otherwise("method_name"),
    ).cast(NAME_SCHEMA)


def _introduced_name(text: str) -> tuple[str | None, str | None]:
    for match in _INTRODUCING.finditer(text):
        tokens = _TOKEN.findall(text[match.end(): match.end() + 300])[:_WINDOW_TOKENS]
        name = _first_name(tokens)
        if not name:
            continue
        short_by_long = {d.long_form: d.short_form for d in find_definitions(text)}
        long_by_short = {short: long for long, short in short_by_long.items()}
        short, long = (short_by_long[name], name) if name in short_by_long else (name, long_by_short.get(name))
        if long and long == long.lower():
            continue  # "mutual information (MI)": an acronym of a concept, not a coined name
        return short, long
    return None, None


def _first_name(tokens: list[str]) -> str | None:
    """The first name-like word, or run of capitalised words, before the clause ends.

    Rejected, as naming something the paper uses rather than introduces: a plural acronym
    ("RNNs": a class of models), a name modifying the next noun ("SPD matrix", "LLM
    pretraining", "SAE-based approach"), and one of a list of names ("MMLU, MGSM, XQuAD").
    """
    run: list[str] = []
    position = 0
    for position, token in enumerate(tokens):
        if token in (".", ";", ":", "(", ")", ","):
            if run:
                break
            if token in (".", ";", ":"):
                return None
            continue
        if _NAME_LIKE.match(token) or (_CAPITALISED.match(token) and token not in _NOT_NAMES) or (
            run and _CAPITAL_AFTER_HYPHEN.match(token)
        ):
            run.append(token)
        elif run and token in _CONNECTORS and position + 1 < len(tokens) and _CAPITALISED.match(tokens[position + 1]):
            run.append(token)
        elif run:
            break
    else:
        position += 1
    if not run or (len(run) == 1 and not _NAME_LIKE.match(run[0])):
        return None  # one capitalised word ("Transformers") is too often a known thing
    following = [t for t in tokens[position:] if t not in (")",)]
    following = following[following.index("(") + 2:] if following[:1] == ["("] and len(following) > 2 else following
    if len(run) == 1 and _PLURAL_ACRONYM.match(run[0]):
        return None
    if following and (re.fullmatch(r"[a-z][\w\-]*", following[0]) and following[0] not in FUNCTION_WORDS):
        return None
    if following[:2] and following[0] == "," and len(following) > 1 and _NAME_LIKE.match(following[1]):
        return None
    return " ".join(run)
