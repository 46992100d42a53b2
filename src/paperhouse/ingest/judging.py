"""Judging parsed records: repair each one's text, and say why one is no abstract.

Scraped text is repaired, not rejected: stray control bytes are dropped, HTML/XML entities
decoded (broken ones too: ``& gt;``, ``&mdash``, escaped five times) and tags stripped (HTML, JATS,
MathML, escaped or not, and INSPEC's ``/sub 2/``; ``paperhouse.ingest.normalize``), and ``repairs``
names what was done. Only a
paragraph that is mostly binary (or holds a run of NUL bytes, as binary data does) is rejected.
The same judge serves every input format: text lists' paragraphs and structured files' rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from paperhouse.ingest.normalize import (
    CONTROL_CHARACTERS,
    ENTITY_CANDIDATE,
    TAG_CANDIDATE,
    clean_text,
    normalized_text,
    only_where,
    repair_entities,
    rows_where,
    strip_controls,
    strip_tag_markup,
)

# Binary data pads with NUL bytes; prose never holds two in a row.
_NUL_RUN = "\x00\x00"
# What ``repairs`` may name, in the order it names them.
# The last, realigned_fields, is the reader's (a CSV/TSV row whose unquoted separators were found
# again: ``paperhouse.ingest.row_recovery``), carried in ``read_repair``.
REPAIRS = ("html_entities", "markup", "control_characters", "realigned_fields")
READ_REPAIR = "read_repair"  # what reading an export's row repaired (null: nothing), beside its fields


@dataclass(frozen=True)
class AcceptanceRules:
    """What a paragraph must look like to count as an abstract."""

    min_chars: int = 100
    max_chars: int = 20_000
    min_letter_share: float = 0.5
    excerpt_chars: int = 200
    # More control characters and undecodable bytes than this, and a paragraph is binary data.
    max_binary_share: float = 0.1


def judge_records(records: pl.LazyFrame, rules: AcceptanceRules) -> pl.LazyFrame:
    """Repair each paragraph, add the display and matching texts, what was repaired, and a reason
    for each paragraph that is no abstract."""
    text = pl.col("text")
    n_chars = text.str.len_chars()
    # Letters counted as what is not a letter: far fewer matches to find in prose.
    letters = n_chars - text.str.count_matches(r"\P{L}")
    letter_share = letters / pl.max_horizontal(n_chars, 1)
    undecodable = text.str.count_matches("\ufffd", literal=True)
    # Counted in the paragraph as read: the stripped control characters and what stays undecodable.
    binary = pl.col("_controls") + undecodable
    binary_share = binary / pl.max_horizontal(pl.col("raw_text").str.len_chars(), 1)
    paragraph_reason = (
        pl.when(n_chars > rules.max_chars)
        .then(pl.format("too long for one abstract: {} characters (blank lines between abstracts missing?)", n_chars))
        .when(pl.col("_nul_run"))
        .then(pl.format("binary data: a run of NUL bytes ({} control or undecodable characters)", binary))
        .when(binary_share > rules.max_binary_share)
        .then(
            pl.format(
                "binary data: {}% of characters are control bytes or undecodable",
                (binary_share * 100).round(0).cast(pl.Int32),
            )
        )
        .when(undecodable > 0)
        .then(pl.format("undecodable bytes: {} characters could not be decoded", undecodable))
        .when(n_chars < rules.min_chars)
        .then(pl.format("too short for an abstract: {} characters", n_chars))
        .when(letter_share < rules.min_letter_share)
        .then(pl.format("not prose: only {}% of characters are letters", (letter_share * 100).round(0).cast(pl.Int32)))
    )
    accepted = pl.col("reject_reason").is_null()
    # A rejected paragraph that held control bytes shows them as U+FFFD: an excerpt is for people and
    # for any client to display, and shows why.
    shown = only_where(
        ~accepted & (pl.col("_controls") > 0),
        pl.col("raw_text"),
        lambda raw: clean_text(raw).str.replace_all(CONTROL_CHARACTERS, "\ufffd"),
        otherwise=text,
    )
    return (
        repair_paragraphs(records)
        .with_columns(reject_reason=pl.coalesce(pl.col("reject_reason"), paragraph_reason))
        .with_columns(
            excerpt=shown.str.slice(0, rules.excerpt_chars),
            # Rejected paragraphs keep an excerpt only: a multi-megabyte blob has no place in the warehouse.
            # The paragraph as read keeps its line breaks, entities and tags, not its control bytes.
            raw_text=pl.when(accepted).then(pl.col("_without_controls")),
            text=pl.when(accepted).then(text),
            repairs=pl.when(accepted).then(pl.col("repairs")),
        )
        .with_columns(normalized_text=normalized_text(pl.col("text")))
        .drop("_controls", "_nul_run", "_without_controls")
    )


def repair_paragraphs(records: pl.LazyFrame) -> pl.LazyFrame:
    """``text``: ``raw_text`` without stray control characters, HTML/XML entities decoded, tags
    stripped, lines joined; ``repairs`` names what changed it (null when nothing did). Each repair
    runs only on the rows that a quick scan says need it. Also ``_controls`` (how many control
    characters ``raw_text`` holds), ``_nul_run`` and ``_without_controls`` for judging."""
    raw, has_controls = pl.col("raw_text"), pl.col("_has_controls")
    kept, decoded, stripped = pl.col("_without_controls"), pl.col("_decoded"), pl.col("_stripped")
    repaired = {
        REPAIRS[0]: pl.col("_entities") & (decoded != kept),
        REPAIRS[1]: stripped != decoded,
        REPAIRS[2]: has_controls,
    }
    if READ_REPAIR in records.collect_schema():
        repaired[REPAIRS[3]] = pl.col(READ_REPAIR).is_not_null()
    repairs = pl.concat_str(
        [pl.when(done).then(pl.lit(name)) for name, done in repaired.items()], separator=",", ignore_nulls=True
    )
    return (
        records.with_columns(
            _has_controls=raw.str.contains(CONTROL_CHARACTERS), _entities=raw.str.contains(ENTITY_CANDIDATE)
        )
        .with_columns(
            _controls=rows_where(has_controls, raw).str.count_matches(CONTROL_CHARACTERS).fill_null(0),
            _nul_run=rows_where(has_controls, raw).str.contains(_NUL_RUN, literal=True).fill_null(False),
            _without_controls=only_where(has_controls, raw, strip_controls),
        )
        .with_columns(_decoded=only_where(pl.col("_entities"), kept, repair_entities))
        .with_columns(_stripped=only_where(decoded.str.contains(TAG_CANDIDATE), decoded, strip_tag_markup))
        .with_columns(text=clean_text(stripped), repairs=repairs)
        .with_columns(repairs=pl.when(pl.col("repairs") != "").then("repairs"))
        .drop("_has_controls", "_entities", "_decoded", "_stripped")
    )
