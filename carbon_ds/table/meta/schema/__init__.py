"""The table's schema: the schema file, its evolution entries, a data file's columns as the table sees them now,
the one cast of incoming data into the schema, table properties, and the features a write here would break."""
