"""CarbonData's statements parsed into plain values (no Spark), and SQL type names as Arrow types."""
