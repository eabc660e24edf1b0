package carbonds.spark;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.CommandExecutionMode$;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceReadInfo;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;

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
        if (!PruneCarbonRelations.switchedOn()) {
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

    /**
     * What each carbondata relation of {@code df}'s optimized plan reads, subqueries included, in plan order: a
     * JSON list of {@code {"path", "columns", "types", "filter", "pruned", "unscaled", "local", "partitions"}}.
     * {@code columns}/{@code types}: the attributes the relation declares (an unscaled decimal as its bigint);
     * {@code filter}: its filter option or null; {@code pruned}: made by {@link PruneCarbonRelations};
     * {@code unscaled}: the {@code name:precision:scale} of each decimal read as its unscaled bigint;
     * {@code local}: rows read at planning ({@link KnownRows}, a local table scan); {@code partitions}: the input
     * partitions the shared planning call ({@link ReadPlans}) gave it, or null where Spark's own planning calls
     * will make them. A read {@link KnownRows} answered from metadata (a count, an empty read) is no relation
     * any more and has no entry. For tests and diagnostics: one JVM call, no Python walk of the plan.
     */
    public static String reads(Dataset<Row> df) throws ReflectiveOperationException {
        return describe(df.queryExecution().optimizedPlan());
    }

    /** {@link #reads(Dataset)} of the statement {@code text}, planned but not run (an INSERT writes nothing). */
    public static String reads(SparkSession session, String text) throws Exception {
        LogicalPlan parsed = session.sessionState().sqlParser().parsePlan(text);
        return describe(session.sessionState().executePlan(parsed, CommandExecutionMode$.MODULE$.SKIP()).optimizedPlan());
    }

    private static String describe(LogicalPlan plan) throws ReflectiveOperationException {
        List<LogicalPlan> found = new ArrayList<>();
        collect(plan, found);
        ArrayNode out = SchemaCall.JSON.createArrayNode();
        for (LogicalPlan node : found) {
            DataSourceV2Relation rel = relation(node);
            ObjectNode entry = out.addObject();
            entry.put("path", rel.options().get("path"));
            ArrayNode columns = entry.putArray("columns");
            ArrayNode types = entry.putArray("types");
            PruneCarbonRelations.list(node.output()).forEach(a -> {
                columns.add(a.name());
                types.add(a.dataType().simpleString());
            });
            entry.put(Names.FILTER_OPTION, PruneCarbonRelations.filterOption(rel, null));
            entry.put("exact_filter", rel.options().get(Names.EXACT_FILTER_OPTION));
            entry.put("pruned", rel.options().containsKey(Names.PRUNED_OPTION));
            ArrayNode unscaled = entry.putArray("unscaled");
            String option = rel.options().get(Names.UNSCALED_OPTION);
            if (option != null && !option.isBlank()) {
                for (String column : option.split(",")) {
                    unscaled.add(column.trim());
                }
            }
            entry.put("local", rel.table() instanceof ViewRows);
            Integer partitions = plannedPartitions(rel);
            if (partitions == null) {
                entry.putNull("partitions");
            } else {
                entry.put("partitions", partitions);
            }
        }
        return out.toString();
    }

    /** The relation a leaf reads: itself, or the relation of the scan Spark's scan push-down made of it. */
    private static DataSourceV2Relation relation(LogicalPlan leaf) {
        return leaf instanceof DataSourceV2ScanRelation scan ? scan.relation() : (DataSourceV2Relation) leaf;
    }

    /** The carbondata leaves of {@code plan} and its subqueries (rows read at planning included): relations or
     * the scans made of them, whose output is what is read. */
    private static void collect(LogicalPlan plan, List<LogicalPlan> out) {
        DataSourceV2Relation rel = plan instanceof DataSourceV2Relation r ? r
                : plan instanceof DataSourceV2ScanRelation scan ? scan.relation() : null;
        if (rel != null
                && (PruneCarbonRelations.isCarbon(rel) || rel.table() instanceof ViewRows rows && rows.check() != null)) {
            out.add(plan);
            return;
        }
        for (LogicalPlan child : PruneCarbonRelations.list(plan.children())) {
            collect(child, out);
        }
        for (LogicalPlan sub : PruneCarbonRelations.list(plan.subqueries())) {
            collect(sub, out);
        }
    }

    /** The input partitions the relation's source already holds (PythonDataSourceV2's private readInfo). */
    private static Integer plannedPartitions(DataSourceV2Relation rel) throws ReflectiveOperationException {
        if (!(rel.table() instanceof PythonTable)) {
            return null;
        }
        Field source = PythonTable.class.getDeclaredField("ds");
        Field info = PythonDataSourceV2.class.getDeclaredField("readInfo");
        source.setAccessible(true);
        info.setAccessible(true);
        PythonDataSourceReadInfo read = (PythonDataSourceReadInfo) info.get(source.get(rel.table()));
        return read == null ? null : read.partitions().size();
    }
}
