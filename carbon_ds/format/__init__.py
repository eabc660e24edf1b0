"""CarbonData's bytes, in three floors: ``thrift/`` (metadata codec and structs), ``pages/`` (one column's pages),
and here the files (``v3_file``, ``index``, ``stream``, ``dictionary``), the Arrow type mapping
(``arrow_types``, ``column_view``) and Hive folder names (``hive``)."""
