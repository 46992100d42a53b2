"""Two published warehouses of one folder, the default engine's and the Spark engine's, compared
mart by mart (tests/test_spark_engine.py): exact where the
step is exact (ingest, dedup, paper ids, terms); where a step is approximate the tolerance is stated
below and checked."""

from pathlib import Path

import duckdb

# Marts compared row for row on these columns (the keys and what the exact steps decide).
EXACT = {
    "papers": ["paper_id", "title", "abstract", "venue", "year", "n_sources", "word_count", "canonical_record_no"],
    "paper_sources": ["source_file", "record_no", "paper_id", "match_kind"],
    "duplicate_groups": None,  # every column but timestamps
    "paper_id_aliases": ["alias_id", "paper_id"],
    "rejected_records": None,
    "terms": ["term_id", "term", "kind", "n_words", "doc_freq", "key_papers"],
    "paper_terms": ["paper_id", "term_id", "rank", "occurrences"],
    "paper_keyphrases": ["paper_id", "rank", "keyphrase", "term_id"],
    "venue_summary": ["venue", "year", "papers", "records", "duplicates", "rejected_records", "named_methods"],
}


def mart_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str, str]]:
    return con.execute(
        "select column_name, data_type, is_nullable from information_schema.columns"
        " where table_schema = 'marts' and table_name = ? order by ordinal_position",
        [table],
    ).fetchall()


def mart_rows(con: duckdb.DuckDBPyConnection, table: str, columns: list[str] | None) -> list[tuple]:
    if columns is None:
        columns = [c for c, dtype, _ in mart_columns(con, table) if not dtype.startswith("TIMESTAMP")]
    select = ", ".join(f'"{c}"' for c in columns)
    return con.execute(f"select {select} from marts.{table} order by all").fetchall()


def compare_engines(duckdb_build: Path, spark_build: Path) -> None:
    with (
        duckdb.connect(str(duckdb_build), read_only=True) as local,
        duckdb.connect(str(spark_build), read_only=True) as spark,
    ):
        tables = [
            t
            for (t,) in local.execute(
                "select table_name from information_schema.tables where table_schema = 'marts' order by 1"
            ).fetchall()
        ]
        for table in tables:
            # The contract: the same columns, types and nullability.
            assert mart_columns(spark, table) == mart_columns(local, table), table
        for table, columns in EXACT.items():
            assert mart_rows(spark, table, columns) == mart_rows(local, table, columns), table
        # Topics: fitted on the same sample by the same model, applied per partition on Spark.
        # The number of topics and each paper's primary topic agree but for near-ties: at most 2%
        # of the papers may change their primary topic.
        topics = "select count(*) from marts.topics where level = 1"
        assert spark.execute(topics).fetchone() == local.execute(topics).fetchone()
        primary = "select paper_id, primary_topic_id from marts.papers"
        local_primary = dict(local.execute(primary).fetchall())
        spark_primary = dict(spark.execute(primary).fetchall())
        assert spark_primary.keys() == local_primary.keys()
        moved = sum(spark_primary[p] != t for p, t in local_primary.items())
        assert moved <= 0.02 * len(local_primary), f"{moved} of {len(local_primary)} papers changed topic"
        # Similar papers: at least 90% of each engine's (paper, neighbour) pairs are the other's.
        pairs = "select paper_id, similar_paper_id from marts.similar_papers"
        local_pairs = set(local.execute(pairs).fetchall())
        spark_pairs = set(spark.execute(pairs).fetchall())
        assert len(local_pairs & spark_pairs) >= 0.9 * len(local_pairs)
