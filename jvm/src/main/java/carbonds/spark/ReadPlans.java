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

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
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
    /** The key of a {@link KnownRows} answer holding rows read at planning. */
    static final String LOCAL = "local";
    /** The key of the table's state ({@link PlanCache#tableState}) the rows of a {@link #LOCAL} answer are of. */
    static final String STATE = "state";
    private static final Method IPC_READER = ipcReader();
    private static final ObjectMapper JSON = SchemaCall.JSON;

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
    static Map<DataSourceV2Relation, JsonNode> plan(List<Made> made, SparkSession session, boolean deterministic) {
        Map<DataSourceV2Relation, JsonNode> counted = new IdentityHashMap<>();
        if (made.isEmpty()) {
            return counted;
        }
        if (!enabled()) {
            sizesOnly(made);  // Spark plans each read itself; the sizes still come from the Python side
            return counted;
        }
        try {
            Configuration hadoop = session.sparkContext().hadoopConfiguration();
            ObjectNode settings = settings(SQLConf.get(), deterministic);
            JsonNode[] answers = new JsonNode[made.size()];
            String[] keys = new String[made.size()];
            String[] states = new String[made.size()];
            ArrayNode asked = JSON.createArrayNode();
            List<String> verified = new ArrayList<>();
            List<Integer> asking = new ArrayList<>();
            for (int i = 0; i < made.size(); i++) {
                ObjectNode read = read(made.get(i));
                String path = made.get(i).relation().options().get("path");
                long checked = System.currentTimeMillis();  // the table is at states[i] from then at least
                states[i] = PlanCache.tableState(hadoop, path);
                keys[i] = path + "\n" + settings + "\n" + read;
                answers[i] = states[i] == null ? null : PlanCache.keptRead(keys[i], states[i]);
                if (answers[i] != null && answers[i].path("plan").isTextual()) {
                    verified.add(answers[i].get("plan").asText() + "=" + checked);
                }
                if (answers[i] == null) {
                    asking.add(i);
                    asked.add(read);
                }
            }
            if (!asking.isEmpty()) {
                JsonNode got = ask(made.get(asking.get(0)).relation(), settings, asked);
                for (int j = 0; j < asking.size() && j < got.size(); j++) {
                    int i = asking.get(j);
                    answers[i] = got.get(j);
                    if (states[i] != null && answers[i] != null && answers[i].path("keep").asBoolean(false)) {
                        PlanCache.keepRead(keys[i], states[i], answers[i]);
                    }
                }
            }
            if (!verified.isEmpty()) {
                // the tasks of this query (jobs take the planning thread's local properties) read a reused
                // plan as the version their query began with (carbon_ds.spark.source.snapshot.VERIFIED)
                session.sparkContext().setLocalProperty(Names.VERIFIED_PLANS, String.join(",", verified));
            }
            for (int i = 0; i < made.size(); i++) {
                JsonNode answer = answers[i];
                if (answer != null && answer.path("bytes").canConvertToLong()
                        && made.get(i).relation().table() instanceof SizedPythonTable sized) {
                    sized.storedBytes(answer.get("bytes").asLong());
                }
                if (answer != null && answer.path("read").isTextual()) {
                    // with rows read at planning too: the read of the relation they replace, if it runs again
                    byte[] stream = Base64.getDecoder().decode(answer.get("read").asText());
                    made.get(i).source().setReadInfo(
                            PythonDataSourceReadInfo.receive(new DataInputStream(new ByteArrayInputStream(stream))));
                }
                if (answer != null && answer.path("arrow").isTextual()) {
                    // only rows that stay right while the table's state does: the scan checks that state
                    List<InternalRow> rows = states[i] == null || !answer.path("keep").asBoolean(false) ? null
                            : arrowRows(answer.get("arrow").asText(),
                                    PruneCarbonRelations.list(made.get(i).relation().output()));
                    if (rows != null) {
                        ObjectNode local = JSON.createObjectNode();
                        local.set(LOCAL, JSON.getNodeFactory().pojoNode(rows));
                        local.put(STATE, states[i]);
                        counted.put(made.get(i).relation(), local);
                    }
                } else if (answer != null && answer.path("rows").canConvertToLong()) {
                    long rows = answer.get("rows").asLong();
                    // rows of no column: any count; rows with columns: only the empty read
                    if (rows == 0 || rows > 0 && made.get(i).relation().output().isEmpty()) {
                        counted.put(made.get(i).relation(), answer);
                    }
                } else if (answer != null && partitionValues() && KnownRows.valid(answer, made.get(i).relation())) {
                    counted.put(made.get(i).relation(), answer);
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
            ObjectNode settings = settings(SQLConf.get(), false);
            settings.put("bytesOnly", true);
            ArrayNode asked = JSON.createArrayNode();
            for (Made m : made) {
                asked.add(read(m));
            }
            JsonNode got = ask(made.get(0).relation(), settings, asked);
            for (int i = 0; i < made.size() && i < got.size(); i++) {
                if (got.get(i).path("bytes").canConvertToLong()
                        && made.get(i).relation().table() instanceof SizedPythonTable sized) {
                    sized.storedBytes(got.get(i).get("bytes").asLong());
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
    static List<InternalRow> arrowRows(String base64, List<? extends Attribute> output) throws Exception {
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
            List<InternalRow> rows = new ArrayList<>();
            while (it.hasNext()) {
                rows.add(it.next().copy());  // the iterator reuses its row
            }
            return rows;
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

    private static ObjectNode settings(SQLConf conf, boolean local) {
        ObjectNode settings = JSON.createObjectNode();
        settings.put("maxArrowBatchSize", conf.arrowMaxRecordsPerBatch());
        settings.put("filterPushdown", conf.pythonFilterPushDown());
        settings.put("binaryAsBytes", conf.pysparkBinaryAsBytes());
        settings.put("localBytes", local ? localBytes(conf) : 0L);
        return settings;
    }

    /** A relation's read request: its options (sorted, so equal reads make equal keys) and schema. */
    private static ObjectNode read(Made m) throws java.io.IOException {
        ObjectNode read = JSON.createObjectNode();
        ObjectNode options = read.putObject("options");
        new TreeMap<>(m.relation().options().asCaseSensitiveMap()).forEach(options::put);
        read.set("schema", JSON.readTree(m.relation().table().schema().json()));
        return read;
    }

    private static JsonNode ask(DataSourceV2Relation any, ObjectNode settings, ArrayNode reads)
            throws java.io.IOException {
        ObjectNode request = JSON.createObjectNode();
        request.set("settings", settings);
        request.set("reads", reads);
        return SchemaCall.ask(any, Names.PLAN_READS_OPTION, request);
    }
}
