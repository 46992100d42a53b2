"""The parts of dbt's Jinja context that the models use beyond sqlfluff's dbt builtins (ref, source,
config, var): ``adapter`` and dbt's cross-database macros (``dbt.hash``...). sqlfluff's jinja
templater renders the models with them as a DuckDB build would (``dbt_project/.sqlfluff`` names this
library); dbt itself never reads this folder. For linting only: what they render is only parsed.
"""
