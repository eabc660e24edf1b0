"""Operations on a table, in rooms by concept: ``dml/`` (DELETE, UPDATE, MERGE INTO), ``segments/`` (segment
management, CLEAN FILES, ADD SEGMENT), ``compaction/``, ``streams/`` (streaming commits and offsets); schema
changes (``schema_update``) and materialized views (``views``) beside them."""
