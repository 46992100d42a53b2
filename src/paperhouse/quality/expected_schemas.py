"""The columns and types each checked table must have, in DuckDB's type names.

The marts' are read from the dbt YAML that enforces their contracts, so the two can never
disagree; the raw tables' come from the Python code that writes them. Either engine describes
the table it finds in the same words (``spark.tables.duckdb_type_name`` on Spark), so one
schema expectation serves both.
"""

from __future__ import annotations

from functools import cache

import yaml

from paperhouse.dedup.papers import ASSIGNMENT_SCHEMA
from paperhouse.dedup.registry import REGISTRY_SCHEMA
from paperhouse.ingest.reading import SOURCE_RECORD_SCHEMA
from paperhouse.nlp.keyphrases.ranking import KEYPHRASE_SCHEMA
from paperhouse.nlp.names import NAME_SCHEMA
from paperhouse.nlp.similar import SIMILAR_SCHEMA
from paperhouse.nlp.terms.extraction import ALIAS_SCHEMA, PAPER_TERM_SCHEMA, TERM_SCHEMA
from paperhouse.nlp.terms.keywords import KEYWORD_TERM_SCHEMA
from paperhouse.nlp.topics.ids import REGISTRY_SCHEMA as TOPIC_ID_REGISTRY_SCHEMA
from paperhouse.nlp.topics.model import PAPER_TOPIC_SCHEMA, TOPIC_SCHEMA, TOPIC_TERM_SCHEMA
from paperhouse.quality.check_history import CHECK_EVALUATION_SCHEMA
from paperhouse.settings import DBT_PROJECT_DIR
from paperhouse.warehouse.database import duckdb_type

MARTS_YAML = DBT_PROJECT_DIR / "models" / "marts" / "_marts__models.yml"
# Every file of the marts' model properties: the main one and those of one subject (_trends__models.yml).
MART_YAMLS = tuple(sorted(MARTS_YAML.parent.glob("_*__models.yml")))


def _duckdb_types(schema: dict) -> dict[str, str]:
    return {column: duckdb_type(dtype) for column, dtype in schema.items()}


RAW_SCHEMAS: dict[str, dict[str, str]] = {
    "raw.source_records": _duckdb_types(SOURCE_RECORD_SCHEMA),
    "raw.paper_assignments": _duckdb_types(ASSIGNMENT_SCHEMA),
    "raw.paper_id_registry": _duckdb_types(REGISTRY_SCHEMA),
    "raw.terms": _duckdb_types(TERM_SCHEMA),
    "raw.paper_terms": _duckdb_types(PAPER_TERM_SCHEMA),
    "raw.paper_keyphrases": _duckdb_types(KEYPHRASE_SCHEMA),
    "raw.term_aliases": _duckdb_types(ALIAS_SCHEMA),
    "raw.keyword_terms": _duckdb_types(KEYWORD_TERM_SCHEMA),
    "raw.paper_names": _duckdb_types(NAME_SCHEMA),
    "raw.topics": _duckdb_types(TOPIC_SCHEMA),
    "raw.similar_papers": _duckdb_types(SIMILAR_SCHEMA),
    "raw.topic_paper_weights": _duckdb_types(PAPER_TOPIC_SCHEMA),
    "raw.topic_term_weights": _duckdb_types(TOPIC_TERM_SCHEMA),
    "raw.topic_id_registry": _duckdb_types(TOPIC_ID_REGISTRY_SCHEMA),
    "raw.check_evaluations": _duckdb_types(CHECK_EVALUATION_SCHEMA),
}


@cache
def mart_schemas() -> dict[str, dict[str, str]]:
    """``marts.<model>`` -> column -> DuckDB type, from the dbt contracts."""
    models = [model for path in MART_YAMLS for model in yaml.safe_load(path.read_text())["models"]]
    return {
        f"marts.{model['name']}": {column["name"]: _declared_type(column) for column in model["columns"]}
        for model in models
    }


# The contracts name types both engines know; DuckDB's information_schema names some by their alias.
# `string` is Spark's unbounded text type (its `varchar` needs a length); DuckDB makes it VARCHAR.
DUCKDB_TYPE_ALIASES = {"STRING": "VARCHAR"}


def _declared_type(column: dict) -> str:
    not_null = any(constraint["type"] == "not_null" for constraint in column.get("constraints", ()))
    declared = column["data_type"].upper()
    return DUCKDB_TYPE_ALIASES.get(declared, declared) + (" NOT NULL" if not_null else "")


def expected_schema(table: str) -> dict[str, str]:
    """Column -> declared type (`` NOT NULL`` included) of ``raw.<t>`` or ``marts.<t>``."""
    return RAW_SCHEMAS.get(table) or mart_schemas()[table]
