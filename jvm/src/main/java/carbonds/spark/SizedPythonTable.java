package carbonds.spark;

import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A Python data source table whose scans report a size ({@link SizedScan}). The scan is built by Spark's
 * scan push-down after the rule that made this table has run, so the size travels with the table. Its
 * builder offers Spark no filter push-down: the relation's own filter option prunes, and a pushed reader
 * state that Spark could reuse across queries is what loses rows on PySpark 4.1-4.3.
 */
final class SizedPythonTable extends PythonTable {
    private final long sizeInBytes;

    SizedPythonTable(PythonDataSourceV2 source, String shortName, StructType schema, long sizeInBytes) {
        super(source, shortName, schema);
        this.sizeInBytes = sizeInBytes;
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        ScanBuilder builder = super.newScanBuilder(options);
        return () -> new SizedScan(builder.build(), sizeInBytes);
    }
}
