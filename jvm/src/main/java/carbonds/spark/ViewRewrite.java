package carbonds.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.Divide;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.expressions.TruncTimestamp;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression$;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction;
import org.apache.spark.sql.catalyst.expressions.aggregate.Average;
import org.apache.spark.sql.catalyst.expressions.aggregate.Complete$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.expressions.aggregate.Max;
import org.apache.spark.sql.catalyst.expressions.aggregate.Min;
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.Inner$;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Option;

/**
 * Answers a GROUP BY over a carbondata table from one of its materialized views (docs/materialized-views.md).
 *
 * <p>It runs in the "Pre CBO Rules" batch just before {@link PruneCarbonRelations}, so the view's relation
 * it makes is pruned and planned like any other. It matches an Aggregate over a carbondata relation read
 * whole by path (through a Filter and Projects), and asks the Python side (carbon_ds.spark.bridge.view_rewrite,
 * through a schema call) which views of the table are fresh now: only a table with
 * {@code Metadata/mv_links.json} is asked. A view answers when each grouping expression of the query is one
 * of its grouping columns, or {@code date_trunc} of its timeseries column to the same or a coarser
 * granularity in its time zone; when each conjunct of the Filter reads only its plain grouping columns, or
 * is one of the conditions of the view's own WHERE (all of which the query must have, as the Python side
 * describes them: plain comparisons of integer columns, equalities of string columns, null checks), or is
 * the {@code isnotnull} Spark infers from such a condition; and
 * when each aggregate is one it keeps (sum, count, count(*), min, max, avg, the last also from a sum and a
 * count of the column). The Aggregate is then rebuilt over the view's rows of the segment whose freshness
 * was checked: sums and counts are summed, min of mins, max of maxes, avg is the summed sum over the summed
 * count. Its outputs keep their expression ids, so nothing above changes. A small view's rows come in the
 * answer that says it is fresh, and its relation holds them ({@link ViewRows}): no Python task reads it; a
 * query grouping by exactly its groups gets its answer's rows at planning ({@link ViewGroups}). Anything
 * else, or any failure, leaves the plan as it is. The conf {@value Names#CONF_MV_REWRITE} turns it off. A mixed table (with
 * external segments) is asked about earlier, by {@link NativeUnion} before it expands the table's relation
 * into a union of scans: the view covers those segments too.
 */
final class ViewRewrite extends Rule<LogicalPlan> {
    private static final Map<String, String> GRANULARITY = Map.ofEntries(
            Map.entry("minute", "minute"), Map.entry("hour", "hour"), Map.entry("day", "day"), Map.entry("dd", "day"),
            Map.entry("week", "week"), Map.entry("month", "month"), Map.entry("mon", "month"),
            Map.entry("mm", "month"), Map.entry("year", "year"), Map.entry("yyyy", "year"), Map.entry("yy", "year"));
    private static final List<String> ORDER = List.of("minute", "hour", "day", "week", "month", "year");

    private final SparkSession session;

    ViewRewrite(SparkSession session) {
        this.session = session;
    }

    static boolean enabled() {
        return PruneCarbonRelations.switchedOn()
                && !"false".equalsIgnoreCase(SQLConf.get().getConfString(Names.CONF_MV_REWRITE, "true").trim());
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        if (!enabled() || !plan.deterministic()) {
            return plan;
        }
        try {
            return rewrite(plan);
        } catch (Exception | LinkageError e) {
            return plan;  // the main table answers, as without a view
        }
    }

    /** {@code agg} answered from a view, or null; for {@link NativeUnion}, which asks before it expands a
     * mixed table's relation into a union. */
    LogicalPlan answerWhole(Aggregate agg) {
        if (!enabled() || !agg.deterministic()) {
            return null;
        }
        try {
            return answer(agg);
        } catch (Exception | LinkageError e) {
            return null;  // the main table answers, as without a view
        }
    }

    /** The carbondata relation {@code agg} reads whole (through a Filter and Projects, no join), or null. */
    static DataSourceV2Relation wholeRelation(Aggregate agg) {
        Shape shape = shape(agg);
        return shape == null || shape.rels().size() != 1 ? null : shape.rel();
    }

