"""Loads: ``start`` (the write policy: the overwrite's update lock, the post-commit hooks) over the load protocol
(``protocol``: reserve a segment and pick the load for the table's layout; ``load_base``: write tasks and one
commit point), the plain load, and ``prepare`` (opening or creating the table a load writes). The partitioned
loads are their flavours' (table.partitions)."""
