package carbonds.spark;

import java.util.List;

/**
 * The option, conf and property names this extension shares with the Python package. carbon_ds/names.py holds
 * the same constants under the same names; tests/package/test_names.py fails when the two lists differ.
 */
final class Names {
    /** The data source's short name. */
    static final String SOURCE = "carbondata";

    // Spark confs
    /** {@code false} turns every rule of the extension off for the session. */
    static final String CONF_EXTENSION = "carbon_ds.extension.enabled";
    /** {@code false}: a pruned relation reports no size (from tablestatus) to the planner. */
    static final String CONF_EXTENSION_STATISTICS = "carbon_ds.extension.statistics";
    /** {@code false} reads decimals as decimals (Arrow's 128-bit values, converted one by one). */
    static final String CONF_UNSCALED = "carbon_ds.extension.unscaledDecimals";
    /** {@code false} leaves every read to Spark's own planning calls. */
    static final String CONF_PLAN_READS = "carbon_ds.extension.planReads";
    /** {@code false}: grouped counts are not counted in the tasks. */
    static final String CONF_PARTIAL_COUNTS = "carbon_ds.extension.partialCounts";
    /** {@code false}: scans read rows, never Arrow batches. */
    static final String CONF_COLUMNAR = "carbon_ds.extension.columnarScan";
    /** The most Arrow bytes of a small read's rows read at planning; 0 leaves every read to tasks. */
    static final String CONF_LOCAL_BYTES = "carbon_ds.sql.localRelationBytes";
    /** {@code false}: a read of a partition column alone reads the files. */
    static final String CONF_PARTITION_VALUES = "carbon_ds.read.partitionValues";
    /** {@code false}: external segments are read by the data source, not by Spark's own scans. */
    static final String CONF_NATIVE = "carbon_ds.spark.nativeExternal";
    /** {@code false}: no query is answered from a materialized view. */
    static final String CONF_MV_REWRITE = "carbon_ds.sql.materializedViewRewrite";

    /** Local property: the reused plans and when the table was found still at their version. */
    static final String VERIFIED_PLANS = "carbon_ds.verified_plans";

    // Read options
    /** Set on relations the extension (or carbon_ds.sql's rewrite) made: they are final. */
    static final String PRUNED_OPTION = "carbon_ds.pruned";
    /** On a relation whose filter option also holds the Filters Spark keeps above it: the part of that option
     *  that must hold for every row handed over (the user's own filter option; empty: none). */
    static final String EXACT_FILTER_OPTION = "carbon_ds.exact_filter";
    /** Asks the data source's schema() for the native union's plan. */
    static final String NATIVE_PLAN_OPTION = "carbon_ds.native_plan";
    /** On the carbondata part of a native union. */
    static final String EXPANDED_OPTION = "carbon_ds.expanded";
    /** Asks the data source's schema() to plan many relations' reads in one call. */
    static final String PLAN_READS_OPTION = "carbon_ds.plan_reads";
    /** Asks the data source's schema() for the fresh materialized views of a table. */
    static final String MV_REWRITE_OPTION = "carbon_ds.mv_rewrite";
    /** Rows counted by keys in the tasks. */
    static final String PARTIAL_COUNTS_OPTION = "partial_counts";
    /** Decimal columns read as their unscaled longs. */
    static final String UNSCALED_OPTION = "unscaled_decimals";
    /** Adds each row's position (DELETE / UPDATE). */
    static final String ROW_POSITIONS_OPTION = "with_row_positions";
    static final String SEGMENTS_OPTION = "segments";
    static final String FILTER_OPTION = "filter";

    // Write options and table properties
    static final String PARTITION_BY_OPTION = "partition_by";
    static final String COMPRESSOR_OPTION = "compressor";
    /** Options that describe the table itself: table properties of the table a write creates. */
    static final List<String> TABLE_OPTIONS = List.of(
            "sort_columns", "sort_scope", "long_string_columns", "table_blocksize", "table_blocklet_size",
            "local_dictionary_enable", "local_dictionary_threshold");

    // Table metadata
    /** The plain segment list file of Metadata/; a versioned one is named {@code tablestatus_<version>}. */
    static final String STATUS_FILE = "tablestatus";
    /** The table property naming the live segment list version (CarbonData 2.3.1+). */
    static final String STATUS_VERSION_PROPERTY = "latestversion";

    private Names() {
    }
}