    private LogicalPlan rewrite(LogicalPlan node) throws Exception {
        if (node instanceof Aggregate agg) {
            LogicalPlan answered = answer(agg);
            if (answered != null) {
                return answered;
            }
        }
        List<LogicalPlan> children = PruneCarbonRelations.list(node.children());
        List<LogicalPlan> out = new ArrayList<>(children.size());
        boolean changed = false;
        for (LogicalPlan child : children) {
            LogicalPlan next = rewrite(child);
            changed |= next != child;
            out.add(next);
        }
        return changed ? node.withNewChildren(PruneCarbonRelations.seq(out)) : node;
    }

    /**
     * What the query asks: the carbondata relations it reads (one, or several joined by inner joins), grouping
     * keys, filter conjuncts, the join conditions' conjuncts and aggregates. {@code names}: each relation
     * column's expression id to {@code "i:column"}, i the relation's index in {@code rels} (for one view:
     * the index of its table in the view, 0 the main table); {@code rel}: the relation whose views are asked.
     */
    private record Shape(DataSourceV2Relation rel, List<DataSourceV2Relation> rels, Map<Long, Expression> projected,
                         List<Expression> conjuncts, List<Expression> joinConjuncts, Map<Long, String> names) {
    }

    private static Shape shape(Aggregate agg) {
        Map<Long, Expression> projected = new HashMap<>();
        List<Expression> conjuncts = new ArrayList<>();
        List<Expression> joinConjuncts = new ArrayList<>();
        List<DataSourceV2Relation> rels = new ArrayList<>();
        if (!walk(agg.child(), true, projected, conjuncts, joinConjuncts, rels) || rels.isEmpty()) {
            return null;
        }
        Map<Long, String> names = new HashMap<>();
        for (int i = 0; i < rels.size(); i++) {
            DataSourceV2Relation rel = rels.get(i);
            if (PruneCarbonRelations.candidate(rel) == null || !readWhole(rel)) {
                return null;
            }
            for (AttributeReference a : PruneCarbonRelations.list(rel.output())) {
                names.put(a.exprId().id(), i + ":" + a.name().toLowerCase(Locale.ROOT));
            }
        }
        return new Shape(rels.get(0), rels, projected, conjuncts, joinConjuncts, names);
    }

    /** Collects {@code node}'s relations, filters and inner joins; false for any other operator (an outer join,
     * a computing projection below the top one). */
    private static boolean walk(LogicalPlan node, boolean top, Map<Long, Expression> projected,
                                List<Expression> conjuncts, List<Expression> joinConjuncts,
                                List<DataSourceV2Relation> rels) {
        if (node instanceof DataSourceV2Relation rel) {
            rels.add(rel);
            return true;
        }
        if (node instanceof Project project) {
            for (NamedExpression e : PruneCarbonRelations.list(project.projectList())) {
                if (e instanceof Alias alias && top) {
                    projected.put(alias.exprId().id(), alias.child());
                } else if (!(e instanceof Attribute)) {
                    return false;  // only the projection right under the Aggregate may compute
                }
            }
            return walk(project.child(), false, projected, conjuncts, joinConjuncts, rels);
        }
        if (node instanceof Filter filter) {
            PruneCarbonRelations.split(filter.condition(), conjuncts);
            return walk(filter.child(), false, projected, conjuncts, joinConjuncts, rels);
        }
        if (node instanceof Join join && join.joinType() == Inner$.MODULE$ && join.condition().isDefined()) {
            PruneCarbonRelations.split(join.condition().get(), joinConjuncts);
            return walk(join.left(), false, projected, conjuncts, joinConjuncts, rels)
                    && walk(join.right(), false, projected, conjuncts, joinConjuncts, rels);
        }
        return false;
    }

