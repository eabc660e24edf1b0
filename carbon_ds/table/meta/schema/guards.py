"""Table features of CarbonData's Spark integration that a change made here would silently break.

Each entry names the schema evidence and why a write (load, overwrite, UPDATE/DELETE, compaction, ADD
SEGMENT, segment deletion) made without CarbonData's own machinery would leave a table CarbonData reads
differently. Reading such tables is unaffected.
"""

from __future__ import annotations

from carbon_ds.format.thrift.structs import DataType, Encoding, TableInfo

# (table property, value test, why) - names as CarbonCommonConstants / CarbonIndexUtil spell them
_PROPERTY_RULES: tuple[tuple[str, str, str], ...] = (
    ("indexexists", "true",
     "the table has bloom/Lucene indexes (CarbonIndexUtil.isIndexExists); CarbonData intersects their pruning "
     "with min/max pruning, so a segment written without index shards would vanish from its filtered queries"),
    ("indextableexists", "true",
     "the table has secondary index tables (CarbonIndexUtil.isIndexTableExists) that would not receive the rows"),
    ("sort_scope", "global_sort",
     "SORT_SCOPE=GLOBAL_SORT (CarbonCommonConstants.SORT_SCOPE) promises loads sorted across files, which "
     "carbon-ds does not produce (it sorts within each file)"),
    ("bucket_number", "",
     "the table is bucketed (CarbonCommonConstants.BUCKET_NUMBER); rows must go to files by CarbonData's bucket "
     "hash, which carbon-ds does not compute"),
    ("spatial_index", "",
     "the table has a spatial index (CarbonCommonConstants.SPATIAL_INDEX) whose generated column is computed "
     "at load time by CarbonData's index handler"),
    ("mv_related_tables", "",
     "the table is a materialized view (CarbonCommonConstants.MV_RELATED_TABLES) that CarbonData keeps in "
     "step with its parent tables"),
)


def write_blockers(info: TableInfo) -> list[str]:
    """``property=value: why`` for every feature of the table that carbon-ds cannot keep when writing."""
    props = {str(k).lower(): str(v) for k, v in (info.fact_table.tableProperties or {}).items()}
    out = []
    for key, wanted, why in _PROPERTY_RULES:
        value = props.get(key, "").strip()
        if value and (not wanted or value.lower() == wanted):
            out.append(f"{key}={value!r}: {why}")
    table_id = str(info.fact_table.table_id or "").lower()
    if table_id and table_id in props:
        out.append(f"index metadata under the table id {table_id!r} (CarbonTable.getIndexMetadata): the table has "
                   "indexes or is an index table, kept in step by CarbonData's index machinery")
    for c in info.fact_table.table_columns or []:
        enc = set(c.encoders or [])
        if Encoding.DICTIONARY in enc and Encoding.DIRECT_DICTIONARY not in enc:
            out.append(f"column {c.column_name!r} is global-dictionary encoded (CarbonData 1.x DICTIONARY_INCLUDE; "
                       "values are keys into Metadata/<column_id>.dict, which carbon-ds does not extend)")
        elif c.data_type == DataType.TIMESTAMP and Encoding.DIRECT_DICTIONARY in enc:
            out.append(f"column {c.column_name!r} is a direct-dictionary TIMESTAMP (TimeStampDirectDictionaryGenerator "
                       "keys at the writer's carbon.timegranularity, which carbon-ds does not write)")
    bucketing = info.fact_table.bucketingInfo
    if bucketing is not None and (bucketing.number_of_buckets or 0) > 0 and "bucket_number" not in props:
        out.append(f"bucketingInfo with {bucketing.number_of_buckets} buckets (schema.thrift BucketingInfo): rows "
                   "must go to files by CarbonData's bucket hash, which carbon-ds does not compute")
    return out
