"""Writes from Spark: a DataFrame into a table, and the driver process whose death ends a write."""
