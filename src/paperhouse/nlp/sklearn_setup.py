"""scikit-learn as paperhouse runs it: imported one thread at a time, NMF fitted to one stopping rule."""

from __future__ import annotations

import threading

# Stop when an iteration improves the fit by under 0.1% of the first: the top terms and primary
# topics have long settled by then (measured on the bundled seeds), and it makes fits 2-3x faster.
NMF_TOLERANCE = 1e-3
NMF_MAX_ITER = 300

_SKLEARN_IMPORT = threading.Lock()


def import_sklearn() -> None:
    """Import the parts of scikit-learn paperhouse uses (1.2 s, on first use), one thread at a time:
    the topic model and the neighbour search run side by side, and two threads importing
    scikit-learn at once fail on a partially initialised ``sklearn.base``."""
    with _SKLEARN_IMPORT:
        import sklearn.cluster
        import sklearn.decomposition  # noqa: F401
