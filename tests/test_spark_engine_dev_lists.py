"""`paperhouse run` on the dev lists of the real data (tests/engine_comparison.py), by both engines:
the same answers on thousands of real abstracts. A file of its own, so that pytest-xdist runs it
beside tests/test_spark_engine.py rather than after it."""

import pytest
from engine_comparison import compare_engines, engine_build

from paperhouse.evaluation import real_data
from paperhouse.settings import variable

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def test_both_engines_agree_on_the_dev_lists(tmp_path):
    lists = real_data.realdata_dir() / "conferences" / "inputs"
    if not lists.is_dir():
        pytest.skip(f"no real data at {lists} (set {variable('realdata')})")
    compare_engines(engine_build(tmp_path, lists, "duckdb"), engine_build(tmp_path, lists, "spark"))
