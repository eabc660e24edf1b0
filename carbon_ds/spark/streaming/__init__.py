"""Structured Streaming: the ``carbondata`` sink (exactly once) and source."""
