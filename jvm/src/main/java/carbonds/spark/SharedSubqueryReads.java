package carbonds.spark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.expressions.ScalarSubquery;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Lets Spark merge scalar subqueries that read one carbondata table with one filter, as it does over Parquet.
 *
 * <p>Spark optimizes each subquery before the plan around it, so {@link PruneCarbonRelations} gives each
 * subquery's relation a table of its own that declares only the columns that subquery reads. Relations that
 * differ never compare equal, and Spark's MergeScalarSubqueries (which runs after this rule) then scans the
 * table once per subquery: TPC-DS Q9's fifteen subqueries over five filters scanned store_sales fifteen times.
 * Here, on the enclosing plan, the relations of its non-correlated scalar subqueries that make the same read
 * (every option but the columns) get one new table declaring the union of their columns, in one order, so
 * they compare equal; each keeps its own attributes, and a column it did not read gets a new one. The new
 * table's read is planned once ({@link ReadPlans}); reading a column more never changes an answer.
 */
final class SharedSubqueryReads {
    private SharedSubqueryReads() {
    }

    /** {@code plan} with the reads of its scalar subqueries shared where they make the same read. */
    static LogicalPlan share(LogicalPlan plan, SparkSession session) {
        Map<String, List<DataSourceV2ScanRelation>> groups = new LinkedHashMap<>();
        collect(plan, groups, Collections.newSetFromMap(new IdentityHashMap<>()));
        List<Shared> shared = new ArrayList<>();
        for (List<DataSourceV2ScanRelation> group : groups.values()) {
            if (group.size() > 1 && !sameTable(group)) {
                shared.add(new Shared(group));
            }
        }
        if (shared.isEmpty()) {
            return plan;
        }
        // planned before the scans are built: a scan takes its size from the table when it is built
        ReadPlans.plan(shared.stream().map(Shared::made).toList(), session, false);  // rows known now go unused
        Map<LogicalPlan, LogicalPlan> replaced = new IdentityHashMap<>();
        for (Shared s : shared) {
            s.scans(replaced);
        }
        return replaceInSubqueries(plan, replaced);
    }

    /** The scans of the non-correlated scalar subqueries of {@code node}'s tree, grouped by their read. */
    private static void collect(LogicalPlan node, Map<String, List<DataSourceV2ScanRelation>> groups,
                                Set<LogicalPlan> seen) {
        for (Expression e : PruneCarbonRelations.list(node.expressions())) {
            for (ScalarSubquery s : instancesOf(e, ScalarSubquery.class, new ArrayList<>())) {
                if (s.outerAttrs().isEmpty() && seen.add(s.plan())) {
                    scans(s.plan(), aggregation(s.plan()), groups);
                }
            }
        }
        for (LogicalPlan child : PruneCarbonRelations.list(node.children())) {
            collect(child, groups, seen);
        }
    }

    /** The carbondata scans of {@code node}'s tree (not of its own subqueries: those are not replaced). */
    private static void scans(LogicalPlan node, String aggregation, Map<String, List<DataSourceV2ScanRelation>> groups) {
        String key = node instanceof DataSourceV2ScanRelation scan ? key(scan.relation()) : null;
        if (key != null) {
            groups.computeIfAbsent(aggregation + "\n" + key, k -> new ArrayList<>()).add((DataSourceV2ScanRelation) node);
        }
        for (LogicalPlan child : PruneCarbonRelations.list(node.children())) {
            scans(child, aggregation, groups);
        }
    }

    /**
     * How a subquery's top aggregate would run: Spark merges a hash aggregate only with another (a max of
     * strings, whose buffer UnsafeRow cannot update in place, runs sorted), and a subquery that will not
     * merge must not read another's columns.
     */
    private static String aggregation(LogicalPlan plan) {
        while (plan instanceof Project p) {
            plan = p.child();
        }
        if (!(plan instanceof Aggregate a)) {
            return "plan";
        }
        for (NamedExpression e : PruneCarbonRelations.list(a.aggregateExpressions())) {
            for (AggregateExpression agg : instancesOf((Expression) e, AggregateExpression.class, new ArrayList<>())) {
                for (AttributeReference b : PruneCarbonRelations.list(agg.aggregateFunction().aggBufferAttributes())) {
                    if (!UnsafeRow.isMutable(b.dataType())) {
                        return "other";
                    }
                }
            }
        }
        return "hash";
    }

    /** Every node of {@code type} in {@code e}'s tree, not looking inside one found (neither kind nests). */
    private static <T extends Expression> List<T> instancesOf(Expression e, Class<T> type, List<T> out) {
        if (type.isInstance(e)) {
            out.add(type.cast(e));
            return out;
        }
        for (Expression child : PruneCarbonRelations.list(e.children())) {
            instancesOf(child, type, out);
        }
        return out;
    }

