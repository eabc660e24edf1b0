"""What planning keeps per process: a thread-safe LRU map under the cache of committed segments and the cache
of a segment's files, each given out only while what it was learnt from is unchanged."""