    /** A read of the whole table: by one path (table properties aside), no segment choice, filter, time travel
     * or other read option. */
    private static boolean readWhole(DataSourceV2Relation rel) {
        if (rel.options().get("path") == null || rel.timeTravelSpec().isDefined()) {
            return false;
        }
        for (String key : rel.options().keySet()) {
            String k = key.toLowerCase(Locale.ROOT);
            boolean describesTable = k.equals("path") || Names.TABLE_OPTIONS.contains(k);
            // "none": the union rule found no external segment; any other value reads a part of the table
            boolean whole = k.equals(Names.EXPANDED_OPTION) && "none".equals(rel.options().get(key));
            if (!describesTable && !whole) {
                return false;
            }
        }
        return true;
    }

    private LogicalPlan answer(Aggregate agg) throws Exception {
        Shape shape = shape(agg);
        if (shape == null) {
            return null;
        }
        List<String> tables = new ArrayList<>();
        for (DataSourceV2Relation rel : shape.rels()) {
            tables.add(rel.options().get("path"));
        }
        // a view this small comes with its rows
        Bridge.ViewsRequest request = new Bridge.ViewsRequest(tables, ReadPlans.localBytes(SQLConf.get()),
                Bridge.VERSION);
        // a join's views are kept by its main (fact) table: ask each table that has views
        for (DataSourceV2Relation rel : shape.rels()) {
            if (!hasViews(rel.options().get("path"))) {
                continue;
            }
            Bridge.ViewsAnswer views = SchemaCall.ask(rel, Names.MV_REWRITE_OPTION, request, Bridge.ViewsAnswer.class);
            if (views == null || views.views() == null) {
                continue;
            }
            for (Bridge.View view : views.views()) {
                Shape viewShape = forView(shape, rel, view);
                LogicalPlan answered = viewShape == null ? null : answer(agg, viewShape, view);
                if (answered != null) {
                    return answered;
                }
            }
        }
        return null;
    }

    /**
     * {@code shape} in {@code view}'s terms (its columns named by the view's table index), or null when the
     * query does not read exactly the view's tables joined on exactly its keys: the view's {@code tables}
     * gives, for each of its tables, the query relation reading it (null: none does); every query relation
     * must be one of them, and the inner joins' column equalities must be the view's join keys, each once.
     */
    private static Shape forView(Shape shape, DataSourceV2Relation main, Bridge.View view) {
        List<Long> tables = view.tables();
        int n = shape.rels().size();
        if (tables == null || tables.size() != n) {
            return null;
        }
        int[] viewIndex = new int[n];
        java.util.Arrays.fill(viewIndex, -1);
        for (int v = 0; v < n; v++) {
            Long q = tables.get(v);
            if (q == null || q < 0 || q >= n || viewIndex[q.intValue()] >= 0) {
                return null;
            }
            viewIndex[q.intValue()] = v;
        }
        if (shape.rels().get(tables.get(0).intValue()) != main) {
            return null;
        }
        Map<Long, String> names = new HashMap<>();
        for (Map.Entry<Long, String> e : shape.names().entrySet()) {
            String[] parts = e.getValue().split(":", 2);
            names.put(e.getKey(), viewIndex[Integer.parseInt(parts[0])] + ":" + parts[1]);
        }
        Set<String> viewKeys = new HashSet<>();
        Set<String> keyColumns = new HashSet<>();
        for (Bridge.JoinKey k : view.keys()) {
            viewKeys.add(pair(k.left(), k.right()));
            keyColumns.add(k.left());
            keyColumns.add(k.right());
        }
        Set<String> queryKeys = new HashSet<>();
        List<Expression> conjuncts = new ArrayList<>(shape.conjuncts());
        for (Expression c : shape.joinConjuncts()) {
            if (c instanceof EqualTo eq && eq.left() instanceof AttributeReference l
                    && eq.right() instanceof AttributeReference r && names.containsKey(l.exprId().id())
                    && names.containsKey(r.exprId().id())) {
                String a = names.get(l.exprId().id());
                String b = names.get(r.exprId().id());
                if (!a.split(":", 2)[0].equals(b.split(":", 2)[0])) {
                    queryKeys.add(pair(a, b));
                    continue;
                }
            }
            conjuncts.add(c);  // an inner join's other condition filters its rows like a WHERE
        }
        if (!queryKeys.equals(viewKeys)) {
            return null;
        }
        // isnotnull of a join key, which Spark infers from the equality, drops no row the join keeps
        conjuncts.removeIf(c -> c instanceof IsNotNull nn && nn.child() instanceof AttributeReference a
                && keyColumns.contains(names.get(a.exprId().id())));
        return new Shape(main, shape.rels(), shape.projected(), conjuncts, List.of(), names);
    }

