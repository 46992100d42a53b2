import os
import shutil
from pathlib import Path

import pytest
from corpus import SEEDS
from hypothesis import HealthCheck, settings
from warehouses import SHARED_BUILDS, Build, fingerprint, shared_build, start_shared_build

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

# Every JVM the tests start (in this process, its builders and subprocesses) takes the suite's
# Spark settings (tests/spark_conf/spark-defaults.conf), unless the caller brings its own.
os.environ.setdefault("SPARK_CONF_DIR", str(Path(__file__).with_name("spark_conf")))


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


@pytest.fixture(scope="session", autouse=True)
def shared_builds_started(request, tmp_path_factory) -> None:
    """The shared builds the session's tests ask for start at once, in processes of their own,
    while the workers run other tests (tests/warehouses.py); a test waits only for what it reads."""
    for name in SHARED_BUILDS:
        if any(name in item.fixturenames for item in request.session.items):
            start_shared_build(tmp_path_factory, name)


def _read_only(build: Build, name: str):
    before = fingerprint(build)
    yield build
    assert fingerprint(build) == before, f"a test wrote into the shared build {name}: build your own"


@pytest.fixture(scope="session")
def seeds_build(tmp_path_factory) -> Build:
    """`paperhouse run` on the bundled seeds, as a user runs it: shared, read only."""
    yield from _read_only(shared_build(tmp_path_factory, "seeds_build"), "seeds_build")


@pytest.fixture(scope="session")
def seeds_and_export_build(tmp_path_factory) -> Build:
    """The bundled seeds with an ICLR 2025 export beside them (titles, keywords, duplicates of the
    seeds, a row without an abstract), built in a Python process (no `paperhouse` command): shared,
    read only."""
    yield from _read_only(shared_build(tmp_path_factory, "seeds_and_export_build"), "seeds_and_export_build")


@pytest.fixture(scope="session")
def engines_duckdb_build(tmp_path_factory) -> Build:
    """The engines' folder (tests/warehouses.py: the seeds, an export, a labelled synthetic list and
    the dev lists) built by the default engine, measured by the bench: shared, read only."""
    yield from _read_only(shared_build(tmp_path_factory, "engines_duckdb_build"), "engines_duckdb_build")


@pytest.fixture(scope="session")
def engines_spark_build(tmp_path_factory) -> Build:
    """The same folder built by `paperhouse run --engine spark` (``local[2]``), measured by the bench,
    in a process of its own (its Spark session has this build's warehouse folder, ``spark-warehouse``
    beside the warehouse file): the suite's one whole Spark build, shared by the engine comparison,
    the bench's Spark figures, the dbt-spark tests and dbt's unit tests on Spark; read only."""
    yield from _read_only(shared_build(tmp_path_factory, "engines_spark_build"), "engines_spark_build")


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
WHOLE_BUILDS = set(SHARED_BUILDS)
SPARK_FIXTURES = {"spark", "engines_spark_build"}


def pytest_itemcollected(item):
    if WHOLE_BUILDS & set(item.fixturenames):
        item.add_marker(pytest.mark.slow)
    if SPARK_FIXTURES & set(item.fixturenames):
        item.add_marker(pytest.mark.spark)


def pytest_collection_modifyitems(config, items):
    """Files in the order pytest-xdist hands them out (`make test`: --dist loadfile
    --no-loadscope-reorder), the longest first so that the short ones fill in behind them: whole
    Spark runs of their own, then other whole builds and the Spark session's files, then the rest,
    and last the readers of the shared Spark build, which is made beside all of them from the start
    of the session (a worker that reached them earlier would wait for it, idle)."""

    def tier(item) -> int:
        slow, spark = item.get_closest_marker("slow"), item.get_closest_marker("spark")
        return 2 if slow and spark else int(bool(slow or spark))

    tiers: dict[str, int] = {}
    for item in items:
        tiers[item.module.__name__] = max(tiers.get(item.module.__name__, 0), tier(item))
    for item in items:  # a file that reads the shared Spark build waits for it whatever else it does
        if "engines_spark_build" in item.fixturenames:
            tiers[item.module.__name__] = -1
    items.sort(key=lambda item: -tiers[item.module.__name__])
