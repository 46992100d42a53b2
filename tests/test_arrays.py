import numpy as np
import polars as pl
import pytest

from paperhouse.common.arrays import ColumnBuffer, FirstSeenNumbers, dense_codes, slices, sorted_unique, stable_argsort


@pytest.mark.parametrize("size", [0, 1, 2, 1000])
def test_sorted_unique_is_numpys_unique(size):
    values = np.random.default_rng(size).integers(0, 50, size, dtype=np.uint64)
    assert np.array_equal(sorted_unique(values), np.unique(values))
    assert sorted_unique(values).dtype == values.dtype


@pytest.mark.parametrize("size", [0, 1, 2, 1000])
def test_stable_argsort_is_numpys_stable_argsort(size):
    values = np.random.default_rng(size).integers(0, 50, size, dtype=np.uint64)  # many equal values
    assert np.array_equal(stable_argsort(values), np.argsort(values, kind="stable"))


@pytest.mark.parametrize("size", [0, 1, 2, 1000])
@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_dense_codes_are_numpys_unique_and_inverse(size, dtype):
    values = np.random.default_rng(size).integers(0, 2**40, size).astype(dtype) // (2**34)  # repeats, gaps
    distinct, codes = dense_codes(values)
    expected_distinct, expected_codes = np.unique(values, return_inverse=True)
    assert np.array_equal(distinct, expected_distinct) and distinct.dtype == values.dtype
    assert np.array_equal(codes, expected_codes)


def test_first_seen_numbers_agree_across_batches_in_order_of_first_sight():
    values = np.random.default_rng(0).integers(0, 40, 1000)
    expected: dict[int, int] = {}
    for value in values.tolist():
        expected.setdefault(value, len(expected))
    numbers = FirstSeenNumbers(pl.Int64)
    batches = [numbers.number(pl.Series(batch)) for batch in np.array_split(values, 7)]  # a value may recur later
    assert pl.concat(batches).to_list() == [expected[value] for value in values.tolist()]
    assert batches[0].dtype == pl.UInt32
    assert numbers.values.to_list() == list(expected)
    assert numbers.number(pl.Series([], dtype=pl.Int64)).len() == 0 and numbers.values.len() == len(expected)


def test_first_seen_strings_do_not_keep_their_batches_alive():
    def rss() -> int:
        return int(open("/proc/self/statm").read().split()[1]) * 4096

    numbers, before = FirstSeenNumbers(pl.String), rss()
    for batch in range(20):  # each batch ~30 MB of text, of which ten values are new
        numbers.number(pl.Series([f"a token written in batch {batch}, copy {copy % 10}" for copy in range(500_000)]))
    assert numbers.values.len() == 200 and rss() - before < 150_000_000, f"{(rss() - before) / 2**20:.0f} MB"


@pytest.mark.parametrize("height", [0, 1, 6, 7])
def test_slices_cover_every_row_in_order_and_empty_data_is_one_typed_slice(height):
    frame = pl.DataFrame({"n": range(height)}, schema={"n": pl.UInt32})
    parts = slices(frame, 3)
    expected = {0: [0], 1: [1], 6: [3, 3], 7: [3, 3, 1]}[height]
    assert [part.height for part in parts] == expected
    assert pl.concat(parts).equals(frame)  # the type too, when there are no rows
    assert [len(part) for part in slices(frame["n"], 3)] == [part.height for part in parts]


def test_column_buffer_appends_rows_in_order_cast_to_its_columns():
    buffer = ColumnBuffer(10, {"paper": np.uint32, "weight": np.float64})
    assert len(buffer["paper"]) == 0 and buffer["paper"].dtype == np.uint32
    buffer.append({"paper": np.array([3, 4], dtype=np.uint64), "weight": np.array([0.5, 0.25])})
    buffer.append({"weight": np.array([1.0]), "paper": np.array([7])})  # columns by name, in any order
    assert buffer.rows == 3
    assert buffer["paper"].tolist() == [3, 4, 7] and buffer["paper"].dtype == np.uint32
    assert buffer["weight"].tolist() == [0.5, 0.25, 1.0]


def test_a_column_buffers_unwritten_capacity_is_not_resident():
    def rss() -> int:
        return int(open("/proc/self/statm").read().split()[1]) * 4096

    before = rss()
    buffer = ColumnBuffer(100_000_000, {"weight": np.float64})  # 0.8 GB of address space
    buffer.append({"weight": np.ones(1000)})
    assert rss() - before < 50_000_000 and buffer["weight"].sum() == 1000
