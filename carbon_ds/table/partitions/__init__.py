"""Partitioning, each flavour in one place: Hive-style folders (``hive_*``) and CarbonData 1.3-1.5's HASH /
RANGE / LIST partition ids (``id_*``). ``partitioning`` is the flavour types ``TableHandle.partitioning``
answers with; then, per flavour, its spec, its pruning, its load and its partition DDL. Each module sits on the
floor of what it does (tests/package/test_layout.py names them), so the folder holds a flavour whole and the
layers still hold."""
