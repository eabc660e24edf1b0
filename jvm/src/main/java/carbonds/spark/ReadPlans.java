package carbonds.spark;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Base64;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.arrow.ArrowConverters$;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceReadInfo;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;

/**
 * Plans the reads of the carbondata relations one optimization run made, in one Python call.
 *
 * <p>Spark plans each Python data source read with two calls into Python workers (make the data source,
 * then its reader and input partitions), tens of milliseconds each: a query over eight relations paid
 * sixteen. Here one schema call carries every relation's options and schema (option
 * {@code carbon_ds.plan_reads}); the Python side (carbon_ds.spark.bridge.read_plans) answers each with the stream
 * Spark's own planning worker writes, read here by {@link PythonDataSourceReadInfo#receive} and set on the
 * relation's source, so Spark makes neither call. A relation without an answer, or any failure here, is
 * planned the usual way, where Spark reports its errors as usual. An answer the Python side marks as kept
 * (a table's carbondata files only) is reused for the same request while the table's tablestatus and schema
 * bytes are unchanged ({@link PlanCache}), so a repeated query of an unchanged table makes no Python call.
 */
final class ReadPlans {
    private static final Method IPC_READER = ipcReader();

    record Made(PythonDataSourceV2 source, DataSourceV2Relation relation) {
    }

    private ReadPlans() {
    }

    static boolean enabled() {
        return "true".equalsIgnoreCase(SQLConf.get().getConfString(Names.CONF_PLAN_READS, "true").trim());
    }

    /**
     * Plans the reads; returns the relations whose rows the Python side knew at planning, with its answer:
     * a read of no column counted from metadata (index files, recorded footer counts), a read whose plan
     * keeps no file (0 rows), or a partitioned table's partition column alone (its values and their rows).
     * The caller replaces those by rows Spark makes ({@link KnownRows}), so {@code count(*)}, a read every
     * blocklet of which the filter rules out and {@code GROUP BY} the partition column run no Python task.
     */
    static Map<DataSourceV2Relation, KnownRows.Known> plan(List<Made> made, SparkSession session, boolean deterministic) {
        Map<DataSourceV2Relation, KnownRows.Known> counted = new IdentityHashMap<>();
        if (made.isEmpty()) {
            return counted;
        }
        if (!enabled()) {
            sizesOnly(made);  // Spark plans each read itself; the sizes still come from the Python side
            return counted;
        }
        try {
            Configuration hadoop = session.sparkContext().hadoopConfiguration();
            Bridge.ReadSettings settings = settings(SQLConf.get(), deterministic, false);
            String settingsText = Bridge.write(settings);
            Bridge.ReadAnswer[] answers = new Bridge.ReadAnswer[made.size()];
            String[] keys = new String[made.size()];
            String[] states = new String[made.size()];
            List<Bridge.ReadRequest> asked = new ArrayList<>();
            List<String> verified = new ArrayList<>();
            List<Integer> asking = new ArrayList<>();
            for (int i = 0; i < made.size(); i++) {
                Bridge.ReadRequest read = read(made.get(i));
                String path = made.get(i).relation().options().get("path");
                long checked = System.currentTimeMillis();  // the table is at states[i] from then at least
                states[i] = PlanCache.tableState(hadoop, path);
                keys[i] = path + "\n" + settingsText + "\n" + Bridge.write(read);
                answers[i] = states[i] == null ? null : PlanCache.keptRead(keys[i], states[i]);
                if (answers[i] != null && answers[i].plan() != null) {
                    verified.add(answers[i].plan() + "=" + checked);
                }
                if (answers[i] == null) {
                    asking.add(i);
                    asked.add(read);
                }
            }
            if (!asking.isEmpty()) {
                List<Bridge.ReadAnswer> got = ask(made.get(asking.get(0)).relation(), settings, asked);
                for (int j = 0; j < asking.size() && j < got.size(); j++) {
                    int i = asking.get(j);
                    answers[i] = got.get(j);
                    if (states[i] != null && answers[i] != null && answers[i].keep()) {
                        PlanCache.keepRead(keys[i], states[i], answers[i]);
                    }
                }
            }
            if (!verified.isEmpty()) {
                // the tasks of this query (jobs take the planning thread's local properties) read a reused
                // plan as the version their query began with (carbon_ds.spark.source.query_version reads VERIFIED_PLANS)
                session.sparkContext().setLocalProperty(Names.VERIFIED_PLANS, String.join(",", verified));
            }
            for (int i = 0; i < made.size(); i++) {
                Bridge.ReadAnswer answer = answers[i];
                if (answer == null) {
                    continue;
                }
                DataSourceV2Relation rel = made.get(i).relation();
                if (answer.bytes() != null && rel.table() instanceof SizedPythonTable sized) {
                    sized.storedBytes(answer.bytes());
                }
                if (answer.read() != null) {
                    // with rows read at planning too: the read of the relation they replace, if it runs again
                    byte[] stream = Base64.getDecoder().decode(answer.read());
                    made.get(i).source().setReadInfo(
                            PythonDataSourceReadInfo.receive(new DataInputStream(new ByteArrayInputStream(stream))));
                }
                if (answer.arrow() != null) {
                    // only rows that stay right while the table's state does: the scan checks that state
                    List<? extends Attribute> output = PruneCarbonRelations.list(rel.output());
                    UnsafeRow[] rows = states[i] == null || !answer.keep() ? null
                            : PlanCache.keptRows(keys[i], states[i], answer, () -> arrowRows(answer.arrow(), output));
                    if (rows != null) {
                        counted.put(rel, new KnownRows.Known(answer, rows, states[i]));
                    }
                } else if (answer.rows() != null) {
                    long rows = answer.rows();
                    // rows of no column: any count; rows with columns: only the empty read
                    if (rows == 0 || rows > 0 && rel.output().isEmpty()) {
                        counted.put(rel, new KnownRows.Known(answer, null, null));
                    }
                } else if (partitionValues() && KnownRows.valid(answer, rel)) {
                    counted.put(rel, new KnownRows.Known(answer, null, null));
                }
            }
        } catch (Exception | LinkageError e) {
            // a PySpark whose planning protocol differs, or a failed call: Spark plans each read itself
            counted.clear();
        }
        return counted;
    }

