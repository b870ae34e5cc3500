"""The full PySpark (with its JVM) is what is installed, not the Spark Connect client the Spark provider pulls."""

from __future__ import annotations

import importlib.metadata

import pytest


def test_only_full_pyspark_is_installed_and_the_spark_provider_imports() -> None:
    assert importlib.metadata.version("pyspark").startswith("4.")
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.version("pyspark-client")
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    assert SparkSubmitOperator.template_fields


def test_local_spark_runs_a_python_udf_job() -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("streamproc-smoke")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.pythonUDF.arrow.enabled", "false")  # pandas is not a dependency
        .getOrCreate()
    )
    try:
        double = udf(lambda x: x * 2, "long")
        rows = spark.range(0, 100, numPartitions=4).select(double("id").alias("d")).groupBy().sum("d").collect()
        assert rows[0][0] == 2 * sum(range(100))
    finally:
        spark.stop()