    private static String pair(String a, String b) {
        return a.compareTo(b) <= 0 ? a + "=" + b : b + "=" + a;
    }

    private boolean hasViews(String path) {
        try {
            Path links = new Path(new Path(path, "Metadata"), "mv_links.json");
            return links.getFileSystem(session.sparkContext().hadoopConfiguration()).exists(links);
        } catch (Exception e) {
            return false;
        }
    }

    /** The view's column attributes, by name, for a relation over the view's table. */
    private record ViewScan(DataSourceV2Relation rel, Map<String, AttributeReference> columns) {
        /** The view's column {@code name} (any case), or null (also for a name the answer left out). */
        AttributeReference column(String name) {
            return name == null ? null : columns.get(name.toLowerCase(Locale.ROOT));
        }
    }

    private ViewScan scan(DataSourceV2Relation main, Bridge.View view) throws Exception {
        StructType schema = (StructType) DataType.fromJson(view.schema().toString());
        List<AttributeReference> output = new ArrayList<>();
        Map<String, AttributeReference> columns = new HashMap<>();
        for (StructField f : schema.fields()) {
            AttributeReference a = new AttributeReference(f.name(), f.dataType(), f.nullable(), Metadata.empty(),
                    NamedExpression$.MODULE$.newExprId(), PruneCarbonRelations.seq(List.of()));
            output.add(a);
            columns.put(f.name().toLowerCase(Locale.ROOT), a);
        }
        String[] name = view.name().split("\\.", 2);
        Table table = view.arrow() != null ? localRows(view, schema, output) : null;
        if (table == null) {  // read by Spark's Python tasks, as any carbondata relation
            PythonDataSourceV2 source = new PythonDataSourceV2();
            String shortName = ((PythonTable) main.table()).name();
            source.setShortName(shortName);
            table = new PythonTable(source, shortName, schema);
        }
        Map<String, String> options = new LinkedHashMap<>();
        options.put("path", view.path());
        options.put(Names.SEGMENTS_OPTION, view.segment());  // the rows whose freshness was checked
        Object[] args = PruneCarbonRelations.args(main);  // (table, output, catalog, identifier, options, ...)
        args[0] = table;
        args[1] = PruneCarbonRelations.seq(output);
        // EXPLAIN names the view's table
        args[2] = Option.apply(session.sessionState().catalogManager().v2SessionCatalog());
        args[3] = Option.apply(Identifier.of(new String[] {name[0]}, name[name.length - 1]));
        args[4] = new CaseInsensitiveStringMap(options);
        return new ViewScan((DataSourceV2Relation) main.makeCopy(args), columns);
    }

    /** The small view's rows the Python side sent with its freshness ({@link ViewRows}), or null when their
     * types are not the view schema's. */
    private static Table localRows(Bridge.View view, StructType schema, List<AttributeReference> output)
            throws Exception {
        org.apache.spark.sql.catalyst.InternalRow[] rows = ReadPlans.arrowRows(view.arrow(), output);
        return rows == null ? null : new ViewRows(view.name(), schema, rows);
    }

