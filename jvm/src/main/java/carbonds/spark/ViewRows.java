package carbonds.spark;

import java.util.EnumSet;
import java.util.OptionalLong;
import java.util.Set;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Rows read at planning, as the table of the relation they replace, which Spark plans as a local table scan
 * (its own {@link LocalScan}): no Python task and no second Python call, while the relation keeps its name
 * and options, which EXPLAIN shows (a local relation names no table, hence this scan). Two kinds: a small
 * fresh view's rows, read by the Python side in the very call that checked the view's freshness
 * (carbon_ds.spark.bridge.view_rewrite), so they are the rows of exactly the segment checked
 * ({@link ViewRewrite}); and a small carbondata read's rows, read in the planning call from the files that
 * call planned ({@link ReadPlans}, {@link KnownRows}), whose scan checks each time it runs that the table is
 * unchanged ({@link CheckedLocalTableScanExec}). Its size is the rows' in Spark's default widths, so a
 * join with it broadcasts it as it would a local relation.
 */
final class ViewRows implements Table, SupportsRead, ScanBuilder, LocalScan, SupportsReportStatistics {
    private final String kind;
    private final String name;
    private final StructType schema;
    private final InternalRow[] rows;
    private final CheckedLocalTableScanExec.Recheck check;

    /** A view's rows. */
    ViewRows(String name, StructType schema, InternalRow[] rows) {
        this("materialized view", name, schema, rows, null);
    }

    /** {@code kind}: what EXPLAIN says the rows are of ("materialized view", "carbondata"); {@code check}: what
     * each run of the scan checks the table against ({@link CheckedLocalTableScanExec}), or null (rows of a view's segment). */
    ViewRows(String kind, String name, StructType schema, InternalRow[] rows, CheckedLocalTableScanExec.Recheck check) {
        this.kind = kind;
        this.name = name;
        this.schema = schema;
        this.rows = rows;  // shared with a kept read plan (PlanCache): never written to
        this.check = check;
    }

    CheckedLocalTableScanExec.Recheck check() {
        return check;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
        return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return this;
    }

    @Override
    public LocalScan build() {
        return this;
    }

    @Override
    public StructType readSchema() {
        return schema;
    }

    @Override
    public InternalRow[] rows() {
        return rows;
    }

    @Override
    public String description() {
        return kind + " " + name + ": " + rows.length + " rows read at planning";
    }

    @Override
    public Statistics estimateStatistics() {
        long rowCount = rows.length;
        long bytes = rowCount * schema.defaultSize();
        return new Statistics() {
            @Override
            public OptionalLong sizeInBytes() {
                return OptionalLong.of(bytes);
            }

            @Override
            public OptionalLong numRows() {
                return OptionalLong.of(rowCount);
            }
        };
    }
}
