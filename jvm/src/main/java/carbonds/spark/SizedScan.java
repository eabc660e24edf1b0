package carbonds.spark;

import java.util.OptionalLong;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.streaming.ContinuousStream;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.StructType;

/**
 * A Python data source scan that reports a size: PySpark's own scan reports none, so Spark sizes every
 * carbondata relation at spark.sql.defaultSizeInBytes and never broadcasts one, however small. Everything
 * else is the wrapped scan's: the rows cannot change, only the join strategy Spark picks.
 */
final class SizedScan implements Scan, SupportsReportStatistics {
    private final Scan scan;
    private final long sizeInBytes;

    SizedScan(Scan scan, long sizeInBytes) {
        this.scan = scan;
        this.sizeInBytes = sizeInBytes;
    }

    long sizeInBytes() {
        return sizeInBytes;
    }

    @Override
    public Statistics estimateStatistics() {
        return new Statistics() {
            @Override
            public OptionalLong sizeInBytes() {
                return OptionalLong.of(sizeInBytes);
            }

            @Override
            public OptionalLong numRows() {
                return OptionalLong.empty();
            }
        };
    }

    @Override
    public StructType readSchema() {
        return scan.readSchema();
    }

    @Override
    public String description() {
        return scan.description() + " sizeInBytes=" + sizeInBytes;
    }

    @Override
    public Batch toBatch() {
        return scan.toBatch();
    }

    @Override
    public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
        return scan.toMicroBatchStream(checkpointLocation);
    }

    @Override
    public ContinuousStream toContinuousStream(String checkpointLocation) {
        return scan.toContinuousStream(checkpointLocation);
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return scan.supportedCustomMetrics();
    }

    @Override
    public CustomTaskMetric[] reportDriverMetrics() {
        return scan.reportDriverMetrics();
    }

    @Override
    public ColumnarSupportMode columnarSupportMode() {
        return scan.columnarSupportMode();
    }
}
