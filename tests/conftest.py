import os
import shutil
from pathlib import Path

import pytest
from corpus import SEEDS
from hypothesis import HealthCheck, settings
from warehouses import (
    Build,
    built_once,
    cli_build,
    fingerprint,
    finished_build,
    in_process_build,
    seeds_with_an_export,
)

from paperhouse.settings import variable

# Property-based tests: the default test run tries a few examples, derandomised, so CI is
# repeatable; `make fuzz` (HYPOTHESIS_PROFILE=fuzz) tries many, at random, and keeps failing
# examples in .hypothesis/ to try first next time. No deadline: a loaded machine is no failure.
settings.register_profile(
    "default_run", deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
settings.register_profile(
    "fuzz",
    deadline=None,
    max_examples=int(os.environ.get("PAPERHOUSE_FUZZ_EXAMPLES", "40")),
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)
FUZZING = os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"
settings.load_profile("fuzz" if FUZZING else "default_run")


def pytest_configure(config):
    """Runs that tests make keep their Dagster run history in memory (an ephemeral instance:
    ``orchestration.runner`` uses one when ``DAGSTER_HOME`` is unset), never in the instance `make
    ui` shows, and no two pytest-xdist workers share one SQLite run storage. The tests of the
    instance itself (test_instance_storage, test_reliability, test_bi, test_ui_browser, the
    bench's) give their runs a ``DAGSTER_HOME`` of their own."""
    os.environ.pop("DAGSTER_HOME", None)


@pytest.fixture
def seeds_copy(tmp_path: Path) -> Path:
    """A private copy of the bundled seeds that a test may add files to."""
    target = tmp_path / "seeds"
    shutil.copytree(SEEDS, target)
    return target


@pytest.fixture(scope="session")
def seeds_build(tmp_path_factory) -> Build:
    """`paperhouse run` on the bundled seeds, as a user runs it: shared, read only."""
    folder = built_once(tmp_path_factory, "seeds_build", lambda folder: cli_build(SEEDS, folder / "paperhouse.duckdb"))
    build = finished_build(folder / "paperhouse.duckdb")
    before = fingerprint(build)
    yield build
    assert fingerprint(build) == before, "a test wrote into the shared seeds build: build your own"


@pytest.fixture(scope="session")
def seeds_and_export_build(tmp_path_factory) -> Build:
    """The bundled seeds with an ICLR 2025 export beside them (titles, keywords, duplicates of the
    seeds, a row without an abstract), built in the test process: shared, read only."""
    folder = built_once(
        tmp_path_factory,
        "seeds_and_export_build",
        lambda folder: in_process_build(seeds_with_an_export(folder), folder / "paperhouse.duckdb"),
    )
    build = finished_build(folder / "paperhouse.duckdb")
    before = fingerprint(build)
    yield build
    assert fingerprint(build) == before, "a test wrote into the shared seeds-and-export build: build your own"


@pytest.fixture(scope="session")
def spark_seeds_and_export_build(tmp_path_factory) -> Build:
    """`paperhouse run --engine spark` (``local[2]``) on the folder of ``seeds_and_export_build``, in a
    process of its own (its Spark session has this build's warehouse folder, ``spark-warehouse``
    beside the warehouse file): shared by the engine comparison and the dbt-spark tests, read only."""

    def build(folder: Path) -> None:
        spark_warehouse = folder / "spark-warehouse"
        env = os.environ | {variable("spark_warehouse"): str(spark_warehouse), variable("spark_master"): "local[2]"}
        cli_build(seeds_with_an_export(folder), folder / "paperhouse.duckdb", "--engine", "spark", env=env)

    folder = built_once(tmp_path_factory, "spark_seeds_and_export_build", build)
    build_ = finished_build(folder / "paperhouse.duckdb")
    before = fingerprint(build_)
    yield build_
    assert fingerprint(build_) == before, "a test wrote into the shared Spark build: build your own"


@pytest.fixture(scope="session")
def spark():
    """The one Spark session of the test process (each pytest-xdist worker is one; a JVM takes
    seconds to start): local[2], shared by every module that asks for it."""
    from paperhouse.engines.spark.session import spark_session

    session = spark_session("local[2]", shuffle_partitions=4)
    yield session
    session.stop()


# Tests that ask for a whole build are slow (left out of `make check`) whatever their own marks say;
# tests that ask for the Spark session need the JVM.
WHOLE_BUILDS = {"seeds_build", "seeds_and_export_build", "spark_seeds_and_export_build"}
SPARK_FIXTURES = {"spark", "spark_seeds_and_export_build"}


def pytest_itemcollected(item):
    if WHOLE_BUILDS & set(item.fixturenames):
        item.add_marker(pytest.mark.slow)
    if SPARK_FIXTURES & set(item.fixturenames):
        item.add_marker(pytest.mark.spark)


def pytest_collection_modifyitems(config, items):
    """The files of whole Spark builds first, then those of other whole builds, then the rest, each
    in its own order: pytest-xdist hands files out in this order (`make test`: --dist loadfile), so
    the longest start first and the short ones fill in behind them."""

    def weight(item) -> int:
        return (
            2
            if item.get_closest_marker("slow") and item.get_closest_marker("spark")
            else int(bool(item.get_closest_marker("slow")))
        )

    heaviest: dict[str, int] = {}
    for item in items:
        heaviest[item.module.__name__] = max(heaviest.get(item.module.__name__, 0), weight(item))
    items.sort(key=lambda item: -heaviest[item.module.__name__])
