"""The DuckDB files: connections and Arrow hand-off (``database``), the one-run-at-a-time lock
(``locking``), the atomic publish of the build database as the warehouse (``publishing``) and
whether a run would publish what is there already (``up_to_date``).

Hands on: a build database the stages write into, and the published file readers open.
"""