    private LogicalPlan answer(Aggregate agg, Shape shape, Bridge.View view) throws Exception {
        ViewScan scan = scan(shape.rel(), view);
        String zone = view.zone();
        Map<String, AttributeReference> plainGroups = new HashMap<>();  // main column -> view column
        Map<String, String[]> timeGroups = new HashMap<>();  // main column -> (view column, granularity)
        Set<AttributeReference> viewGroups = new HashSet<>();
        for (Bridge.ViewGroup g : view.groups()) {
            AttributeReference a = scan.column(g.name());
            if (a == null) {
                return null;
            }
            viewGroups.add(a);
            if (g.granularity() == null) {
                plainGroups.put(g.column(), a);
            } else {
                timeGroups.put(g.column(), new String[] {a.name(), g.granularity()});
            }
        }
        // grouping expressions
        List<Expression> groups = PruneCarbonRelations.list(agg.groupingExpressions());
        List<Expression> newGroups = new ArrayList<>();
        for (Expression g : groups) {
            Expression e = unalias(g, shape.projected());
            Expression mapped = null;
            if (e instanceof AttributeReference a && shape.names().containsKey(a.exprId().id())) {
                AttributeReference v = plainGroups.get(shape.names().get(a.exprId().id()));
                mapped = v != null && v.dataType().equals(a.dataType()) ? v : null;
            } else if (e instanceof TruncTimestamp t && t.timestamp() instanceof AttributeReference a
                    && a.dataType() instanceof TimestampType && shape.names().containsKey(a.exprId().id())
                    && t.format() instanceof Literal f && f.value() != null && t.timeZoneId().isDefined()
                    && sameZone(zone, t.timeZoneId().get())) {
                String wanted = GRANULARITY.get(f.value().toString().toLowerCase(Locale.ROOT));
                String[] v = timeGroups.get(shape.names().get(a.exprId().id()));
                if (wanted != null && v != null && nests(v[1], wanted)) {
                    AttributeReference col = scan.column(v[0]);
                    if (col.dataType() instanceof TimestampType) {
                        mapped = v[1].equals(wanted) ? col
                                : new TruncTimestamp(t.format(), col, t.timeZoneId());
                    }
                }
            }
            if (mapped == null) {
                return null;
            }
            newGroups.add(mapped);
        }
        // filter conjuncts: on plain grouping columns only, applied to the view's rows
        Map<Long, Expression> onView = new HashMap<>();
        for (DataSourceV2Relation rel : shape.rels()) {
            for (AttributeReference a : PruneCarbonRelations.list(rel.output())) {
                AttributeReference v = plainGroups.get(shape.names().get(a.exprId().id()));
                if (v != null && v.dataType().equals(a.dataType())) {
                    onView.put(a.exprId().id(), v);
                }
            }
        }
        // the view's own WHERE: each of its conditions must be one of the query's, since the view's rows are
        // exactly the main table's rows meeting them; the query's other conjuncts are on grouping columns, or
        // the isnotnull(column) Spark infers from a condition that already drops the column's nulls
        List<Expression> viewWhere = new ArrayList<>();
        Set<String> nonNull = new HashSet<>();
        List<Bridge.Condition> where = view.where();
        if (where != null) {
            Map<String, AttributeReference> byName = new HashMap<>();
            for (AttributeReference a : PruneCarbonRelations.list(shape.rel().output())) {
                byName.put(a.name().toLowerCase(Locale.ROOT), a);
            }
            for (Bridge.Condition w : where) {
                Expression e = condition(w, byName);
                if (e == null) {
                    return null;
                }
                viewWhere.add(e);
                if (!"is null".equals(w.op())) {
                    nonNull.add("0:" + w.column());
                }
            }
        }
        boolean[] matched = new boolean[viewWhere.size()];
        List<Expression> newConjuncts = new ArrayList<>();
        for (Expression c : shape.conjuncts()) {
            if (!c.deterministic() || SubqueryExpression.hasSubquery(c)) {
                return null;
            }
            boolean inView = false;
            for (int i = 0; i < viewWhere.size(); i++) {
                if (c.semanticEquals(viewWhere.get(i))) {
                    matched[i] = true;
                    inView = true;
                }
            }
            if (inView || c instanceof IsNotNull n && n.child() instanceof AttributeReference a
                    && nonNull.contains(shape.names().get(a.exprId().id()))) {
                continue;
            }
            Expression mapped = replace(c, onView);
            if (mapped == null) {
                return null;
            }
            newConjuncts.add(mapped);
        }
        for (boolean m : matched) {
            if (!m) {
                return null;  // the query keeps rows the view dropped
            }
        }
        // aggregates
        List<NamedExpression> outputs = new ArrayList<>();
        for (NamedExpression e : PruneCarbonRelations.list(agg.aggregateExpressions())) {
            Expression value = e instanceof Alias alias ? alias.child() : (Expression) e;
            Expression replacement = output(value, groups, newGroups, shape, view, scan);
            if (replacement == null) {
                return null;
            }
            outputs.add(new Alias(replacement, e.name(), e.exprId(), e.qualifier(), Option.empty(),
                    PruneCarbonRelations.seq(List.of())));
        }
        LogicalPlan child = scan.rel();
        LogicalPlan answered = newConjuncts.isEmpty()
                ? ViewGroups.answer(agg, scan.rel(), newGroups, outputs, viewGroups) : null;
        if (answered != null) {
            return answered;  // one view row per group: the answer's rows, at planning
        }
        if (!newConjuncts.isEmpty()) {
            Expression cond = newConjuncts.get(0);
            for (int i = 1; i < newConjuncts.size(); i++) {
                cond = new org.apache.spark.sql.catalyst.expressions.And(cond, newConjuncts.get(i));
            }
            child = new Filter(cond, child);
        }
        Object[] args = PruneCarbonRelations.args(agg);  // (groupings, aggregates, child, ...)
        args[0] = PruneCarbonRelations.seq(newGroups);
        args[1] = PruneCarbonRelations.seq(outputs);
        args[2] = child;
        return (LogicalPlan) agg.makeCopy(args);
    }

