"""The session builder: configuration, reuse, and where the master comes from."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from spark_jobs.session import resolve_master, spark_session


def test_the_active_session_is_reused(spark: SparkSession) -> None:
    assert spark_session("another-job") is spark


def test_small_machine_configuration(spark: SparkSession) -> None:
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.master") == "local[2]"
    assert conf.get("spark.ui.enabled") == "false"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"


def test_master_argument_then_environment_then_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_MASTER", raising=False)
    assert resolve_master() == "local[*]"
    monkeypatch.setenv("SPARK_MASTER", "spark://spark-master:7077")
    assert resolve_master() == "spark://spark-master:7077"
    assert resolve_master("local[2]") == "local[2]"
