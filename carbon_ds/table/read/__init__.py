"""Reading a table: ``snapshot`` opens it (the readable files of one tablestatus read), ``pruning`` plans by
min/max at every level, ``planned_reads`` and ``scan`` read the plan (as functions, as a stream), and
``task_reader`` is the one loop over planned files."""