    /**
     * An output expression over the view's rows: grouping expressions become the view's, aggregates are
     * re-aggregated, anything computed over them ({@code max(x) + 1}) is kept around them; null when some
     * part reads the main table's rows otherwise.
     */
    private static Expression output(Expression value, List<Expression> groups, List<Expression> newGroups,
                                     Shape shape, Bridge.View view, ViewScan scan) {
        for (int i = 0; i < groups.size(); i++) {
            if (value.semanticEquals(groups.get(i))) {
                return newGroups.get(i);
            }
        }
        if (value instanceof AggregateExpression ae) {
            return reaggregate(ae, shape, view, scan);
        }
        if (value instanceof Attribute) {
            return null;
        }
        List<Expression> children = PruneCarbonRelations.list(value.children());
        if (children.isEmpty()) {
            return value.deterministic() ? value : null;
        }
        List<Expression> mapped = new ArrayList<>(children.size());
        for (Expression c : children) {
            Expression m = output(c, groups, newGroups, shape, view, scan);
            if (m == null) {
                return null;
            }
            mapped.add(m);
        }
        return value.withNewChildren(PruneCarbonRelations.seq(mapped));
    }

    /** One condition of the view's WHERE as Spark writes it after optimization, or null when its literals
     * do not fit the column's type. */
    private static Expression condition(Bridge.Condition w, Map<String, AttributeReference> byName) {
        AttributeReference a = w.column() == null ? null : byName.get(w.column());
        String op = w.op();
        if (a == null || op == null) {
            return null;
        }
        if (op.equals("is null")) {
            return new IsNull(a);
        }
        if (op.equals("is not null")) {
            return new IsNotNull(a);
        }
        List<Expression> values = new ArrayList<>();
        for (Object v : w.values() == null ? List.of() : w.values()) {
            Literal l = literal(v, a.dataType());
            if (l == null) {
                return null;
            }
            if (values.stream().noneMatch(x -> x.semanticEquals(l))) {
                values.add(l);  // Spark's OptimizeIn drops repeated values
            }
        }
        if (values.isEmpty()) {
            return null;
        }
        Expression v = values.get(0);
        return switch (op) {
            case "=" -> new EqualTo(a, v);
            case "!=" -> new Not(new EqualTo(a, v));
            case "<" -> new LessThan(a, v);
            case "<=" -> new LessThanOrEqual(a, v);
            case ">" -> new GreaterThan(a, v);
            case ">=" -> new GreaterThanOrEqual(a, v);
            // OptimizeIn makes a one-value IN an equality
            case "in" -> values.size() == 1 ? new EqualTo(a, v) : new In(a, PruneCarbonRelations.seq(values));
            default -> null;
        };
    }

