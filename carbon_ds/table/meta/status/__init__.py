"""The segment list (``Metadata/tablestatus``): its entries, its versions, the one way it is edited, the per-process
parse that keeps its cost to what changed, the load records of reserved segments, and which data files of a
segment count."""
