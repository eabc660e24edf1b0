package carbonds.spark;

import java.util.TreeMap;

import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A Python data source table whose scans report a size ({@link SizedScan}). The scan is built by Spark's
 * scan push-down after the rule that made this table has run, so the size travels with the table. Its
 * builder offers Spark no filter push-down: the relation's own filter option prunes, and a pushed reader
 * state that Spark could reuse across queries is what loses rows on PySpark 4.1-4.3.
 *
 * <p>The size is made the way Spark sizes a Parquet relation: the stored bytes of the readable segments read,
 * as the Python side's read plan counts them ({@link ReadPlans}: one rule for which segments are readable,
 * whatever file holds the segment list), times the declared columns' share of the full row width (Spark's
 * default width per type). Until the plan answers, and without an answer, the size is unknown.
 */
final class SizedPythonTable extends PythonTable {
    private final double share;
    private volatile long sizeInBytes = -1;

    /** {@code share}: the declared columns' part of the row width; below zero, the table is never sized. */
    SizedPythonTable(PythonDataSourceV2 source, String shortName, StructType schema, double share) {
        super(source, shortName, schema);
        this.share = share;
    }

    /** Sets the size from the stored bytes the Python side's plan of this read counted. */
    void storedBytes(long stored) {
        if (share >= 0 && stored >= 0) {
            sizeInBytes = Math.max(1, (long) ((double) stored * share));
        }
    }

    /** The share of the row width that {@code fields} of the same table make; below zero when unsized. */
    double shareOf(StructField[] fields) {
        return share <= 0 ? share : (double) rowWidth(fields) * share / rowWidth(schema().fields());
    }

    /** Spark's estimated bytes of a row of {@code fields} (EstimationUtils.getSizePerRow: 8 plus the widths). */
    static long rowWidth(StructField[] fields) {
        long w = 8;
        for (StructField f : fields) {
            DataType t = f.dataType();
            w += t instanceof DecimalType d ? (d.precision() <= 18 ? 8 : 16) : t.defaultSize();
        }
        return w;
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        ScanBuilder builder = super.newScanBuilder(options);
        // what the read delivers: two relations of one query with the same options (path, filter, decimals)
        // and columns read the same rows, so Spark may run one exchange for both (as for a Parquet scan)
        String read = name() + "\n" + new TreeMap<>(options.asCaseSensitiveMap()) + "\n" + schema().json();
        return () -> new SizedScan(builder.build(), sizeInBytes, read);
    }
}