    /** {@code v} as read from the answer's JSON: a String, or an Integer, Long or BigInteger by its size. */
    private static Literal literal(Object v, DataType type) {
        if (type instanceof StringType) {
            return v instanceof String s ? Literal.create(s, type) : null;
        }
        java.math.BigInteger n;
        if (v instanceof Integer || v instanceof Long) {
            n = java.math.BigInteger.valueOf(((Number) v).longValue());
        } else if (v instanceof java.math.BigInteger b) {
            n = b;
        } else {
            return null;
        }
        long lo;
        long hi;
        if (type instanceof ByteType) {
            lo = Byte.MIN_VALUE;
            hi = Byte.MAX_VALUE;
        } else if (type instanceof ShortType) {
            lo = Short.MIN_VALUE;
            hi = Short.MAX_VALUE;
        } else if (type instanceof IntegerType) {
            lo = Integer.MIN_VALUE;
            hi = Integer.MAX_VALUE;
        } else if (type instanceof LongType) {
            lo = Long.MIN_VALUE;
            hi = Long.MAX_VALUE;
        } else {
            return null;
        }
        if (n.compareTo(java.math.BigInteger.valueOf(lo)) < 0 || n.compareTo(java.math.BigInteger.valueOf(hi)) > 0) {
            return null;
        }
        long x = n.longValue();
        Object value = type instanceof ByteType ? (Object) (byte) x : type instanceof ShortType ? (Object) (short) x
                : type instanceof IntegerType ? (Object) (int) x : (Object) x;
        return Literal.create(value, type);
    }

    /** Whether rows grouped by {@code view}'s truncation can be grouped again by {@code query}'s. */
    private static boolean nests(String view, String query) {
        if (view.equals(query)) {
            return true;
        }
        if (view.equals("week") || query.equals("week")) {
            // weeks straddle months and years; a week is whole days
            return query.equals("week") && ORDER.indexOf(view) <= ORDER.indexOf("day");
        }
        return ORDER.indexOf(view) < ORDER.indexOf(query);
    }

    /** Whether the two zone ids truncate alike ("UTC" and "Etc/UTC", the same fixed offset). */
    private static boolean sameZone(String a, String b) {
        try {
            return a.equals(b) || java.time.ZoneId.of(a).normalized().equals(java.time.ZoneId.of(b).normalized());
        } catch (java.time.DateTimeException e) {
            return false;
        }
    }

    private static Expression unalias(Expression e, Map<Long, Expression> projected) {
        return e instanceof Attribute a && projected.containsKey(a.exprId().id()) ? projected.get(a.exprId().id()) : e;
    }

    /** {@code e} with every attribute replaced by its view column, or null when one has none. */
    private static Expression replace(Expression e, Map<Long, Expression> columns) {
        if (e instanceof Attribute a) {
            return columns.get(a.exprId().id());
        }
        List<Expression> children = PruneCarbonRelations.list(e.children());
        if (children.isEmpty()) {
            return e;
        }
        List<Expression> mapped = new ArrayList<>(children.size());
        for (Expression c : children) {
            Expression m = replace(c, columns);
            if (m == null) {
                return null;
            }
            mapped.add(m);
        }
        return e.withNewChildren(PruneCarbonRelations.seq(mapped));
    }

    /** The view's column keeping {@code func} of {@code column} (null: count(*)), or null. */
    private static Bridge.ViewAggregate kept(Bridge.View view, String func, String column) {
        for (Bridge.ViewAggregate a : view.aggregates()) {
            if (func.equals(a.func()) && java.util.Objects.equals(a.column(), column)) {
                return a;
            }
        }
        return null;
    }

    private static Expression aggregate(AggregateFunction f) {
        return AggregateExpression$.MODULE$.apply(f, Complete$.MODULE$, false, Option.empty());
    }

    private static Expression summed(AttributeReference col) {
        return aggregate(new Sum(col));
    }

