"""The table folder's own files as values: tablestatus, segment files, the schema file, delete deltas,
locks, file naming, table properties, and ``TableHandle``, the state every operation works on."""
