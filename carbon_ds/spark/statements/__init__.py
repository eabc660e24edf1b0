"""Statements on Spark: ``carbon_ds.sql`` and the ``spark.sql`` front door, the table catalog, DELETE / UPDATE / MERGE evaluated by Spark, materialized views and compaction tasks."""