    /**
     * {@code count(DISTINCT c)} of a plain grouping column {@code c} of the view: every value of c in a group
     * of the query is the value of c in one or more of the view's rows of that group, so the distinct count
     * over the view's rows is the same; null for anything else.
     */
    private static Expression distinctCount(AggregateExpression ae, AggregateFunction f, List<Expression> args,
                                            String column, Bridge.View view, ViewScan scan) {
        if (!(f instanceof Count) || args.size() != 1 || column == null) {
            return null;
        }
        for (Bridge.ViewGroup g : view.groups()) {
            if (g.granularity() == null && column.equals(g.column())) {
                AttributeReference col = scan.column(g.name());
                if (col == null || !col.dataType().equals(args.get(0).dataType())) {
                    return null;
                }
                Expression out = AggregateExpression$.MODULE$.apply(new Count(PruneCarbonRelations.seq(List.of(col))),
                        Complete$.MODULE$, true, Option.empty());
                return out.dataType().equals(ae.dataType()) ? out : new Cast(out, ae.dataType(), Option.empty());
            }
        }
        return null;
    }

    /** The aggregate over the view's rows giving what {@code ae} gives over the main table's, or null. */
    private static Expression reaggregate(AggregateExpression ae, Shape shape, Bridge.View view, ViewScan scan) {
        if (ae.filter().isDefined()) {
            return null;
        }
        AggregateFunction f = ae.aggregateFunction();
        List<Expression> args = PruneCarbonRelations.list(f.children());
        String column = null;
        if (args.size() == 1 && args.get(0) instanceof AttributeReference a && shape.names().containsKey(a.exprId().id())) {
            column = shape.names().get(a.exprId().id());
        }
        if (ae.isDistinct()) {
            return distinctCount(ae, f, args, column, view, scan);
        }
        Expression out = null;
        if (f instanceof Count) {
            boolean star = !args.isEmpty() && args.stream().allMatch(x -> x instanceof Literal l && l.value() != null);
            Bridge.ViewAggregate k = star ? kept(view, "count", null) : column != null ? kept(view, "count", column) : null;
            AttributeReference col = k == null ? null : scan.column(k.name());
            if (col != null) {
                out = new Coalesce(PruneCarbonRelations.seq(List.of(summed(col), Literal.create(0L, DataTypes.LongType))));
            }
        } else if (column == null) {
            return null;
        } else if (f instanceof Sum || f instanceof Min || f instanceof Max) {
            String func = f instanceof Sum ? "sum" : f instanceof Min ? "min" : "max";
            Bridge.ViewAggregate k = kept(view, func, column);
            AttributeReference col = k == null ? null : scan.column(k.name());
            if (col != null && (f instanceof Sum || col.dataType().equals(args.get(0).dataType()))) {
                // the same function (its evaluation mode kept) over the view's column
                out = aggregate((AggregateFunction) f.withNewChildren(PruneCarbonRelations.seq(List.of(col))));
            }
        } else if (f instanceof Average && !(args.get(0).dataType() instanceof DecimalType)) {
            Bridge.ViewAggregate k = kept(view, "avg", column);
            AttributeReference total = null;
            AttributeReference count = null;
            if (k != null) {
                total = scan.column(k.sum());
                count = scan.column(k.count());
            } else {
                Bridge.ViewAggregate s = kept(view, "sum", column);
                Bridge.ViewAggregate c = kept(view, "count", column);
                if (s != null && c != null) {
                    total = scan.column(s.name());
                    count = scan.column(c.name());
                }
            }
            if (total != null && count != null && !(total.dataType() instanceof DecimalType)) {
                Expression n = new Cast(summed(count), DataTypes.DoubleType, Option.empty());
                Expression s = new Cast(summed(total), DataTypes.DoubleType, Option.empty());
                // no value in the group: null, as avg gives (and no division by zero under ANSI)
                out = new If(new Coalesce(PruneCarbonRelations.seq(List.of(
                        new EqualTo(n, Literal.create(0.0, DataTypes.DoubleType)),
                        Literal.create(true, DataTypes.BooleanType)))),
                        Literal.create(null, DataTypes.DoubleType), new Divide(s, n));
            }
        }
        if (out == null) {
            return null;
        }
        return out.dataType().equals(ae.dataType()) ? out : new Cast(out, ae.dataType(), Option.empty());
    }
}
