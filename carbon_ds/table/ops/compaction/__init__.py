"""Compaction: which segments merge (``selection``), one compaction task's streaming merge of a group's files
(``tasks``), and the run that reserves, merges and commits (``compact``)."""
