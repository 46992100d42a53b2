"""The Spark engine's session: its master from configuration, offline and quiet.

``PAPERHOUSE_SPARK_MASTER`` (or the ``master`` argument) names the cluster: ``local[2]`` by default,
``local-cluster[2,1,1024]`` for several executor processes on one machine, ``spark://host:7077``,
``yarn`` or ``k8s://...`` in production. Executors run this interpreter (``PYSPARK_PYTHON``), so
they import the same paperhouse, Polars and NumPy as the driver.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from paperhouse.settings import settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Shuffles of a few thousand to a few million rows: Spark's default of 200 partitions would make
# most tasks empty on the machines this runs on; a cluster sets its own.
DEFAULT_SHUFFLE_PARTITIONS = 8


def spark_master(master: str | None = None) -> str:
    return master or settings().spark_master


def spark_session(
    master: str | None = None,
    warehouse_dir: Path | None = None,
    shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS,
    driver_memory: str = "4g",
) -> SparkSession:
    """The process's SparkSession, started on first use (a JVM: about 4 s on ``local[2]``)."""
    from pyspark.sql import SparkSession

    # The workers must run this interpreter: the system's python3 has no pyarrow or paperhouse.
    # pyspark's SparkContext takes the workers' interpreter from this variable only (not from
    # spark.pyspark.python, which only spark-submit reads): the one variable paperhouse sets.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(spark_master(master))
        .appName("paperhouse")
        .config("spark.ui.enabled", "false")
        # The progress bar writes to the console without a newline, among the run's own output.
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.memory", driver_memory)
    )
    if warehouse_dir is not None:
        builder = builder.config("spark.sql.warehouse.dir", str(warehouse_dir))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
