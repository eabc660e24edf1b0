"""The table folder's own files as values, by concept: ``status/`` (tablestatus), ``schema/`` (the schema file and
what hangs on it), ``files/`` (data files, segment files, deltas, trash, naming), ``caches/`` (planning's per
process caches); beside them ``TableHandle`` (handle), the state every operation works on, locks and options."""
