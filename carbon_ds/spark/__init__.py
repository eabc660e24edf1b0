"""Spark 4: the ``carbondata`` data source, DELETE/UPDATE evaluated by Spark, the ``carbon_ds.sql`` runner,
its table catalog and the Spark-native read of external segments. Everything here imports pyspark."""
