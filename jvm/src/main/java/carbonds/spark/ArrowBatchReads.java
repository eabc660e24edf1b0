package carbonds.spark;

import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.v2.python.PythonCustomMetric$;
import org.apache.spark.sql.execution.datasources.v2.python.PythonInputPartition;
import org.apache.spark.sql.execution.datasources.v2.python.PythonPartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource$;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.python.ArrowPythonRunner;
import org.apache.spark.sql.execution.python.MapInBatchEvaluatorFactory;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataType$;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.collection.Iterator;
import scala.collection.Iterator$;
import scala.collection.immutable.Map;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Reads a carbondata partition as the Arrow batches its Python worker sends. PySpark's own reader turns
 * every Arrow row into an UnsafeRow and updates its task metrics every 100 rows; handed over as columnar
 * batches, Spark's generated code reads the Arrow vectors straight into the query (as it reads Parquet's),
 * and the metrics move once per batch. The Python side is the same: the same read function, runner and
 * worker as PySpark's row reader, which stays the fallback ({@link #available()}).
 */
final class ArrowBatchReads implements PartitionReaderFactory {
    // PySpark's runner of a Python data source read (MapInBatchEvaluator's Arrow runner), made as PySpark makes it
    private static final String RUNNER =
            "org.apache.spark.sql.execution.python.MapInBatchEvaluatorFactory$MapInBatchEvaluator$$anon$1";
    private static final String EVALUATOR =
            "org.apache.spark.sql.execution.python.MapInBatchEvaluatorFactory$MapInBatchEvaluator";
    private static final String READ_FUNCTION = "read_from_data_source";

    private final PythonPartitionReaderFactory rows;

    ArrowBatchReads(PythonPartitionReaderFactory rows) {
        this.rows = rows;
    }

    /** Whether this PySpark has the runner this reader uses, and the session has not switched it off. */
    static boolean available() {
        if (!"true".equalsIgnoreCase(SQLConf.get().getConfString(Names.CONF_COLUMNAR, "true").trim())) {
            return false;
        }
        try {
            return runner() != null;
        } catch (ReflectiveOperationException | LinkageError e) {
            return false;
        }
    }

    private static Constructor<?> runner() throws ReflectiveOperationException {
        Class<?> type = Class.forName(RUNNER);
        if (!ArrowPythonRunner.class.isAssignableFrom(type)) {
            return null;
        }
        return type.getConstructor(Class.forName(EVALUATOR), int[][].class);
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        return rows.createReader(partition);
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return true;
    }

    @Override
    @SuppressWarnings("unchecked")
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        UserDefinedPythonDataSource source =
                rows.org$apache$spark$sql$execution$datasources$v2$python$PythonPartitionReaderFactory$$source;
        StructType schema =
                rows.org$apache$spark$sql$execution$datasources$v2$python$PythonPartitionReaderFactory$$outputSchema;
        Map<String, SQLMetric> metrics = PythonCustomMetric$.MODULE$.pythonMetrics();
        MapInBatchEvaluatorFactory factory = source.createMapInBatchEvaluatorFactory(
                rows.org$apache$spark$sql$execution$datasources$v2$python$PythonPartitionReaderFactory$$pickledReadFunc,
                READ_FUNCTION, UserDefinedPythonDataSource$.MODULE$.readInputSchema(), schema, metrics,
                rows.org$apache$spark$sql$execution$datasources$v2$python$PythonPartitionReaderFactory$$jobArtifactUUID,
                rows.org$apache$spark$sql$execution$datasources$v2$python$PythonPartitionReaderFactory$$sessionUUID);
        ArrowPythonRunner runner;
        try {
            Constructor<?> make = runner();
            if (make == null) {
                throw new ClassNotFoundException(RUNNER + " is no ArrowPythonRunner in this PySpark");
            }
            runner = (ArrowPythonRunner) make.newInstance(factory.createEvaluator(), new int[][] {{0}});
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("carbondata scan: cannot start PySpark's Arrow runner " + RUNNER, e);
        }
        PythonInputPartition part = (PythonInputPartition) partition;
        // the runner's input: one row holding the struct the read function takes (the pickled partition)
        InternalRow input = new GenericInternalRow(new Object[] {
                new GenericInternalRow(new Object[] {part.pickedPartition()})});
        TaskContext context = TaskContext.get();
        Iterator<Iterator<InternalRow>> in = Iterator$.MODULE$.single(Iterator$.MODULE$.single(input));
        Iterator<ColumnarBatch> out = (Iterator<ColumnarBatch>) runner.compute(in, context.partitionId(), context);
        return new Batches(out, schema, metrics);
    }

    /** The runner's batches, each one struct column, handed on as the struct's columns. */
    private static final class Batches implements PartitionReader<ColumnarBatch> {
        private final Iterator<ColumnarBatch> out;
        private final StructType schema;
        private final Map<String, SQLMetric> metrics;
        private ColumnarBatch current;

        Batches(Iterator<ColumnarBatch> out, StructType schema, Map<String, SQLMetric> metrics) {
            this.out = out;
            this.schema = schema;
            this.metrics = metrics;
        }

        @Override
        public boolean next() {
            if (!out.hasNext()) {
                return false;
            }
            ColumnarBatch batch = out.next();
            DataType sent = batch.column(0).dataType();
            if (!DataType$.MODULE$.equalsIgnoreCompatibleNullability(sent, schema)) {
                throw new IllegalStateException("carbondata scan: the Python reader sent columns " + sent.simpleString()
                        + " where " + schema.simpleString() + " were expected");
            }
            ArrowColumnVector struct = (ArrowColumnVector) batch.column(0);
            ColumnVector[] columns = new ColumnVector[schema.size()];
            for (int i = 0; i < columns.length; i++) {
                columns[i] = struct.getChild(i);
            }
            current = new ColumnarBatch(columns, batch.numRows());
            return true;
        }

        @Override
        public ColumnarBatch get() {
            return current;
        }

        @Override
        public void close() {
            // the runner releases its Arrow memory when the task completes, as PySpark's row reader relies on
        }

        @Override
        public CustomTaskMetric[] currentMetricsValues() {
            List<CustomTaskMetric> values = new ArrayList<>();
            for (java.util.Map.Entry<String, SQLMetric> e : CollectionConverters.asJava(metrics).entrySet()) {
                String name = e.getKey();
                long value = e.getValue().value();
                values.add(new CustomTaskMetric() {
                    @Override
                    public String name() {
                        return name;
                    }

                    @Override
                    public long value() {
                        return value;
                    }
                });
            }
            return values.toArray(new CustomTaskMetric[0]);
        }
    }
}
