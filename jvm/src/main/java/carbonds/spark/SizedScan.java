package carbonds.spark;

import java.util.Objects;
import java.util.OptionalLong;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.streaming.ContinuousStream;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.execution.datasources.v2.python.PythonPartitionReaderFactory;
import org.apache.spark.sql.types.StructType;

/**
 * A Python data source scan that reports a size: PySpark's own scan reports none, so Spark sizes every
 * carbondata relation at spark.sql.defaultSizeInBytes and never broadcasts one, however small. Everything
 * else is the wrapped scan's: the rows cannot change, only the join strategy Spark picks. Its batch reads
 * hand Spark the Python worker's Arrow batches as they are ({@link ArrowBatchReads}). A size below zero is
 * unknown.
 *
 * <p>Its batches are equal when they read the same thing ({@code read}: the source, the relation's options and
 * columns), as Parquet's file scans are: Spark's BatchScanExec is equal by its batch, and only equal scans let
 * Spark reuse one exchange or broadcast for a table read twice alike (a CTE referenced twice, a self-join). A
 * PySpark batch is equal to itself only, so every such read ran again.
 */
final class SizedScan implements Scan, SupportsReportStatistics {
    private final Scan scan;
    private final long sizeInBytes;
    private final boolean columnar;
    // PySpark's batch of this scan (its partitions are planned once, in Python), shared with rows()
    private final Batch[] python;
    private final String read;
    private Batch batch;

    SizedScan(Scan scan, long sizeInBytes, String read) {
        this(scan, sizeInBytes, ArrowBatchReads.available(), new Batch[1], read);
    }

    private SizedScan(Scan scan, long sizeInBytes, boolean columnar, Batch[] python, String read) {
        this.scan = scan;
        this.sizeInBytes = sizeInBytes;
        this.columnar = columnar;
        this.python = python;
        this.read = read;
    }

    /** The same scan read row by row, its partitions planned once for both. */
    SizedScan rows() {
        return new SizedScan(scan, sizeInBytes, false, python, read);
    }

    boolean columnar() {
        return columnar;
    }

    long sizeInBytes() {
        return sizeInBytes;
    }

    @Override
    public Statistics estimateStatistics() {
        return new Statistics() {
            @Override
            public OptionalLong sizeInBytes() {
                return sizeInBytes < 0 ? OptionalLong.empty() : OptionalLong.of(sizeInBytes);
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
    public synchronized Batch toBatch() {
        if (batch != null) {
            return batch;
        }
        Batch rows;
        synchronized (python) {
            if (python[0] == null) {
                python[0] = scan.toBatch();
            }
            rows = python[0];
        }
        batch = new SameReads(rows, columnar, read);
        return batch;
    }

    /** PySpark's batch, read as Arrow batches when {@code columnar}; equal to a batch of the same read. */
    private record SameReads(Batch rows, boolean columnar, String read) implements Batch {
        @Override
        public InputPartition[] planInputPartitions() {
            return rows.planInputPartitions();
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
            PartitionReaderFactory factory = rows.createReaderFactory();
            return columnar && factory instanceof PythonPartitionReaderFactory reads
                    ? new ArrowBatchReads(reads) : factory;
        }

        @Override
        public boolean equals(Object other) {
            // without a read (no key), only itself: two unknown reads may differ
            return other == this || read != null && other instanceof SameReads o
                    && columnar == o.columnar && read.equals(o.read);
        }

        @Override
        public int hashCode() {
            return read == null ? System.identityHashCode(this) : Objects.hash(read, columnar);
        }
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
        // PySpark's scan says UNSUPPORTED; the reader factory of each read says what it supports
        return columnar ? ColumnarSupportMode.PARTITION_DEFINED : scan.columnarSupportMode();
    }
}
