"""Spark 4. Everything here imports pyspark. Rooms by job:

- ``source/``: the ``carbondata`` data source (batch reads, the version a query reads, partial counts and
  partition values computed by read tasks);
- ``bridge/``: the Python side of the Catalyst extension (jvm/src): configuring a session with it, and the
  answers its rules ask for (read plans, Spark-native reads of external segments, fresh materialized views);
- ``statements/``: ``carbon_ds.sql`` and the ``spark.sql`` front door: CarbonData's statements, the table
  catalog, DELETE / UPDATE / MERGE, materialized views and compaction run by Spark;
- ``streaming/``: the Structured Streaming sink and source;
- ``writes/``: DataFrame writes and the driver process a write belongs to.

No Python module walks Spark's query plans: the extension's rules plan every query over carbondata.

Beside them: ``session`` (``register`` and ``read``), small reads on the driver (``local``), Arrow schemas,
error messages through Spark and the Python-worker check, which several rooms use.
"""
