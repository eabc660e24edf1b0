"""The table folder's files by name: which data files make up a segment, segment files, delete deltas, the
trash, CarbonData's file-name rules, and where a new table may be created."""
