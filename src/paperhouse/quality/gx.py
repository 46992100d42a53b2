"""Great Expectations itself, for either engine: the library imported once, a batch validated,
its results read into ``Outcome``s, and a table's schema checked.

Great Expectations is imported lazily, on first validation: it costs seconds and hundreds of
MB, which definitions loading and the CLI's other commands should not pay.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import polars as pl

# The data source each validation adds to GX's context and deletes after it.
GX_DATA_SOURCE = "paperhouse"


@dataclass(frozen=True)
class Outcome:
    expectation: str
    column: str | None
    success: bool
    observed: Any


@dataclass(frozen=True)
class SuiteResult:
    suite: str
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return all(o.success for o in self.outcomes)

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.success]


@cache
def great_expectations():
    """Import Great Expectations and make one ephemeral context, once per process."""
    with _pyspark_connect_importable():
        import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )
    from great_expectations.execution_engine import pandas_execution_engine

    # GX fingerprints every frame smaller than this many bytes by hashing all its values, a batch
    # marker nothing here reads: 0.6 s of each validation of raw.paper_terms at 10^5 papers, a
    # third of it. This threshold is the only switch GX has for it.
    pandas_execution_engine.HASH_THRESHOLD = 0
    # Offline, and nothing to report: no usage analytics.
    config = DataContextConfig(store_backend_defaults=InMemoryStoreBackendDefaults(), analytics_enabled=False)
    context = gx.get_context(mode="ephemeral", project_config=config)
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return gx, context


@contextmanager
def _pyspark_connect_importable() -> Iterator[None]:
    """GX imports pyspark's Connect package when pyspark is installed (the ``spark`` extra). That
    package takes a process whose ``__main__`` never ran a file or module for a doctest run and ends
    it on import, with ``sys.exit(0)``: a worker spawned from ``python -m pytest`` or ``python -c``
    is such a process, and the suite worker died silently at its first task. An interactive
    session (``sys.ps1``) is what that check lets through instead; it is declared for the import only."""
    main = sys.modules["__main__"]
    stub_main = getattr(main, "__spec__", None) is None and not hasattr(main, "__file__") and not hasattr(sys, "ps1")
    if stub_main:
        sys.ps1 = ">>> "
    try:
        yield
    finally:
        if stub_main:
            del sys.ps1


# Makes, for one validation, the batch definition of a data source, and deletes the source after it.
BatchDefinitions = Callable[[Any], AbstractContextManager]


@contextmanager
def frame_batches(context) -> Iterator:
    """A batch definition of a pandas data source made for one validation and deleted after it. GX's
    execution engine keeps the last batch and every metric computed on it until the next
    validation (at 10^6 papers, 650 MB of the last part of ``raw.paper_terms``, held by the suite
    worker through the corpus step that follows, the run's peak); deleting the data source lets go
    of its engine, and so of them, through GX's public API (about 10 ms a validation)."""
    source = context.data_sources.add_pandas(GX_DATA_SOURCE)
    try:
        yield source.add_dataframe_asset("frames").add_batch_definition_whole_dataframe("frame")
    finally:
        batches = source.get_execution_engine().batch_manager
        batches.reset_batch_cache()
        batches.batch_data_cache.clear()
        context.data_sources.delete(GX_DATA_SOURCE)


def validate_frame(
    frame, expectations: list, batches: BatchDefinitions = frame_batches, result_format: str = "BASIC"
) -> list[Outcome]:
    """The expectations' outcomes over one frame: a pandas frame, or the engine's that ``batches`` serves.
    BASIC has all ``_observed`` reports (observed value, unexpected count and examples, missing
    values); SUMMARY would add value counts of the unexpected values, a fifth of the validation time.
    BOOLEAN_ONLY reports success alone, which says all of an expectation of each row that holds (no
    row unexpected)."""
    gx, context = great_expectations()
    suite = gx.ExpectationSuite(name="paperhouse", expectations=expectations)
    with batches(context) as batch_definition:
        result = batch_definition.get_batch(batch_parameters={"dataframe": frame}).validate(
            suite, result_format=result_format
        )
    return [
        Outcome(
            expectation=r.expectation_config.type,
            column=r.expectation_config.kwargs.get("column") or r.expectation_config.kwargs.get("column_list"),
            success=bool(r.success),
            observed=_observed(r.result),
        )
        for r in result.results
    ]


def _observed(result: dict) -> Any:
    if result.get("observed_value") is not None:
        return result["observed_value"]
    # GX's Spark engine counts the unexpected rows of an empty table as None (a sum of no rows).
    observed = {"unexpected_count": result.get("unexpected_count") or 0}
    if result.get("unexpected_count"):
        observed["examples"] = result.get("partial_unexpected_list", [])[:5]
    if result.get("partial_missing_list"):  # a set expectation: values that should be there and are not
        observed["missing"] = result["partial_missing_list"][:5]
    return observed


def validate_schema(actual_types: list[tuple[str, str]], expected: dict[str, str]) -> list[Outcome]:
    """Two expectations over the table's columns, one row each with its declared type (`` NOT NULL``
    included), against the expected schema. Metadata, not rows: a frame of a few dozen rows that
    either engine describes in DuckDB's type names, validated here in pandas so that a schema fails
    in the same words on both."""
    gx, _ = great_expectations()
    schema_frame = pl.DataFrame(
        {
            "column": [name for name, _ in actual_types],
            "column_type": [f"{name} {dtype}" for name, dtype in actual_types],
        },
        schema={"column": pl.String, "column_type": pl.String},
    ).to_pandas()
    # Two expectations for the whole schema, failures naming the column: one per column cost GX's
    # fixed ~25 ms each, over half of all validation time.
    return validate_frame(
        schema_frame,
        [
            gx.expectations.ExpectColumnDistinctValuesToEqualSet(column="column", value_set=list(expected)),
            gx.expectations.ExpectColumnValuesToBeInSet(
                column="column_type", value_set=[f"{column} {dtype}" for column, dtype in expected.items()]
            ),
        ],
    )
