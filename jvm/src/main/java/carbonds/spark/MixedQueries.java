package carbonds.spark;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.CommandExecutionMode$;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

/**
 * carbon_ds.sql's pass-through for queries that only read mixed tables, in one JVM call: when the session's
 * {@link NativeUnion} unions every carbondata relation of a query itself, carbon_ds.sql has nothing to
 * rewrite and only plans the query at call time (so it reads the tables as they are then). Deciding that
 * from Python walks the analyzed plan through a few dozen py4j calls; here it is one.
 */
public final class MixedQueries {
    private MixedQueries() {
    }

    /**
     * The DataFrame of {@code text}, already planned, when it is a query (no command, no write) whose every
     * carbondata relation names one table path that has external segments, and the extension's union rule is
     * on; otherwise null, and the caller analyses the statement as before. Any error gives null too: the
     * caller's own path reports it as it always has.
     */
    public static Dataset<Row> planned(SparkSession session, String text) {
        if (!NativeUnion.enabled()) {
            return null;
        }
        try {
            LogicalPlan parsed = session.sessionState().sqlParser().parsePlan(text);
            QueryExecution qe = session.sessionState().executePlan(parsed, CommandExecutionMode$.MODULE$.SKIP());
            LogicalPlan analyzed = qe.analyzed();
            List<DataSourceV2Relation> relations = PruneCarbonRelations.carbonRelations(analyzed);
            if (analyzed instanceof Command || relations.isEmpty()) {
                return null;
            }
            Configuration conf = session.sparkContext().hadoopConfiguration();
            Map<String, byte[]> statuses = new HashMap<>();
            for (DataSourceV2Relation rel : relations) {
                String path = rel.options().get("path");
                if (path == null || PruneCarbonRelations.readsRowPositions(rel)) {
                    return null;
                }
                byte[] status = statuses.containsKey(path) ? statuses.get(path) : NativeUnion.tableStatus(conf, path);
                if (status == null || !NativeUnion.hasExternal(status)) {
                    return null;
                }
                statuses.put(path, status);
            }
            // the union rule plans from the tablestatus read here: one read, and the snapshot decided on;
            // small reads become local relations, as carbon_ds.sql's own do (rows as of this call)
            return NativeUnion.withStatuses(statuses, () -> ReadPlans.withLocalReads(() -> {
                Dataset<Row> df = Dataset.ofRows(session, analyzed);
                df.queryExecution().executedPlan();
                return df;
            }));
        } catch (Exception e) {
            return null;
        }
    }
}
