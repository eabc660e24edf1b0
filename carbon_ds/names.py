"""The option, conf and property names the package shares with its Spark extension.

jvm/src/main/java/carbonds/spark/Names.java holds the same constants under the same names;
tests/package/test_names.py fails when the two lists differ.
"""

from __future__ import annotations

SOURCE = "carbondata"
"""The data source's short name."""

# Spark confs
CONF_EXTENSION = "carbon_ds.extension.enabled"
""""false" turns every rule of the extension off for the session."""
CONF_EXTENSION_STATISTICS = "carbon_ds.extension.statistics"
""""false": a pruned relation reports no size (from tablestatus) to the planner."""
CONF_UNSCALED = "carbon_ds.extension.unscaledDecimals"
""""false" reads decimals as decimals (Arrow's 128-bit values, converted one by one)."""
CONF_PLAN_READS = "carbon_ds.extension.planReads"
""""false" leaves every read to Spark's own planning calls."""
CONF_PARTIAL_COUNTS = "carbon_ds.extension.partialCounts"
""""false": grouped counts are not counted in the tasks."""
CONF_COLUMNAR = "carbon_ds.extension.columnarScan"
""""false": scans read rows, never Arrow batches."""
CONF_LOCAL_BYTES = "carbon_ds.sql.localRelationBytes"
"""The most Arrow bytes of a small read's rows read at planning; 0 leaves every read to tasks."""
CONF_PARTITION_VALUES = "carbon_ds.read.partitionValues"
""""false" reads the partition column from the data files even when metadata knows it."""
CONF_NATIVE = "carbon_ds.spark.nativeExternal"
""""false": external segments are read by the data source, not by Spark's own scans."""
CONF_MV_REWRITE = "carbon_ds.sql.materializedViewRewrite"
""""false": no query is answered from a materialized view (carbon_ds.sql's match and the extension's rule)."""

VERIFIED_PLANS = "carbon_ds.verified_plans"
"""Local property: the reused plans and when the table was found still at their version."""

# Read options
PRUNED_OPTION = "carbon_ds.pruned"
"""Set on relations the extension (or carbon_ds.sql's rewrite) made: they are final."""
EXACT_FILTER_OPTION = "carbon_ds.exact_filter"
"""On a relation whose filter option also holds the Filters Spark keeps above it: the part of that option that
must hold for every row handed over (the user's own filter option; empty: none)."""
NATIVE_PLAN_OPTION = "carbon_ds.native_plan"
"""Asks the data source's schema() for the native union's plan (carbon_ds.spark.bridge.native_read)."""
EXPANDED_OPTION = "carbon_ds.expanded"
"""On the carbondata part of a native union."""
PLAN_READS_OPTION = "carbon_ds.plan_reads"
"""Asks the data source's schema() to plan many relations' reads in one call (carbon_ds.spark.bridge.read_plans)."""
MV_REWRITE_OPTION = "carbon_ds.mv_rewrite"
"""Asks the data source's schema() for the fresh materialized views of a table (carbon_ds.spark.bridge.view_rewrite)."""
PARTIAL_COUNTS_OPTION = "partial_counts"
"""Rows counted by keys in the tasks (carbon_ds.spark.source.partial_counts)."""
UNSCALED_OPTION = "unscaled_decimals"
"""Decimal columns read as their unscaled longs."""
ROW_POSITIONS_OPTION = "with_row_positions"
"""Adds each row's position (DELETE / UPDATE on Spark)."""
SEGMENTS_OPTION = "segments"
FILTER_OPTION = "filter"

# Write options and table properties
PARTITION_BY_OPTION = "partition_by"
COMPRESSOR_OPTION = "compressor"
TABLE_OPTIONS = (
    "sort_columns",
    "sort_scope",
    "long_string_columns",
    "table_blocksize",
    "table_blocklet_size",
    "local_dictionary_enable",
    "local_dictionary_threshold",
)
"""Options that describe the table itself: table properties of the table a write creates."""

# Table metadata
STATUS_FILE = "tablestatus"
"""The plain segment list file of Metadata/; a versioned one is named ``tablestatus_<version>``."""
STATUS_VERSION_PROPERTY = "latestversion"
"""The table property naming the live segment list version (CarbonData 2.3.1+; table.meta.status.status_versions)."""
