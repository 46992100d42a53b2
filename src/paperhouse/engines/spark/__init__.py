"""The Spark engine's plain-Python side (no Dagster): the session, and the stages run as Spark jobs.

pyspark is imported only here, and only when the Spark engine is chosen (``docs/spark.md``).
"""
