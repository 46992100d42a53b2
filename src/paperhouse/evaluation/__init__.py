"""Evaluation and benchmarks: never imported by a run (import-linter holds it to that).

``dedup`` and ``gold_terms`` score against the gold sets in ``gold/``; ``real_lists`` (with
``real_data`` and ``real_measures``) against the real lists of ``../shared/realdata``; ``bench``
(with ``bench_methods``, ``bench_report``) times the pipeline beside baselines on synthetic
corpora (``synth``, ``variants``). ``cli`` holds their commands (`paperhouse eval-*`, `bench`).
"""
