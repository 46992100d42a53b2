import os
import shutil
from pathlib import Path

import pytest
from corpus import SEEDS
from hypothesis import HealthCheck, settings

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


@pytest.fixture
def seeds_copy(tmp_path: Path) -> Path:
    """A private copy of the bundled seeds that a test may add files to."""
    target = tmp_path / "seeds"
    shutil.copytree(SEEDS, target)
    return target
