"""Row-level statements, one module each: DELETE and UPDATE (``delete_update``), MERGE INTO with Arrow rows
(``arrow_merge``; spark/statements/merge_into.py runs the join in Spark and commits through it)."""
