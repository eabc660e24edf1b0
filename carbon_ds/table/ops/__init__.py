"""Operations on a table: DELETE/UPDATE, segment management, ADD SEGMENT, partition DDL."""
