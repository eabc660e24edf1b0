"""Segments as units: SHOW SEGMENTS, DELETE SEGMENT and CLEAN FILES (``manage``), what CLEAN FILES sweeps beside
them (``leftovers``), and ADD SEGMENT of existing folders (``add``, with ``add_hints`` for its refusals)."""
