"""The named method, model, dataset or benchmark an abstract introduces: ``Lorsa``, ``CUPID``.

Abstracts have no titles, but most that introduce something name it right after saying so:
"we propose Low-Rank Sparse Attention (Lorsa)", "we introduce CodeBrain, a ...", "a
framework called RISE". The extractor looks only there, after an introducing verb, and
only at words that look like names (capitals inside or throughout the word, or a run of
capitalised words mid-sentence). Precision comes first: a wrong name on a dashboard is
worse than none, so anything doubtful gives null. Names many papers share ("LLM",
"Transformer") are prior work, not this paper's contribution.

Papers are read a batch at a time with Polars expressions: the text after each introducing verb
becomes one row per token, and the rules read a token's neighbours within its window. Only
the texts that write a candidate name next to a parenthesis go through the acronym finder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import polars as pl

from paperhouse.common.arrays import slices
from paperhouse.ingest.normalize import strip_markup
from paperhouse.nlp.terms.acronyms import find_definitions
from paperhouse.nlp.terms.extraction import FUNCTION_WORDS

NAME_SCHEMA = {"paper_id": pl.String, "method_name": pl.String, "method_long_form": pl.String}

_INTRODUCING = (
    r"\b(?:we|We|paper|work)\s+(?:also\s+|further\s+|then\s+)?"
    r"(?:propose|introduce|present|develop|design|release|construct|curate|build|contribute|offer)d?s?\b"
    r"|\b(?:called|named|dubbed|termed|coined|refer to as|formalize \w+ as)\b"
    r"|\b(?:Our|our) (?:method|model|framework|approach|benchmark|dataset|system|algorithm|tool|library),"
)
# How far after the verb a name may start: "we propose a new benchmark, FRABench".
_WINDOW_TOKENS = 10
_WINDOW_CHARS = 300
# A clause mark counts when a space or the end follows it (else it belongs to a word, as in
# "v1.5"); Polars' regex has no lookahead, so the mark takes its space along, trimmed after.
_TOKEN = r"[(),]|[.;:](?:\s|$)|[^\s,;:()]+"
_CLAUSE_ENDS = [".", ";", ":"]
_NAME_LIKE = r"^(?:[A-Za-z0-9\-]*[A-Z][A-Za-z0-9\-]*[A-Z0-9][A-Za-z0-9\-]*|[A-Z][a-z]+[A-Z]\w*)$"
_CAPITALISED = r"^[A-Z][\w\-]*$"
# Inside a run of capitalised words: "Iterated in-Context Language Learning".
_CAPITAL_AFTER_HYPHEN = r"^[a-z]+-[A-Z][\w\-]*$"
_CONNECTORS = ["and", "of", "for", "in", "on", "to", "with"]
_PLURAL_ACRONYM = r"^[A-Z][A-Za-z0-9\-]*[A-Z]s$"
_LOWER_CASE_WORD = r"^[a-z][\w\-]*$"
# Capitalised words that start a phrase without naming anything.
_NOT_NAMES = "A An The Our This These We In To For Of On With".split()
# At 10^6 papers, beside the terms' reading of the words: the step peaked at 5,785 MB with
# batches of 100,000 papers, 5,605 MB with 50,000.
_PAPERS_PER_BATCH = 50_000
# Texts of up to this many bytes are small: held whole through the corpus step (10^5 papers:
# 0.15 GB). Here, stripped of markup once for both passes (the names took 8.5 CPU-s, not 10.4);
# larger ones are stripped again for each. See also paperhouse.nlp.analysis.
SMALL_TEXTS_BYTES = 512 << 20


def extract_method_names(papers: pl.DataFrame, max_shared_papers: int = 2) -> pl.DataFrame:
    """``paper_id``, ``text`` -> ``method_name`` (null when none) and its long form when defined.

    Papers are read ``_PAPERS_PER_BATCH`` at a time, twice: for the names they introduce, then for
    how many papers write each name. Every rule reads one paper, so only the count of shared names
    spans batches; the tokens are held a batch at a time (at 10^6 papers, all at once, they held
    4-5 GB beside the texts), and so are the texts stripped of markup, unless they are small
    (``SMALL_TEXTS_BYTES``)."""
    stripped_batches = _stripped_batches(papers)
    names = pl.concat([_introduced_names(texts) for texts in stripped_batches()])
    found = names["method_name"].drop_nulls().unique()
    usage = (
        pl.concat([_papers_writing(texts, found.implode()) for texts in stripped_batches()])
        .group_by("method_name")
        .agg(pl.col("papers").sum())
    )
    return without_common_names(names, usage, papers.height, max_shared_papers)


def introduced_names(papers: pl.DataFrame) -> pl.DataFrame:
    """``NAME_SCHEMA``: the name each of a batch of papers (``paper_id``, ``text``) introduces, or
    null; before names that many papers write are taken back (``without_common_names``)."""
    return _introduced_names(_stripped(papers))


def papers_writing(papers: pl.DataFrame, names: pl.Series) -> pl.DataFrame:
    """``method_name``, ``papers``: how many of a batch of papers (``paper_id``, ``text``) write each of ``names``."""
    return _papers_writing(_stripped(papers), names.implode())


def without_common_names(
    names: pl.DataFrame, usage: pl.DataFrame, n_papers: int, max_shared_papers: int = 2
) -> pl.DataFrame:
    """``names`` (``NAME_SCHEMA``) without those more than ``max_shared_papers`` papers (or 1% of
    the corpus's ``n_papers``) write, by ``usage`` (``method_name``, ``papers``)."""
    # A name written in several papers is something they build on, not what one of them introduces.
    shared = shared_papers_limit(n_papers, max_shared_papers)
    common = pl.col("method_name").is_in(usage.filter(pl.col("papers") > shared)["method_name"].implode())
    return names.with_columns(
        method_long_form=pl.when(common).then(None).otherwise("method_long_form"),
        method_name=pl.when(common).then(None).otherwise("method_name"),
    ).cast(NAME_SCHEMA)


def shared_papers_limit(n_papers: int, max_shared_papers: int = 2) -> int:
    """How many papers may write a name before it is prior work rather than one paper's own."""
    return max(max_shared_papers, int(0.01 * n_papers))


def _stripped_batches(papers: pl.DataFrame) -> Callable[[], Iterator[pl.DataFrame]]:
    """For each pass over the papers: their ``_stripped`` texts, ``_PAPERS_PER_BATCH`` at a time."""
    batches = slices(papers, _PAPERS_PER_BATCH)
    if papers.estimated_size() > SMALL_TEXTS_BYTES:
        return lambda: map(_stripped, batches)
    stripped = [_stripped(batch) for batch in batches]
    return lambda: iter(stripped)


def _stripped(papers: pl.DataFrame) -> pl.DataFrame:
    """``row`` (numbered in the batch), ``paper_id`` and ``text`` without markup."""
    return papers.select("paper_id", text=strip_markup(pl.col("text"))).with_row_index("row")


def _introduced_names(texts: pl.DataFrame) -> pl.DataFrame:
    """Each paper's ``NAME_SCHEMA`` row (``texts``: ``_stripped``): the first candidate that is
    not an acronym of a concept."""
    candidates = _with_long_forms(_candidate_names(texts), texts)
    introduced = (
        # "mutual information (MI)": an acronym of a concept, not a coined name; a later verb may name one.
        candidates.filter(
            pl.col("method_long_form").is_null()
            | (pl.col("method_long_form") != pl.col("method_long_form").str.to_lowercase())
        )
        .sort("row", "match_no")
        .group_by("row", maintain_order=True)
        .first()
    )
    return texts.join(introduced, on="row", how="left", maintain_order="left").select(*NAME_SCHEMA).cast(NAME_SCHEMA)


def _papers_writing(texts: pl.DataFrame, names: pl.Series) -> pl.DataFrame:
    """``method_name``, ``papers``: how many of the papers (``texts``: ``_stripped``) write each of ``names``."""
    # One Aho-Corasick pass over each text finds every name in it (a cross join would be papers x names).
    # Eager on purpose: run lazily, Polars' default engine made extract_many 20 times slower at 100k papers.
    return (
        texts.select("row", method_name=pl.col("text").str.extract_many(names, overlapping=True))
        .explode("method_name")
        .drop_nulls()
        .unique()
        .group_by("method_name")
        .agg(papers=pl.len().cast(pl.UInt32))
    )


def _candidate_names(texts: pl.DataFrame) -> pl.DataFrame:
    """``row``, ``match_no`` (the introducing verb's order in the text), ``name``: the first
    name-like word, or run of capitalised words, in the window after each verb.

    Rejected, as naming something the paper uses rather than introduces: a plural acronym
    ("RNNs": a class of models), a name modifying the next noun ("SPD matrix", "LLM
    pretraining", "SAE-based approach"), and one of a list of names ("MMLU, MGSM, XQuAD").
    """
    window = ["row", "match_no"]
    token, position = pl.col("token"), pl.col("position")
    is_capitalised = token.str.contains(_CAPITALISED)
    starts_run = token.str.contains(_NAME_LIKE) | (is_capitalised & ~token.is_in(_NOT_NAMES))
    continues_run = (
        starts_run
        | token.str.contains(_CAPITAL_AFTER_HYPHEN)
        | (token.is_in(_CONNECTORS) & is_capitalised.shift(-1).over(window).fill_null(False))
    )
    in_run = (position >= pl.col("run_start")) & (position < pl.col("run_end"))
    tokens = (
        texts
        # Pieces of the text that each end with an introducing verb: their running lengths are where windows start.
        .select(
            "row",
            "text",
            window_start=pl.col("text")
            .str.split(_INTRODUCING, literal=False, inclusive=True)
            .list.eval(pl.element().str.len_chars().cum_sum()),
        )
        .with_columns(pl.col("window_start").list.head(pl.col("window_start").list.len() - 1))
        .explode("window_start")
        .drop_nulls("window_start")
        .select(
            "row",
            match_no=pl.int_range(pl.len()).over("row"),
            token=pl.col("text")
            .str.slice("window_start", _WINDOW_CHARS)
            .str.extract_all(_TOKEN)
            .list.head(_WINDOW_TOKENS)
            .list.eval(pl.element().str.strip_chars()),
        )
        .with_columns(position=pl.int_ranges(pl.col("token").list.len()))
        .explode("token", "position")
        .drop_nulls("token")
        .with_columns(starts_run=starts_run, continues_run=continues_run)
        .with_columns(run_start=position.filter("starts_run").min().over(window))
        .with_columns(
            run_end=position.filter(~pl.col("continues_run") & (position > pl.col("run_start")))
            .min()
            .over(window)
            .fill_null(pl.len().over(window))
        )
    )
    following = pl.col("following")
    first_following, second_following = following.list.first(), following.list.get(1, null_on_oob=True)
    single_word = pl.col("run_length") == 1
    return (
        tokens.group_by(window)
        .agg(
            name=token.filter(in_run).str.join(" "),
            run_length=in_run.sum(),
            run_start=pl.col("run_start").first(),
            first_clause_end=position.filter(token.is_in(_CLAUSE_ENDS)).min(),
            following=token.filter((position >= pl.col("run_end")) & (token != ")")),
        )
        # "Lorsa (Low-Rank Sparse Attention) is": what follows the parenthesis counts.
        .with_columns(
            following=pl.when((first_following == "(") & (following.list.len() > 2))
            .then(following.list.slice(2))
            .otherwise(following)
        )
        .filter(
            pl.col("run_start").is_not_null(),
            pl.col("first_clause_end").is_null() | (pl.col("first_clause_end") > pl.col("run_start")),
            # One capitalised word ("Transformers") is too often a known thing.
            ~(single_word & ~pl.col("name").str.contains(_NAME_LIKE)),
            ~(single_word & pl.col("name").str.contains(_PLURAL_ACRONYM)),
            ~(first_following.str.contains(_LOWER_CASE_WORD) & ~first_following.is_in(FUNCTION_WORDS)).fill_null(False),
            ~((first_following == ",") & second_following.str.contains(_NAME_LIKE)).fill_null(False),
        )
        .select(*window, "name")
    )


def _with_long_forms(candidates: pl.DataFrame, texts: pl.DataFrame) -> pl.DataFrame:
    """Each candidate as ``method_name`` (the short form when the text defines one) and ``method_long_form``.

    A text can only define the name next to a parenthesis: as the long form, its last word
    right before one ("Low-Rank Sparse Attention (Lorsa)"), or as the short form, the word
    right inside one ("(Lorsa)", "(RNNs)"). Only those texts are searched for definitions.
    """
    word = r"[^\s,;:()]+"
    words_at_parentheses = texts.filter(pl.col("row").is_in(candidates["row"].implode())).select(
        "row",
        "text",
        word_before=pl.col("text")
        .str.extract_all(word + r"[\s,;:]*\(")
        .list.eval(pl.element().str.extract(f"^({word})")),
        word_inside=pl.col("text").str.extract_all(r"\(\s*" + word).list.eval(pl.element().str.extract(f"({word})$")),
    )
    name = pl.col("name")
    defining = (
        candidates.join(words_at_parentheses, on="row")
        .filter(
            pl.col("word_before").list.contains(name.str.extract(r"(\S+)$"))
            | pl.col("word_inside").list.contains(name)
            | pl.col("word_inside").list.contains(name + "s")
        )
        .select("row", "text")
        .unique("row", maintain_order=True)
    )
    definitions = pl.DataFrame(
        [
            (row, number, definition.short_form, definition.long_form)
            for row, text in defining.iter_rows()
            for number, definition in enumerate(find_definitions(text))
        ],
        schema={"row": pl.UInt32, "definition_no": pl.Int64, "short_form": pl.String, "long_form": pl.String},
        orient="row",
    )
    # Repeated definitions: a long form keeps its last short form, and a short form the long form
    # first defined latest among those whose last short form it is.
    short_by_long = definitions.group_by("row", "long_form").agg(
        pl.col("short_form").sort_by("definition_no").last(), first_no=pl.col("definition_no").min()
    )
    long_by_short = short_by_long.group_by("row", "short_form").agg(pl.col("long_form").sort_by("first_no").last())
    return (
        candidates.join(short_by_long.select("row", "short_form", name="long_form"), on=["row", "name"], how="left")
        .join(long_by_short.select("row", "long_form", name="short_form"), on=["row", "name"], how="left")
        .select(
            "row",
            "match_no",
            method_name=pl.coalesce("short_form", "name"),
            method_long_form=pl.when(pl.col("short_form").is_not_null()).then("name").otherwise("long_form"),
        )
    )
