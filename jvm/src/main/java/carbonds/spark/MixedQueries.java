package carbonds.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.CommandExecutionMode$;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;

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
            List<String> paths = new ArrayList<>();
            if (analyzed instanceof Command || !tablePaths(analyzed, paths) || paths.isEmpty()) {
                return null;
            }
            Configuration conf = session.sparkContext().hadoopConfiguration();
            for (String path : paths) {
                byte[] status = NativeUnion.tableStatus(conf, path);
                if (status == null || !NativeUnion.hasExternal(status)) {
                    return null;
                }
            }
            Dataset<Row> df = Dataset.ofRows(session, analyzed);
            df.queryExecution().executedPlan();
            return df;
        } catch (Exception e) {
            return null;
        }
    }

    /** Adds the table path of every carbondata relation of {@code plan} (subqueries too) to {@code out};
     * false when one of them has no single {@code path} option or reads row positions (DELETE/UPDATE). */
    private static boolean tablePaths(LogicalPlan plan, List<String> out) {
        if (plan instanceof DataSourceV2Relation rel && rel.table() instanceof PythonTable table
                && PruneCarbonRelations.SOURCE.equalsIgnoreCase(table.name())) {
            String path = rel.options().get("path");
            String positions = rel.options().getOrDefault("with_row_positions", "false");
            if (path == null || !"false".equalsIgnoreCase(positions.trim())) {
                return false;
            }
            out.add(path);
            return true;
        }
        for (LogicalPlan child : PruneCarbonRelations.list(plan.children())) {
            if (!tablePaths(child, out)) {
                return false;
            }
        }
        for (LogicalPlan sub : PruneCarbonRelations.list(plan.subqueries())) {
            if (!tablePaths(sub, out)) {
                return false;
            }
        }
        return true;
    }
}
