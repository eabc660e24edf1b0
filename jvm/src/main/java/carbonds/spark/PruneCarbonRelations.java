package carbonds.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.MakeDecimal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Gives every {@code carbondata} relation of a plan being optimized the columns and rows the plan needs.
 *
 * <p>Spark hands a Python data source neither the columns nor (safely) the filters of a query, but its
 * optimizer knows both by the time this rule runs (after column pruning and predicate push-down, before scan
 * push-down): every relation occurrence is read only through the attributes some node references, and the
 * rows it keeps pass through the Filter nodes right above it. Each occurrence is replaced by a new relation
 * over a new Python data source instance that declares only the needed attributes (same exprIds, so nothing
 * above changes) and carries the translated conjuncts in its {@code filter} option. Every Filter stays where
 * it is, so Spark still evaluates each predicate: the filter option only lets the reader skip blocklets and
 * pages, never changing an answer. The new relation belongs to this optimization run only, so a plan Spark
 * keeps across queries (a DataFrame, a temporary view) never sees another query's filter.
 */
public final class PruneCarbonRelations extends Rule<LogicalPlan> {
    private static final int MAX_UNSCALED_DIGITS = 18;

    private final SparkSession session;

    PruneCarbonRelations(SparkSession session) {
        this.session = session;
    }

    // Nodes whose output is child attributes passed through by exprId plus attributes computed from their
    // own expressions, so node.references() is all they read of their children. Any other node (Union,
    // CTE definitions, Python UDF nodes, anything new) is taken to read every column of every child.
    private static final Set<String> PASS_BY_ID = Set.of(
            "Project", "Filter", "Aggregate", "Join", "Sort", "GlobalLimit", "LocalLimit", "Offset", "Tail",
            "Window", "WindowGroupLimit", "Generate", "Expand", "Sample", "Deduplicate", "RepartitionByExpression",
            "Repartition", "RebalancePartitions", "SubqueryAlias", "View", "ResolvedHint", "Subquery");
    // Nodes between a relation and a Filter above it that keep the relation's rows as they are (a Limit or a
    // Sample does not: filtering below it would change which rows it keeps).
    private static final Set<String> ROW_PRESERVING = Set.of(
            "RepartitionByExpression", "Repartition", "RebalancePartitions", "ResolvedHint", "SubqueryAlias",
            "View", "Sort");

    /** The session's {@code carbon_ds.extension.enabled} (every rule of the extension follows it). */
    static boolean switchedOn() {
        return "true".equalsIgnoreCase(SQLConf.get().getConfString(Names.CONF_EXTENSION, "true").trim());
    }

    /** {@code work}'s result, with {@code local} set to {@code value} on this thread while it runs. */
    static <V, T> T with(ThreadLocal<V> local, V value, java.util.function.Supplier<T> work) {
        V outer = local.get();
        local.set(value);
        try {
            return work.get();
        } finally {
            local.set(outer);
        }
    }

    /** A plan node's constructor arguments, for makeCopy (whose arity changes between Spark releases). */
    static Object[] args(LogicalPlan node) {
        List<Object> out = new ArrayList<>();
        CollectionConverters.asJava(node.productIterator()).forEachRemaining(out::add);
        return out.toArray();
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        if (!switchedOn()) {
            return plan;
        }
        plan = SharedSubqueryReads.share(plan, session);  // the subqueries were optimized (and pruned) first
        if (!hasCandidate(plan)) {
            return plan;
        }
        Set<Long> referenced = new HashSet<>();
        collectReferences(plan, true, referenced);
        boolean deterministic = plan.deterministic();
        List<ReadPlans.Made> made = new ArrayList<>();
        LogicalPlan rewritten = rewrite(plan, new ArrayList<>(), referenced, deterministic, made);
        if (deterministic && PartialCounts.enabled()) {
            rewritten = PartialCounts.push(rewritten, made);  // before planning: the counted reads are planned
        }
        // non-deterministic expressions see rows in the partitions the relation's tasks make: no local rows
        Map<DataSourceV2Relation, KnownRows.Known> known = ReadPlans.plan(made, session, deterministic);
        return known.isEmpty() ? rewritten
                : KnownRows.replace(rewritten, known, session.sparkContext().defaultParallelism());
    }

