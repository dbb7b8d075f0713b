"""One local Spark session for the whole Spark test set: starting a JVM costs 4-9 s.

``local[2]`` (the machine has two cores) and two shuffle partitions: the frames are tiny, and
every shuffle partition is a task to schedule. The session starts only when a test asks for it,
so the evaluator's plain-Python tests never pay for it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from spark_jobs.session import spark_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = spark_session("lagwatch-tests", master="local[2]")
    session.conf.set("spark.sql.shuffle.partitions", "2")
    yield session
    session.stop()
