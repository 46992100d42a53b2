import os
import shutil
import tempfile
from pathlib import Path

import pytest
from corpus import SEEDS
from hypothesis import HealthCheck, settings
from warehouses import Build, cli_build, fingerprint, in_process_build, seeds_with_an_export

from paperhouse.settings import DAGSTER_YAML

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
    """Runs the tests make are recorded in a Dagster instance of the test run's own (the project's
    dagster.yaml, in a temporary folder; one per pytest-xdist worker), never in the one `make ui`
    shows, and two workers never share one SQLite run storage."""
    home = Path(tempfile.mkdtemp(prefix="paperhouse-tests-dagster-"))
    (home / "dagster.yaml").symlink_to(DAGSTER_YAML)
    os.environ["DAGSTER_HOME"] = str(home)


@pytest.fixture
def seeds_copy(tmp_path: Path) -> Path:
    """A private copy of the bundled seeds that a test may add files to."""
    target = tmp_path / "seeds"
    shutil.copytree(SEEDS, target)
    return target


@pytest.fixture(scope="session")
def seeds_build(tmp_path_factory) -> Build:
    """`paperhouse run` on the bundled seeds, as a user runs it: shared, read only."""
    build = cli_build(SEEDS, tmp_path_factory.mktemp("seeds_build") / "paperhouse.duckdb")
    before = fingerprint(build)
    yield build
    assert fingerprint(build) == before, "a test wrote into the shared seeds build: build your own"


@pytest.fixture(scope="session")
def seeds_and_export_build(tmp_path_factory) -> Build:
    """The bundled seeds with an ICLR 2025 export beside them (titles, keywords, duplicates of the
    seeds, a row without an abstract), built in the test process: shared, read only."""
    folder = tmp_path_factory.mktemp("seeds_and_export_build")
    build = in_process_build(seeds_with_an_export(folder), folder / "paperhouse.duckdb")
    before = fingerprint(build)
    yield build
    assert fingerprint(build) == before, "a test wrote into the shared seeds-and-export build: build your own"


@pytest.fixture(scope="session")
def spark():
    """The one Spark session of the test run (a JVM takes seconds to start): local[2]."""
    from paperhouse.engines.spark.session import spark_session

    session = spark_session("local[2]", shuffle_partitions=4)
    yield session
    session.stop()


# Tests that ask for a whole build are slow (left out of `make check`) whatever their own marks say.
# Under pytest-xdist (`make test`: `-n 2 --dist loadgroup`) a file's tests stay on one worker, so
# its module fixtures (whole builds, most of them) are made once; the tests of the shared Spark
# session all run on one worker, so the run starts one JVM.
WHOLE_BUILDS = {"seeds_build", "seeds_and_export_build"}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        if WHOLE_BUILDS & set(item.fixturenames):
            item.add_marker(pytest.mark.slow)
        if "spark" in item.fixturenames:
            item.add_marker(pytest.mark.spark)
            item.add_marker(pytest.mark.xdist_group("spark"))
        else:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