    /** What a pruned relation reads but its columns: its table's name and every option but the decimals
     * read unscaled (which follow the columns); null for a relation this extension did not make. */
    private static String key(DataSourceV2Relation rel) {
        if (!(rel.table() instanceof SizedPythonTable table) || !rel.options().containsKey(Names.PRUNED_OPTION)
                || PruneCarbonRelations.readsRowPositions(rel)) {
            return null;
        }
        Map<String, String> options = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        options.putAll(rel.options().asCaseSensitiveMap());
        options.remove(Names.UNSCALED_OPTION);
        return table.name() + "\n" + options;
    }

    private static boolean sameTable(List<DataSourceV2ScanRelation> group) {
        for (DataSourceV2ScanRelation scan : group) {
            if (scan.relation().table() != group.get(0).relation().table()) {
                return false;
            }
        }
        return true;
    }

    /** One table for a group's scans: the union of their columns, each scan's own attributes kept. */
    private static final class Shared {
        private final List<DataSourceV2ScanRelation> group;
        private final SizedPythonTable table;
        private final List<DataSourceV2Relation> relations = new ArrayList<>();
        private final List<List<AttributeReference>> outputs = new ArrayList<>();
        private final ReadPlans.Made made;

        Shared(List<DataSourceV2ScanRelation> group) {
            this.group = group;
            Map<String, StructField> fields = new LinkedHashMap<>();
            Set<String> unscaled = new LinkedHashSet<>();
            for (DataSourceV2ScanRelation scan : group) {
                for (StructField f : scan.relation().table().schema().fields()) {
                    fields.putIfAbsent(f.name(), f);
                }
                String listed = scan.relation().options().get(Names.UNSCALED_OPTION);
                if (listed != null && !listed.isBlank()) {
                    unscaled.addAll(List.of(listed.split(",")));
                }
            }
            SizedPythonTable first = (SizedPythonTable) group.get(0).relation().table();
            StructType schema = new StructType(fields.values().toArray(new StructField[0]));
            PythonDataSourceV2 source = new PythonDataSourceV2();
            source.setShortName(first.name());
            table = new SizedPythonTable(source, first.name(), schema, first.shareOf(schema.fields()));
            Map<String, String> extra = unscaled.isEmpty() ? Map.of()
                    : Map.of(Names.UNSCALED_OPTION, String.join(",", unscaled));
            for (DataSourceV2ScanRelation scan : group) {
                List<AttributeReference> own = PruneCarbonRelations.list(scan.output());
                Map<String, AttributeReference> byName = new HashMap<>();
                own.forEach(a -> byName.put(a.name(), a));
                List<AttributeReference> output = new ArrayList<>(fields.size());
                for (StructField f : fields.values()) {
                    AttributeReference a = byName.get(f.name());
                    output.add(a != null ? a : new AttributeReference(f.name(), f.dataType(), f.nullable(),
                            f.metadata(), NamedExpression$.MODULE$.newExprId(), own.get(0).qualifier()));
                }
                outputs.add(output);
                relations.add(PruneCarbonRelations.mark(scan.relation(), table, PruneCarbonRelations.seq(output), null, extra));
            }
            made = new ReadPlans.Made(source, relations.get(0));
        }

        ReadPlans.Made made() {
            return made;
        }

        /** Each scan of the group, remade over one scan of the shared table, into {@code replaced}. */
        void scans(Map<LogicalPlan, LogicalPlan> replaced) {
            Scan scan = table.newScanBuilder(relations.get(0).options()).build();
            for (int i = 0; i < group.size(); i++) {
                Object[] args = PruneCarbonRelations.args(group.get(i));  // (relation, scan, output, ...)
                args[0] = relations.get(i);
                args[1] = scan;
                args[2] = PruneCarbonRelations.seq(outputs.get(i));
                replaced.put(group.get(i), group.get(i).makeCopy(args));
            }
        }
    }

    private static LogicalPlan replaceInSubqueries(LogicalPlan node, Map<LogicalPlan, LogicalPlan> replaced) {
        LogicalPlan next = PruneCarbonRelations.mapChildren(node, child -> replaceInSubqueries(child, replaced));
        return next.mapExpressions(e -> replaceInExpression(e, replaced));
    }

    private static Expression replaceInExpression(Expression e, Map<LogicalPlan, LogicalPlan> replaced) {
        if (e instanceof ScalarSubquery s && s.outerAttrs().isEmpty()) {
            LogicalPlan plan = replaceRelations(s.plan(), replaced);
            return plan == s.plan() ? s : s.withNewPlan(plan);
        }
        return e.mapChildren(child -> replaceInExpression(child, replaced));
    }

    private static LogicalPlan replaceRelations(LogicalPlan node, Map<LogicalPlan, LogicalPlan> replaced) {
        LogicalPlan remade = replaced.get(node);
        if (remade != null) {
            return remade;
        }
        return PruneCarbonRelations.mapChildren(node, child -> replaceRelations(child, replaced));
    }
}
