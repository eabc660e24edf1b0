"""Operations on a table: DELETE/UPDATE, MERGE, segment management, ADD SEGMENT, compaction, schema changes,
streaming commits and offsets, materialized views."""