    /** Asks the Python side for the stored bytes of each read only (option planReads off), for the sizes. */
    private static void sizesOnly(List<Made> made) {
        try {
            List<Bridge.ReadRequest> asked = new ArrayList<>();
            for (Made m : made) {
                asked.add(read(m));
            }
            List<Bridge.ReadAnswer> got = ask(made.get(0).relation(), settings(SQLConf.get(), false, true), asked);
            for (int i = 0; i < made.size() && i < got.size(); i++) {
                if (got.get(i) != null && got.get(i).bytes() != null
                        && made.get(i).relation().table() instanceof SizedPythonTable sized) {
                    sized.storedBytes(got.get(i).bytes());
                }
            }
        } catch (Exception | LinkageError e) {
            // no size: Spark plans the relations as it would without one
        }
    }

    /**
     * The rows of a small read the Python side read at planning (an Arrow IPC stream), as Spark's rows, or
     * null when their types are not exactly those of {@code output} (then the relation's tasks read it).
     * Spark's reader of such a stream is found by name: its parameters differ between releases.
     */
    @SuppressWarnings("unchecked")
    static UnsafeRow[] arrowRows(String base64, List<? extends Attribute> output) throws Exception {
        Method reader = IPC_READER;
        if (reader == null) {
            return null;
        }
        byte[] stream = Base64.getDecoder().decode(base64);
        Object[] args = reader.getParameterCount() == 1 ? new Object[] {stream} : new Object[] {stream, null};
        Tuple2<scala.collection.Iterator<InternalRow>, StructType> read =
                (Tuple2<scala.collection.Iterator<InternalRow>, StructType>) reader.invoke(ArrowConverters$.MODULE$, args);
        scala.collection.Iterator<InternalRow> it = read._1();
        try {
            StructField[] fields = read._2().fields();
            if (fields.length != output.size()) {
                return null;
            }
            for (int i = 0; i < fields.length; i++) {
                if (!fields[i].dataType().catalogString().equals(output.get(i).dataType().catalogString())) {
                    return null;
                }
            }
            // as UnsafeRows of the output's types (equal to the stream's): what a local table scan runs on
            UnsafeProjection unsafe = UnsafeProjection.create(read._2());
            List<UnsafeRow> rows = new ArrayList<>();
            while (it.hasNext()) {
                rows.add(unsafe.apply(it.next()).copy());  // the projection reuses its row
            }
            return rows.toArray(new UnsafeRow[0]);
        } finally {
            if (it instanceof AutoCloseable closeable) {  // Spark's CloseableIterator
                closeable.close();
            }
        }
    }

    /** ArrowConverters.fromIPCStream(bytes) or (bytes, context), or null when this Spark has neither. */
    private static Method ipcReader() {
        Method found = null;
        for (Method m : ArrowConverters$.class.getMethods()) {
            Class<?>[] p = m.getParameterTypes();
            if (m.getName().equals("fromIPCStream") && p.length >= 1 && p[0] == byte[].class
                    && (p.length == 1 || p.length == 2 && p[1] == org.apache.spark.TaskContext.class)
                    && (found == null || p.length < found.getParameterCount())) {
                found = m;
            }
        }
        return found;
    }

    /** The session's limit for rows read at planning (carbon_ds.spark.local): 0 when off or not a number. */
    static long localBytes(SQLConf conf) {
        try {
            return Math.max(0L, Long.parseLong(conf.getConfString(Names.CONF_LOCAL_BYTES, String.valueOf(4L << 20)).trim()));
        } catch (NumberFormatException e) {
            return 0L;  // carbon_ds.read names the bad value; here the tasks read
        }
    }

    /** Conf {@code carbon_ds.read.partitionValues}: {@code false} reads a partition column from the files. */
    private static boolean partitionValues() {
        return !"false".equalsIgnoreCase(SQLConf.get().getConfString(Names.CONF_PARTITION_VALUES, "true").trim());
    }

    private static Bridge.ReadSettings settings(SQLConf conf, boolean local, boolean bytesOnly) {
        return new Bridge.ReadSettings(conf.arrowMaxRecordsPerBatch(), conf.pythonFilterPushDown(),
                conf.pysparkBinaryAsBytes(), local ? localBytes(conf) : 0L, bytesOnly);
    }

    /** A relation's read request: its options (sorted, so equal reads make equal keys) and schema. */
    private static Bridge.ReadRequest read(Made m) throws java.io.IOException {
        return new Bridge.ReadRequest(new TreeMap<>(m.relation().options().asCaseSensitiveMap()),
                Bridge.JSON.readTree(m.relation().table().schema().json()));
    }

    /** The answers to {@code reads}, one per read (an empty list when the Python side answered null, or with
     * another version). */
    private static List<Bridge.ReadAnswer> ask(DataSourceV2Relation any, Bridge.ReadSettings settings,
                                               List<Bridge.ReadRequest> reads) throws java.io.IOException {
        Bridge.PlanReadsAnswer got = SchemaCall.ask(any, Names.PLAN_READS_OPTION,
                new Bridge.PlanReadsRequest(settings, reads, Bridge.VERSION), Bridge.PlanReadsAnswer.class);
        return got == null || got.answers() == null ? List.of() : got.answers();
    }
}
