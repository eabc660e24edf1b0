"""CarbonData's metadata bytes: the Thrift compact codec (``codec``), CarbonData's structs (``structs``), and
parsed objects shared by the bytes they came from (``parse_cache``). Imports nothing else of format/."""