    /** The carbondata relation this rule may replace, or null. */
    static DataSourceV2Relation candidate(LogicalPlan node) {
        if (!(node instanceof DataSourceV2Relation rel) || !isCarbon(rel)) {
            return null;
        }
        if (rel.options().containsKey(Names.PRUNED_OPTION)
                || rel.options().get("path") == null && rel.options().get("paths") == null) {
            return null;  // made here already, or a catalog table whose path the relation does not carry
        }
        return readsRowPositions(rel) ? null : rel;  // DELETE/UPDATE read every column
    }

    static boolean isCarbon(DataSourceV2Relation rel) {
        return rel.table() instanceof PythonTable table && Names.SOURCE.equalsIgnoreCase(table.name());
    }

    /** Whether the relation is DELETE/UPDATE's read of every column with row positions. */
    static boolean readsRowPositions(DataSourceV2Relation rel) {
        // the relation's options are case-insensitive
        return !"false".equalsIgnoreCase(rel.options().getOrDefault(Names.ROW_POSITIONS_OPTION, "false").trim());
    }

    /** Every carbondata relation of {@code plan}, its subqueries' included, in plan order. */
    static List<DataSourceV2Relation> carbonRelations(LogicalPlan plan) {
        List<DataSourceV2Relation> out = new ArrayList<>();
        collectCarbon(plan, out);
        return out;
    }

    private static void collectCarbon(LogicalPlan plan, List<DataSourceV2Relation> out) {
        if (plan instanceof DataSourceV2Relation rel && isCarbon(rel)) {
            out.add(rel);
            return;
        }
        for (LogicalPlan child : list(plan.children())) {
            collectCarbon(child, out);
        }
        for (LogicalPlan sub : list(plan.subqueries())) {
            collectCarbon(sub, out);
        }
    }

    private static boolean hasCandidate(LogicalPlan plan) {
        for (DataSourceV2Relation rel : carbonRelations(plan)) {
            if (candidate(rel) != null) {
                return true;
            }
        }
        return false;
    }

    /** The exprIds some node reads (subquery plans included: reading more than needed is always safe). */
    private static void collectReferences(LogicalPlan node, boolean isRoot, Set<Long> out) {
        if (node instanceof DataSourceV2Relation) {
            if (isRoot) {
                addAll(node.output(), out);
            }
            return;
        }
        addAll(node.references().toSeq(), out);
        if (isRoot) {
            addAll(node.output(), out);
        }
        boolean passes = PASS_BY_ID.contains(node.nodeName());
        for (LogicalPlan child : list(node.children())) {
            if (!passes) {
                addAll(child.output(), out);
            }
            collectReferences(child, false, out);
        }
        for (LogicalPlan sub : list(node.subqueries())) {
            collectReferences(sub, true, out);
        }
    }

    private static void addAll(Seq<? extends Expression> attrs, Set<Long> out) {
        for (Expression e : list(attrs)) {
            if (e instanceof Attribute a) {
                out.add(a.exprId().id());
            }
        }
    }

    private LogicalPlan rewrite(LogicalPlan node, List<LogicalPlan> ancestors, Set<Long> referenced,
                                boolean deterministic, List<ReadPlans.Made> made) {
        DataSourceV2Relation rel = candidate(node);
        if (rel != null) {
            return replace(rel, ancestors, referenced, deterministic, made);
        }
        if (node.children().isEmpty()) {
            return node;
        }
        List<LogicalPlan> path = new ArrayList<>(ancestors.size() + 1);
        path.add(node);
        path.addAll(ancestors);
        return mapChildren(node, child -> rewrite(child, path, referenced, deterministic, made));
    }

