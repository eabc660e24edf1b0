"""Structured Streaming on the table side: exactly-once batch commits (``commit``) and the offsets of a
streaming read (``offsets``)."""
