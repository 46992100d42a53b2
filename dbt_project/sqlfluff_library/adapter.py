"""``adapter`` as the jinja templater sees it: DuckDB's quoting, and dispatch to the ``default__``
implementation of a project macro (the DuckDB one, see dbt_project/macros/portable_sql.sql)."""

from jinja2 import pass_context


def quote(identifier: str) -> str:
    return f'"{identifier}"'


@pass_context
def dispatch(context, macro_name: str, macro_namespace: str | None = None):
    return context[f"default__{macro_name}"]
