"""Stage 4, quality: what must hold of every table, checked on every run.

``suites`` declares the Great Expectations suites, ``expected_schemas`` the columns each table
must have, ``gx`` runs Great Expectations (imported lazily, on the other core: ``validation``);
``check_failures`` explains a failed check, ``check_history`` records every evaluation.

Hands on: the results the blocking Dagster asset checks report, and ``raw.check_evaluations``.
"""
