import shutil
from pathlib import Path

import pytest
from corpus import SEEDS


@pytest.fixture
def seeds_copy(tmp_path: Path) -> Path:
    """A private copy of the bundled seeds that a test may add files to."""
    target = tmp_path / "seeds"
    shutil.copytree(SEEDS, target)
    return target
