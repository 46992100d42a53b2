"""NumPy helpers shared by the stages that work on integer codes (dedup, terms)."""

from __future__ import annotations

import numpy as np


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending.

    NumPy 2.4's ``np.unique`` hashes integers before sorting and runs 30-40x slower than one sort
    on millions of distinct 64-bit values (5.4 s against 0.14 s for 3.6M here).
    """
    ordered = np.sort(values)
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(ordered) else ordered
