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
 * carbon_ds.sql's queries in a session whose extension rules are on, in one JVM call: the statement is
 * Spark's as written, this extension's rules plan it, and it is planned at the call (so it reads the tables
 * as they are then, small reads included, which {@link ReadPlans} reads at planning as it does for plain
 * {@code spark.sql}, and which stay rows here where plain {@code spark.sql} reads them in its result stage:
 * {@link CheckedLocalTableScanExec.Exposed}). Nothing is walked from Python.
 */
public final class PlannedQueries {
    private PlannedQueries() {
    }

    /**
     * The DataFrame of {@code text}, already planned, when it is a query (no command, no write) reading at least
     * one carbondata relation and the extension's rules are on; otherwise null, and the caller hands the
     * statement to {@code spark.sql}. Any error gives null too: {@code spark.sql} reports it as it always has.
     */
    public static Dataset<Row> planned(SparkSession session, String text) {
        if (!PruneCarbonRelations.enabled()) {
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
            Map<String, LiveStatus.Metadata> statuses = new HashMap<>();
            for (DataSourceV2Relation rel : relations) {
                String path = rel.options().get("path");
                if (path != null && !statuses.containsKey(path)) {
                    LiveStatus.Metadata metadata = NativeUnion.metadata(conf, path);
                    if (metadata != null) {
                        statuses.put(path, metadata);
                    }
                }
            }
            // the union rule plans from the metadata read here: one read, and the snapshot decided on
            return NativeUnion.withStatuses(statuses, () -> CheckedLocalTableScanExec.asOfCall(() -> {
                Dataset<Row> df = Dataset.ofRows(session, analyzed);
                df.queryExecution().executedPlan();
                return df;
            }));
        } catch (Exception e) {
            return null;
        }
    }
}
