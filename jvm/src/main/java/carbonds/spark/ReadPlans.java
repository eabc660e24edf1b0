package carbonds.spark;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.util.Base64;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceReadInfo;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.internal.SQLConf;

/**
 * Plans the reads of the carbondata relations one optimization run made, in one Python call.
 *
 * <p>Spark plans each Python data source read with two calls into Python workers (make the data source,
 * then its reader and input partitions), tens of milliseconds each: a query over eight relations paid
 * sixteen. Here one schema call carries every relation's options and schema (option
 * {@code carbon_ds.plan_reads}); the Python side (carbon_ds.spark.read_plans) answers each with the stream
 * Spark's own planning worker writes, read here by {@link PythonDataSourceReadInfo#receive} and set on the
 * relation's source, so Spark makes neither call. A relation without an answer, or any failure here, is
 * planned the usual way, where Spark reports its errors as usual.
 */
final class ReadPlans {
    static final String OPTION = "carbon_ds.plan_reads";
    /** Conf: {@code false} leaves every read to Spark's own planning calls. */
    static final String CONF = "carbon_ds.extension.planReads";
    private static final ObjectMapper JSON = SchemaCall.JSON;

    record Made(PythonDataSourceV2 source, DataSourceV2Relation relation) {
    }

    private ReadPlans() {
    }

    static boolean enabled() {
        return "true".equalsIgnoreCase(SQLConf.get().getConfString(CONF, "true").trim());
    }

    /**
     * Plans the reads; returns the relations whose rows the Python side knew at planning, with their count:
     * a read of no column counted from metadata (index files, recorded footer counts), or a read whose plan
     * keeps no file (0). The caller replaces those by a range of that many empty rows or an empty relation,
     * so {@code count(*)} and a read every blocklet of which the filter rules out run no Python task.
     */
    static Map<DataSourceV2Relation, Long> plan(List<Made> made) {
        Map<DataSourceV2Relation, Long> counted = new IdentityHashMap<>();
        if (made.isEmpty() || !enabled()) {
            return counted;
        }
        try {
            JsonNode answers = ask(made);
            for (int i = 0; i < made.size() && i < answers.size(); i++) {
                JsonNode answer = answers.get(i);
                if (answer != null && answer.isTextual()) {
                    byte[] stream = Base64.getDecoder().decode(answer.asText());
                    made.get(i).source().setReadInfo(
                            PythonDataSourceReadInfo.receive(new DataInputStream(new ByteArrayInputStream(stream))));
                } else if (answer != null && answer.path("rows").canConvertToLong()) {
                    long rows = answer.get("rows").asLong();
                    // rows of no column: any count; rows with columns: only the empty read
                    if (rows == 0 || rows > 0 && made.get(i).relation().output().isEmpty()) {
                        counted.put(made.get(i).relation(), rows);
                    }
                }
            }
        } catch (Exception | LinkageError e) {
            // a PySpark whose planning protocol differs, or a failed call: Spark plans each read itself
            counted.clear();
        }
        return counted;
    }

    private static JsonNode ask(List<Made> made) throws java.io.IOException {
        SQLConf conf = SQLConf.get();
        ObjectNode request = JSON.createObjectNode();
        ObjectNode settings = request.putObject("settings");
        settings.put("maxArrowBatchSize", conf.arrowMaxRecordsPerBatch());
        settings.put("filterPushdown", conf.pythonFilterPushDown());
        settings.put("binaryAsBytes", conf.pysparkBinaryAsBytes());
        ArrayNode reads = request.putArray("reads");
        for (Made m : made) {
            ObjectNode read = reads.addObject();
            ObjectNode options = read.putObject("options");
            m.relation().options().asCaseSensitiveMap().forEach(options::put);
            read.set("schema", JSON.readTree(m.relation().table().schema().json()));
        }
        return SchemaCall.ask(made.get(0).relation(), OPTION, request);
    }
}
