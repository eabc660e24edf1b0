"""One column's pages: a chunk's header, decoding and encoding a page, its encoder metadata, compressors,
statistic bytes, direct-dictionary keys, null layouts of complex values, the compiled loops, and the checks of
decoded values. Below the file modules (``v3_file``, ``stream``); above ``thrift/`` and ``arrow_types``."""
