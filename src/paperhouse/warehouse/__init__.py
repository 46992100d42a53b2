"""The DuckDB files: connections and Arrow hand-off (``database``), the one-run-at-a-time lock
(``locking``) and the atomic publish of the build database as the warehouse (``publishing``).

Hands on: a build database the stages write into, and the published file readers open.
"""