    private LogicalPlan replace(DataSourceV2Relation rel, List<LogicalPlan> ancestors, Set<Long> referenced,
                                boolean deterministic, List<ReadPlans.Made> made) {
        List<AttributeReference> output = list(rel.output());
        List<AttributeReference> needed = new ArrayList<>();
        Map<Long, String> names = new HashMap<>();
        for (AttributeReference a : output) {
            names.put(a.exprId().id(), a.name());
            if (referenced.contains(a.exprId().id())) {
                needed.add(a);
            }
        }
        String predicate = deterministic ? predicate(new FilterText(names), ancestors) : null;
        if (needed.isEmpty() && !deterministic && !output.isEmpty()) {
            needed.add(output.get(0));  // a rows-only read is one partition: rand() and the like must see the same
        }
        // decimals of at most 18 digits travel as their unscaled bigint, rebuilt by MakeDecimal above the
        // relation: Spark converts Arrow decimals value by value through Java's BigDecimal (docs/sql.md)
        boolean unscaled = "true".equalsIgnoreCase(SQLConf.get().getConfString(Names.CONF_UNSCALED, "true").trim())
                && !rel.options().containsKey(Names.UNSCALED_OPTION);  // a reader's own choice stays as it is
        List<AttributeReference> read = new ArrayList<>(needed.size());
        List<NamedExpression> restored = new ArrayList<>(needed.size());
        List<String> unscaledColumns = new ArrayList<>();
        for (AttributeReference a : needed) {
            if (unscaled && a.dataType() instanceof DecimalType d && d.precision() <= MAX_UNSCALED_DIGITS) {
                AttributeReference raw = new AttributeReference(a.name(), DataTypes.LongType, a.nullable(),
                        Metadata.empty(), NamedExpression$.MODULE$.newExprId(), a.qualifier());
                read.add(raw);
                restored.add(new Alias(new MakeDecimal(raw, d.precision(), d.scale(), true), a.name(), a.exprId(),
                        a.qualifier(), Option.empty(), seq(List.of())));
                unscaledColumns.add(a.name() + ":" + d.precision() + ":" + d.scale());
            } else {
                read.add(a);
                restored.add(a);
            }
        }
        StructField[] fields = fieldsOf(read);
        PythonTable old = (PythonTable) rel.table();
        // a new instance: the old one caches the Python data source made with the old options and schema
        PythonDataSourceV2 source = new PythonDataSourceV2();
        source.setShortName(old.name());
        StructType schema = new StructType(fields);
        // sized by the read's plan (ReadPlans), from the stored bytes the Python side counts
        double share = !"true".equalsIgnoreCase(
                SQLConf.get().getConfString(Names.CONF_EXTENSION_STATISTICS, "true").trim()) ? -1
                : (double) SizedPythonTable.rowWidth(fields) / SizedPythonTable.rowWidth(rel.schema().fields());
        PythonTable table = new SizedPythonTable(source, old.name(), schema, share);
        Map<String, String> extra = new HashMap<>();
        if (!unscaledColumns.isEmpty()) {
            extra.put(Names.UNSCALED_OPTION, String.join(",", unscaledColumns));
        }
        DataSourceV2Relation pruned = mark(rel, table, seq(read), predicate, extra);
        made.add(new ReadPlans.Made(source, pruned));
        return unscaledColumns.isEmpty() ? pruned : new Project(seq(restored), pruned);
    }

    static DataSourceV2Relation mark(DataSourceV2Relation rel, org.apache.spark.sql.connector.catalog.Table table,
                                             Seq<AttributeReference> output, String predicate,
                                             Map<String, String> extra) {
        Map<String, String> options = new LinkedHashMap<>(rel.options().asCaseSensitiveMap());
        for (String key : extra.keySet()) {
            options.keySet().removeIf(k -> k.equalsIgnoreCase(key));
        }
        options.putAll(extra);
        String filter = filterOption(rel, predicate);
        if (filter != null) {
            options.keySet().removeIf(k -> k.equalsIgnoreCase(Names.FILTER_OPTION));
            options.put(Names.FILTER_OPTION, filter);
        }
        if (predicate != null) {
            // Spark evaluates the predicate again above the relation; only the user's own filter must hold
            String exact = filterOption(rel, null);
            options.keySet().removeIf(k -> k.equalsIgnoreCase(Names.EXACT_FILTER_OPTION));
            options.put(Names.EXACT_FILTER_OPTION, exact == null ? "" : exact);
        }
        options.put(Names.PRUNED_OPTION, "true");
        Object[] args = args(rel);  // (table, output, catalog, identifier, options, ...)
        for (int i = 0; i < args.length; i++) {
            if (args[i] instanceof org.apache.spark.sql.connector.catalog.Table) {
                args[i] = table;
            } else if (args[i] instanceof CaseInsensitiveStringMap) {
                args[i] = new CaseInsensitiveStringMap(options);
            }
        }
        args[1] = output;
        return (DataSourceV2Relation) rel.makeCopy(args);
    }

