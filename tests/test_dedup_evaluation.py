"""Dedup quality on the evaluation set: these fail when a variant kind or a hard negative regresses."""

import polars as pl
import pytest

from paperhouse.evaluation.dedup import (
    EVAL_SET,
    HARD_NEGATIVE_KINDS,
    MIN_PRECISION,
    MIN_RECALL_ABOVE_HALF_RETENTION,
    build_eval_set,
    evaluate,
    load_eval_set,
)
from paperhouse.evaluation.variants import VARIANTS


@pytest.fixture(scope="module")
def report():
    return evaluate(load_eval_set())


def test_committed_eval_set_is_what_the_script_generates():
    assert load_eval_set().equals(build_eval_set()), f"regenerate with `paperhouse eval-dedup --write-set` ({EVAL_SET})"


def test_targets_are_met(report):
    assert report.pairwise_precision >= MIN_PRECISION
    assert report.hard_negatives_merged == 0
    assert report.recall_above_half_retention >= MIN_RECALL_ABOVE_HALF_RETENTION
    assert report.meets_targets


@pytest.mark.parametrize("kind", [*VARIANTS, "stock_phrases_appended"])
def test_every_variant_kind_is_merged_with_its_original(report, kind):
    row = report.by_kind.row(by_predicate=pl.col("kind") == kind, named=True)
    assert row["recall"] >= 0.95 and row["precision"] == 1.0, row


@pytest.mark.parametrize("kind", HARD_NEGATIVE_KINDS)
def test_no_hard_negative_is_merged(report, kind):
    row = report.by_kind.row(by_predicate=pl.col("kind") == kind, named=True)
    assert row["records"] > 0 and row["precision"] == 1.0, row


def test_report_measures_how_far_below_half_retention_merges_still_happen(report):
    below = report.by_retention.filter(report.by_retention["from"] < 0.5)
    assert below["revisions"].sum() > 0  # the set reaches below the target, so the report can show the curve
