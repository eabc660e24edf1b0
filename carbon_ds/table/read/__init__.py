"""Reading a table: which files make up its segments, min/max pruning at every level, scans and counts."""
