"""CarbonData's thrift structures (format V3, schema, index and merge-index files).

Field ids and required flags follow CarbonData 2.3's IDL; required fields are always written because
Java's generated readers reject a struct that lacks one.
"""

from __future__ import annotations

from enum import IntEnum

from carbon_ds.format.thrift.codec import Limit, Struct

ENUM = ("enum",)
# CarbonData's own ceiling on a table's width (CSVInputFormat.THRESHOLD_MAX_NUMBER_OF_COLUMNS_FOR_PARSING,
# complex children counted): every per-column list of a schema, header, footer or index is refused past it
MAX_COLUMNS = 20_000
COLUMNS = Limit(MAX_COLUMNS, "columns")


class DataType(IntEnum):
    STRING = 0
    SHORT = 1
    INT = 2
    LONG = 3
    DOUBLE = 4
    DECIMAL = 5
    TIMESTAMP = 6
    DATE = 7
    BOOLEAN = 8
    ARRAY = 20
    STRUCT = 21
    VARCHAR = 22
    MAP = 23
    FLOAT = 24
    BYTE = 25
    BINARY = 26


class Encoding(IntEnum):
    DICTIONARY = 0
    DELTA = 1
    RLE = 2
    INVERTED_INDEX = 3
    BIT_PACKED = 4
    DIRECT_DICTIONARY = 5
    DIRECT_COMPRESS = 6
    ADAPTIVE_INTEGRAL = 7
    ADAPTIVE_DELTA_INTEGRAL = 8
    RLE_INTEGRAL = 9
    DIRECT_STRING = 10
    ADAPTIVE_FLOATING = 11
    BOOL_BYTE = 12
    ADAPTIVE_DELTA_FLOATING = 13
    DIRECT_COMPRESS_VARCHAR = 14
    INT_LENGTH_COMPLEX_CHILD_BYTE_ARRAY = 15


class SortState(IntEnum):
    SORT_NONE = 0
    SORT_NATIVE = 1
    SORT_EXPLICIT = 2


class PartitionType(IntEnum):
    RANGE = 0
    RANGE_INTERVAL = 1
    LIST = 2
    HASH = 3
    NATIVE_HIVE = 4


# ---------------------------------------------------------------- schema.thrift


class RelationIdentifier(Struct):
    FIELDS = {1: ("databaseName", "string", True), 2: ("tableName", "string", True), 3: ("tableId", "string", True)}


class ParentColumnTableRelation(Struct):
    FIELDS = {
        1: ("relationIdentifier", RelationIdentifier, True),
        2: ("columnId", "string", True),
        3: ("columnName", "string", True),
    }


class ColumnSchema(Struct):
    FIELDS = {
        1: ("data_type", ENUM, True),
        2: ("column_name", "string", True),
        3: ("column_id", "string", True),
        4: ("columnar", "bool", True),
        5: ("encoders", ("list", ENUM), True),
        6: ("dimension", "bool", True),
        7: ("column_group_id", "i32", False),
        8: ("scale", "i32", False),
        9: ("precision", "i32", False),
        10: ("num_child", "i32", False),
        11: ("aggregate_function", "string", False),
        12: ("default_value", "binary", False),
        13: ("columnProperties", ("map", "string", "string"), False),
        14: ("invisible", "bool", False),
        15: ("columnReferenceId", "string", False),
        16: ("schemaOrdinal", "i32", False),
        17: ("parentColumnTableRelations", ("list", ParentColumnTableRelation), False),
    }


class SchemaEvolutionEntry(Struct):
    FIELDS = {
        1: ("time_stamp", "i64", True),
        2: ("added", ("list", ColumnSchema, COLUMNS), False),
        3: ("removed", ("list", ColumnSchema, COLUMNS), False),
        4: ("tableName", "string", False),
    }


class SchemaEvolution(Struct):
    FIELDS = {1: ("schema_evolution_history", ("list", SchemaEvolutionEntry), True)}


class BucketingInfo(Struct):
    FIELDS = {1: ("table_columns", ("list", ColumnSchema, COLUMNS), True), 2: ("number_of_buckets", "i32", True)}


class PartitionInfo(Struct):
    FIELDS = {
        1: ("partition_columns", ("list", ColumnSchema, COLUMNS), True),
        2: ("partition_type", ENUM, True),
        3: ("list_info", ("list", ("list", "string")), False),
        4: ("range_info", ("list", "string"), False),
        5: ("partition_ids", ("list", "i32"), False),
        6: ("num_partitions", "i32", False),
        7: ("max_partition", "i32", False),
    }


class TableSchema(Struct):
    FIELDS = {
        1: ("table_id", "string", True),
        2: ("table_columns", ("list", ColumnSchema, COLUMNS), True),
        3: ("schema_evolution", SchemaEvolution, True),
        4: ("tableProperties", ("map", "string", "string"), False),
        5: ("bucketingInfo", BucketingInfo, False),
        6: ("partitionInfo", PartitionInfo, False),
        7: ("long_string_columns", ("list", "string"), False),
    }


class TableInfo(Struct):
    FIELDS = {1: ("fact_table", TableSchema, True), 2: ("aggregate_table_list", ("list", TableSchema), True)}


# ---------------------------------------------------------------- carbondata.thrift


class SegmentInfo(Struct):
    FIELDS = {1: ("num_cols", "i32", True), 2: ("column_cardinalities", ("list", "i32", COLUMNS), True)}


class BlockletBTreeIndex(Struct):
    FIELDS = {1: ("start_key", "binary", True), 2: ("end_key", "binary", True)}