    /** The relation's filter option joined with {@code predicate} (either may be null). */
    static String filterOption(DataSourceV2Relation rel, String predicate) {
        String original = null;
        for (Map.Entry<String, String> e : rel.options().asCaseSensitiveMap().entrySet()) {
            if (e.getKey().equalsIgnoreCase(Names.FILTER_OPTION) && e.getValue() != null && !e.getValue().isBlank()) {
                original = e.getValue();
            }
        }
        if (predicate == null) {
            return original;
        }
        return original == null ? predicate : "(" + original + ") AND (" + predicate + ")";
    }

    private static StructField[] fieldsOf(List<AttributeReference> attrs) {
        StructField[] fields = new StructField[attrs.size()];
        for (int i = 0; i < fields.length; i++) {
            AttributeReference a = attrs.get(i);
            fields[i] = new StructField(a.name(), a.dataType(), a.nullable(), a.metadata());
        }
        return fields;
    }

    /** The AND of the translated conjuncts of the Filters that see exactly the relation's rows: those right
     * above it, through nodes that keep rows and attributes. A non-deterministic conjunct ends the walk:
     * Spark evaluates it on the rows that reach it, so no row may be removed before it. */
    private static String predicate(FilterText text, List<LogicalPlan> ancestors) {
        List<String> parts = new ArrayList<>();
        for (LogicalPlan node : ancestors) {
            if (node instanceof Filter f) {
                List<Expression> conjuncts = new ArrayList<>();
                split(f.condition(), conjuncts);
                for (Expression c : conjuncts) {
                    if (!c.deterministic()) {
                        return join(parts);
                    }
                }
                for (Expression c : conjuncts) {
                    String t = text.implied(c);
                    if (t != null && !parts.contains(t)) {
                        parts.add(t);
                    }
                }
            } else if (node instanceof Project p) {
                for (NamedExpression x : list(p.projectList())) {
                    if (!(x instanceof AttributeReference)) {
                        return join(parts);
                    }
                }
            } else if (!ROW_PRESERVING.contains(node.nodeName())) {
                return join(parts);
            }
        }
        return join(parts);
    }

    private static String join(List<String> parts) {
        return parts.isEmpty() ? null : String.join(" AND ", parts);
    }

    /** The conjuncts of {@code e} (an AND tree flattened), in order, into {@code out}. */
    static void split(Expression e, List<Expression> out) {
        if (e instanceof org.apache.spark.sql.catalyst.expressions.And a) {
            split(a.left(), out);
            split(a.right(), out);
        } else {
            out.add(e);
        }
    }

    static <T> List<T> list(scala.collection.Iterable<T> items) {
        List<T> out = new ArrayList<>();
        CollectionConverters.asJava(items.iterator()).forEachRemaining(out::add);
        return out;
    }

    static <T> Seq<T> seq(List<T> items) {
        return CollectionConverters.asScala(items).toSeq();
    }

    /** {@code node} with {@code each} applied to its children; the same node when no child changed. */
    static <T extends TreeNode<T>> T mapChildren(T node, UnaryOperator<T> each) {
        List<T> children = list(node.children());
        List<T> updated = new ArrayList<>(children.size());
        boolean changed = false;
        for (T child : children) {
            T next = each.apply(child);
            changed |= next != child;
            updated.add(next);
        }
        return changed ? node.withNewChildren(seq(updated)) : node;
    }
}
