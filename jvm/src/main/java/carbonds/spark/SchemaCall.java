package carbonds.spark;

import java.util.HashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A question to the Python data source through its schema call, the one planner call the JVM can make: the
 * request travels as a JSON option beside the relation's own options, the answer (carbon_ds.spark.source.datasource
 * {@code _answer}) as JSON in the metadata of the one field returned.
 */
final class SchemaCall {
    static final ObjectMapper JSON = new ObjectMapper();

    private SchemaCall() {
    }

    /** {@code request} (a {@link Bridge} message) asked through option {@code option}; the answer as {@code answer},
     * or null when the Python side answers null or with another version ({@link Bridge#answer}). */
    static <A extends Bridge.Versioned> A ask(DataSourceV2Relation rel, String option, Object request, Class<A> answer)
            throws java.io.IOException {
        return Bridge.answer(call(rel, option, Bridge.write(request)), answer);
    }

    private static String call(DataSourceV2Relation rel, String option, String request) {
        Map<String, String> options = new HashMap<>(rel.options().asCaseSensitiveMap());
        options.put(option, request);
        PythonDataSourceV2 source = new PythonDataSourceV2();
        source.setShortName(((PythonTable) rel.table()).name());
        StructType answer = source.inferSchema(new CaseInsensitiveStringMap(options));
        return answer.fields()[0].metadata().getString(option);
    }
}
