"""Auto-registration hook: Spark imports top-level pyspark_* modules and registers DefaultSource."""
