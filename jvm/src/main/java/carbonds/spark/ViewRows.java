package carbonds.spark;

import java.util.EnumSet;
import java.util.List;
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
 * A small fresh view's rows, read by the Python side in the very call that checked the view's freshness
 * (carbon_ds.spark.bridge.view_rewrite), so they are the rows of exactly the segment checked. As the table of
 * the view's relation ({@link ViewRewrite}) Spark plans them as a local table scan (its own {@link LocalScan}),
 * with no Python task and no second Python call, while the relation keeps the view's name and folder, which
 * EXPLAIN shows. Rows read at planning are what {@link KnownRows} makes a local relation of; a local relation
 * names no table, hence this scan here.
 */
final class ViewRows implements Table, SupportsRead, ScanBuilder, LocalScan, SupportsReportStatistics {
    private final String name;
    private final StructType schema;
    private final InternalRow[] rows;

    ViewRows(String name, StructType schema, List<InternalRow> rows) {
        this.name = name;
        this.schema = schema;
        this.rows = rows.toArray(new InternalRow[0]);
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
        return "materialized view " + name + ": " + rows.length + " rows read at planning";
    }

    /** Its size, so a join with it can broadcast it as it would a local relation. */
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