class BlockletMinMaxIndex(Struct):
    FIELDS = {
        1: ("min_values", ("list", "binary", COLUMNS), True),
        2: ("max_values", ("list", "binary", COLUMNS), True),
        3: ("min_max_presence", ("list", "bool", COLUMNS), False),
    }


class BlockletIndex(Struct):
    FIELDS = {1: ("min_max_index", BlockletMinMaxIndex, False), 2: ("b_tree_index", BlockletBTreeIndex, False)}


class ChunkCompressionMeta(Struct):
    FIELDS = {
        1: ("compression_codec", ENUM, True),
        2: ("total_uncompressed_size", "i64", True),
        3: ("total_compressed_size", "i64", True),
        4: ("compressor_name", "string", False),
    }


class PresenceMeta(Struct):
    FIELDS = {1: ("represents_presence", "bool", True), 2: ("present_bit_stream", "binary", True)}


class LocalDictionaryChunkMeta(Struct):
    FIELDS = {1: ("encoders", ("list", ENUM), True), 2: ("encoder_meta", ("list", "binary"), True)}


class LocalDictionaryChunk(Struct):
    FIELDS = {
        1: ("dictionary_meta", LocalDictionaryChunkMeta, True),
        2: ("dictionary_data", "binary", True),
        3: ("dictionary_values", "binary", True),
    }


class DataChunk2(Struct):
    FIELDS = {
        1: ("chunk_meta", ChunkCompressionMeta, True),
        2: ("rowMajor", "bool", True),
        3: ("data_page_length", "i32", True),
        4: ("rowid_page_length", "i32", False),
        5: ("rle_page_length", "i32", False),
        6: ("presence", PresenceMeta, False),
        7: ("sort_state", ENUM, False),
        8: ("encoders", ("list", ENUM), False),
        9: ("encoder_meta", ("list", "binary"), False),
        10: ("min_max", BlockletMinMaxIndex, False),
        11: ("numberOfRowsInpage", "i32", False),
    }


class DataChunk3(Struct):
    FIELDS = {
        1: ("data_chunk_list", ("list", DataChunk2), True),
        2: ("page_offset", ("list", "i32"), False),
        3: ("page_length", ("list", "i32"), False),
        4: ("local_dictionary", LocalDictionaryChunk, False),
    }


class BlockletInfo3(Struct):
    FIELDS = {
        1: ("num_rows", "i32", True),
        2: ("column_data_chunks_offsets", ("list", "i64", COLUMNS), True),
        3: ("column_data_chunks_length", ("list", "i32", COLUMNS), True),
        4: ("dimension_offsets", "i64", True),
        5: ("measure_offsets", "i64", True),
        6: ("number_number_of_pages", "i32", True),
        7: ("row_count_in_page", ("list", "i32"), False),
    }


class FileHeader(Struct):
    FIELDS = {
        1: ("version", "i32", True),
        2: ("column_schema", ("list", ColumnSchema, COLUMNS), True),
        3: ("is_footer_present", "bool", False),
        4: ("time_stamp", "i64", False),
        5: ("is_splitable", "bool", False),
        6: ("sync_marker", "binary", False),
        7: ("compressor_name", "string", False),
    }


class FileFooter3(Struct):
    FIELDS = {
        1: ("num_rows", "i64", True),
        2: ("segment_info", SegmentInfo, True),
        3: ("blocklet_index_list", ("list", BlockletIndex), True),
        4: ("blocklet_info_list3", ("list", BlockletInfo3), False),
        # 5: a blocklet dictionary chunk no writer of V3 sets; skipped when present
        6: ("is_sort", "bool", False),
        7: ("extra_info", ("map", "string", "string"), False),
    }


# ---------------------------------------------------------------- carbondata_index(_merge).thrift


class IndexHeader(Struct):
    FIELDS = {
        1: ("version", "i32", True),
        2: ("table_columns", ("list", ColumnSchema, COLUMNS), True),
        3: ("segment_info", SegmentInfo, True),
        4: ("bucket_id", "i32", False),
        5: ("schema_time_stamp", "i64", False),
        6: ("is_sort", "bool", False),
    }


class BlockIndex(Struct):
    FIELDS = {
        1: ("num_rows", "i64", True),
        2: ("file_name", "string", True),
        3: ("offset", "i64", True),
        4: ("block_index", BlockletIndex, True),
        5: ("blocklet_info", BlockletInfo3, False),
        6: ("file_size", "i64", False),
    }


class MergedBlockIndexHeader(Struct):
    FIELDS = {1: ("file_names", ("list", "string"), True)}


class MergedBlockIndex(Struct):
    FIELDS = {1: ("fileData", ("list", "binary"), True)}


# ---------------------------------------------------------------- dictionary(_meta).thrift (CarbonData < 2.0)
# The table-level global dictionary: Metadata/<column_id>.dict holds ColumnDictionaryChunk structs back to
# back (each load appends its chunks), Metadata/<column_id>.dictmeta one ColumnDictionaryChunkMeta per load.


class ColumnDictionaryChunk(Struct):
    FIELDS = {1: ("values", ("list", "binary"), False)}


class ColumnDictionaryChunkMeta(Struct):
    FIELDS = {
        1: ("min_surrogate_key", "i32", True),
        2: ("max_surrogate_key", "i32", True),
        3: ("start_offset", "i64", True),
        4: ("end_offset", "i64", True),
        5: ("chunk_count", "i32", True),
        6: ("segment_id", "i64", False),
    }
