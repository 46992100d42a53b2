"""dbt's cross-database macros that the models call, rendered as dbt's defaults and dbt-duckdb's
render them on DuckDB."""


def hash(field: str) -> str:
    return f"md5(cast({field} as varchar))"


def listagg(measure: str, delimiter_text: str = "','", order_by_clause: str = "", limit_num=None) -> str:
    return f"string_agg({measure}, {delimiter_text} {order_by_clause or ''})"


def position(substring_text: str, string_text: str) -> str:
    return f"position({substring_text} in {string_text})"
