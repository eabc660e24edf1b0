"""Spark imports top-level ``pyspark_*`` modules and registers their ``DefaultSource`` in every session."""

from carbon_ds.spark.source.datasource import CarbonDataSource as DefaultSource

__all__ = ["DefaultSource"]
