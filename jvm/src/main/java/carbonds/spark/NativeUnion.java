package carbonds.spark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Option;

/**
 * Reads the external segments of a mixed table (ADD SEGMENT Parquet / ORC / CSV / JSON folders) with
 * Spark's own file scans: each {@code carbondata} relation of a table that has such segments becomes the
 * union of the {@code carbondata} read of its carbondata segments and one Spark scan per set of external
 * files read alike, each projected to the table's columns.
 *
 * <p>The rule runs inside the optimizer's operator batch, so Spark's own rules then prune the union's
 * columns into every scan, push the query's filters into each child (row-group and stripe pruning) and
 * fold the literal partition columns (a folder whose value cannot match is never read); the carbondata
 * child is pruned afterwards by {@link PruneCarbonRelations} like any relation. The table's files are
 * listed once per optimization, so every query reads the snapshot it planned and a plan Spark keeps
 * (a DataFrame, a view) sees later commits.
 *
 * <p>Which files and how to project them is the Python side's (carbon_ds.spark.bridge.native_read.describe):
 * asked through the data source's schema call, the one value a planner call hands the JVM. The Spark schema
 * of each set of files is inferred here once (a footer read) and handed back in later questions. The conf
 * {@code carbon_ds.spark.nativeExternal=false} turns the rule off: the data source then reads every segment.
 * The answer is kept for the next query while the table's metadata and files are unchanged ({@link PlanCache}).
 */
final class NativeUnion extends Rule<LogicalPlan> {
    // tablestatus fileFormat values of the formats the carbondata source reads itself
    private static final Set<String> OWN_FORMATS = Set.of("columnar_v3", "carbondata", "row_v1");
    private static final Set<String> READABLE = Set.of("Success", "Marked for Update", "Partial Success");
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Table metadata a caller already read for the query planned on this thread, by table path. */
    private static final ThreadLocal<Map<String, LiveStatus.Metadata>> STATUSES = new ThreadLocal<>();
    private static final int KNOWN_TABLES = 64;
    private static final Pattern KEPT = Pattern.compile("`((?:[^`]|``)+)` AS `((?:[^`]|``)+)`");
    // table path -> {files key -> Spark's schema of those files}; the keys of the latest plan of each table
    private static final Map<String, Map<String, StructType>> KNOWN = Collections.synchronizedMap(
            new LinkedHashMap<>(16, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, Map<String, StructType>> eldest) {
                    return size() > KNOWN_TABLES;
                }
            });

    private final SparkSession session;
    private final ViewRewrite views;

    NativeUnion(SparkSession session) {
        this.session = session;
        this.views = new ViewRewrite(session);
    }

    static boolean enabled() {
        return PruneCarbonRelations.switchedOn()
                && "true".equalsIgnoreCase(SQLConf.get().getConfString(Names.CONF_NATIVE, "true").trim());
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        return enabled() ? expand(plan) : plan;
    }

    private LogicalPlan expand(LogicalPlan node) {
        DataSourceV2Relation rel = PruneCarbonRelations.candidate(node);
        if (rel != null) {
            return rel.options().containsKey(Names.EXPANDED_OPTION) ? rel : union(rel);
        }
        if (node instanceof Aggregate agg && mixed(agg)) {
            // a materialized view answers over every segment, external ones too: asked before the relation
            // becomes a union, which the view rule (a later, pre-CBO rule) no longer recognizes
            LogicalPlan answered = views.answerWhole(agg);
            if (answered != null) {
                return PruneCarbonRelations.mapChildren(answered, this::expand);
            }
        }
        return PruneCarbonRelations.mapChildren(node, this::expand);
    }

    /** Whether {@code agg} reads a whole carbondata table, not yet expanded, that has external segments. */
    private boolean mixed(Aggregate agg) {
        if (!ViewRewrite.enabled()) {
            return false;
        }
        DataSourceV2Relation rel = ViewRewrite.wholeRelation(agg);
        if (rel == null || rel.options().containsKey(Names.EXPANDED_OPTION)) {
            return false;
        }
        String path = rel.options().get("path");
        LiveStatus.Metadata metadata = path == null ? null : metadata(session.sparkContext().hadoopConfiguration(), path);
        return metadata != null && metadata.status() != null && hasExternal(metadata.status());
    }

    /** The relation as the union of its parts, or the relation marked as needing none. */
    private LogicalPlan union(DataSourceV2Relation rel) {
        String path = rel.options().get("path");
        List<AttributeReference> output = PruneCarbonRelations.list(rel.output());
        Configuration conf = session.sparkContext().hadoopConfiguration();
        LiveStatus.Metadata metadata = path == null || output.isEmpty() ? null : metadata(conf, path);
        if (metadata == null || metadata.status() == null || !hasExternal(metadata.status())) {
            return withOptions(rel, Map.of(Names.EXPANDED_OPTION, "none"));
        }
        StructField[] fields = new StructField[output.size()];
        for (int i = 0; i < fields.length; i++) {
            AttributeReference a = output.get(i);
            fields[i] = new StructField(a.name(), a.dataType(), a.nullable(), a.metadata());
        }
        StructType declared = new StructType(fields);
        try {
            String state = state(metadata, declared, rel.options().get(Names.SEGMENTS_OPTION));
            Bridge.NativePlan plan = state == null ? null : PlanCache.get(conf, path, state);
            if (plan != null && !schemasKnown(plan, path)) {
                plan = null;
            }
            if (plan == null) {
                plan = ask(rel, path, declared);
                if (plan != null && missingSchemas(plan, path)) {
                    plan = ask(rel, path, declared);
                }
                if (plan == null || missingSchemas(plan, path)) {
                    return withOptions(rel, Map.of(Names.EXPANDED_OPTION, "none"));
                }
                if (state != null) {
                    PlanCache.put(path, state, plan);
                }
            }
            return build(rel, output, plan, PlanCache.relations(path, state));
        } catch (RuntimeException | java.io.IOException e) {
            // the data source reads every segment itself, and reports a real problem with the table there
            logWarning(() -> "carbon-ds: external segments of " + path + " read through the data source: " + e);
            return withOptions(rel, Map.of(Names.EXPANDED_OPTION, "none"));
        }
    }

    /** The table's schema and live segment list (LiveStatus), or null when it has no readable schema. */
    static LiveStatus.Metadata metadata(Configuration conf, String path) {
        Map<String, LiveStatus.Metadata> read = STATUSES.get();
        LiveStatus.Metadata known = read == null ? null : read.get(path);
        return known != null ? known : LiveStatus.read(conf, path);
    }

    /** {@code planning}'s result, with this thread's reads of the given tables' metadata answered by what
     * was already read (by path) while it runs. */
    static <T> T withStatuses(Map<String, LiveStatus.Metadata> statuses, java.util.function.Supplier<T> planning) {
        return PruneCarbonRelations.with(STATUSES, statuses, planning);
    }

    /** Whether a tablestatus lists a readable segment in a format the data source does not own. */
    static boolean hasExternal(byte[] status) {
        try {
            for (JsonNode e : JSON.readTree(status)) {
                String format = e.path("fileFormat").asText("columnar_v3").toLowerCase(java.util.Locale.ROOT);
                boolean visible = !"false".equalsIgnoreCase(e.path("visibility").asText("true"));
                if (visible && READABLE.contains(e.path("loadStatus").asText("")) && !OWN_FORMATS.contains(format)) {
                    return true;
                }
            }
            return false;
        } catch (Exception e) {
            return false;
        }
    }

    /** What the Python side's plan of this relation depends on, beside the external files' sizes: the
     * live segment list file and its bytes and the schema bytes (every commit writes the one, every ALTER
     * the other), the columns asked for and the segments option; null when the metadata cannot be read
     * (no caching then). */
    private static String state(LiveStatus.Metadata metadata, StructType declared, String segments) {
        String table = metadata.state();
        return table == null ? null : table + "/" + segments + "/" + declared.json();
    }

    /** The Python side's plan (native_read.describe) of this relation, or null when there is nothing to union. */
    private Bridge.NativePlan ask(DataSourceV2Relation rel, String path, StructType declared) throws java.io.IOException {
        Map<String, JsonNode> known = new LinkedHashMap<>();
        Map<String, StructType> schemas = KNOWN.get(path);
        if (schemas != null) {
            synchronized (schemas) {
                for (Map.Entry<String, StructType> e : schemas.entrySet()) {
                    known.put(e.getKey(), Bridge.JSON.readTree(e.getValue().json()));
                }
            }
        }
        Bridge.NativePlanRequest request = new Bridge.NativePlanRequest(Bridge.JSON.readTree(declared.json()), known,
                Bridge.VERSION);
        Bridge.NativePlanAnswer answer = SchemaCall.ask(rel, Names.NATIVE_PLAN_OPTION, request,
                Bridge.NativePlanAnswer.class);
        return answer == null ? null : answer.plan();
    }

    /** Infers Spark's schema of each set of files the plan has no select list for; whether there was one. */
    private boolean missingSchemas(Bridge.NativePlan plan, String path) {
        Map<String, StructType> fresh = Collections.synchronizedMap(new HashMap<>());
        boolean missing = false;
        Map<String, StructType> old = KNOWN.getOrDefault(path, Map.of());
        for (Bridge.FileGroup group : plan.groups()) {
            String key = group.key();
            StructType schema = old.get(key);
            if (group.select() == null) {
                missing = true;
                if (schema == null) {
                    schema = reader(group).load(paths(group)).schema();
                }
            }
            if (schema != null) {
                fresh.put(key, schema);
            }
        }
        KNOWN.put(path, fresh);
        return missing;
    }

    /** Whether Spark's schema of every set of files of {@code plan} is known (inferred for an earlier plan). */
    private static boolean schemasKnown(Bridge.NativePlan plan, String path) {
        Map<String, StructType> schemas = KNOWN.get(path);
        if (schemas == null) {
            return false;
        }
        for (Bridge.FileGroup group : plan.groups()) {
            if (!schemas.containsKey(group.key())) {
                return false;
            }
        }
        return true;
    }

    private org.apache.spark.sql.DataFrameReader reader(Bridge.FileGroup group) {
        return session.read().format(group.format()).options(group.options());
    }

    private static String[] paths(Bridge.FileGroup group) {
        return group.paths().toArray(new String[0]);
    }

    private LogicalPlan build(DataSourceV2Relation rel, List<AttributeReference> output, Bridge.NativePlan plan,
                              Map<String, LogicalRelation> relations) {
        Map<String, StructType> schemas = KNOWN.getOrDefault(rel.options().get("path"), Map.of());
        List<LogicalPlan> children = new ArrayList<>();
        List<String> carbon = plan.carbon_segments();
        if (!carbon.isEmpty()) {
            DataSourceV2Relation part = withOptions(rel,
                    Map.of(Names.EXPANDED_OPTION, "true", Names.SEGMENTS_OPTION, String.join(",", carbon)));
            // a new source instance: the relation's own caches the Python data source made without the segments
            PythonDataSourceV2 source = new PythonDataSourceV2();
            String name = ((PythonTable) rel.table()).name();
            source.setShortName(name);
            Object[] args = PruneCarbonRelations.args(part);
            for (int i = 0; i < args.length; i++) {
                if (args[i] instanceof org.apache.spark.sql.connector.catalog.Table) {
                    args[i] = new PythonTable(source, name, rel.schema());
                }
            }
            children.add((LogicalPlan) part.makeCopy(args));
        }
        for (Bridge.FileGroup group : plan.groups()) {
            List<String> select = group.select() == null ? List.of() : group.select();
            String key = group.key();
            LogicalRelation read = relations.computeIfAbsent(key, k -> resolved(group, schemas.get(k)));
            if (read != null && kept(select, read)) {
                children.add(read.newInstance());  // fresh attribute ids for every occurrence
                continue;
            }
            Dataset<Row> df = (read != null ? session.baseRelationToDataFrame(read.relation())
                    : reader(group).schema(schemas.get(key)).load(paths(group)))
                    .selectExpr(select.toArray(new String[0]));
            // optimized on its own first: the analysis-finishing rules (current_timezone() and the
            // replaceable functions such as to_date) ran before this rule in the query's optimizer
            children.add(df.queryExecution().optimizedPlan());
        }
        if (carbon.isEmpty()) {
            // the union's output is its first child's: give that child the relation's attributes
            children.set(0, renamed(children.get(0), output));
        }
        return children.size() == 1 ? children.get(0) : new Union(PruneCarbonRelations.seq(children), false, false);
    }

    /** Whether the plan's select list keeps every column of {@code read} as it is, in order ({@code `x` AS
     * `x`}: a segment whose files match the table's schema): the relation itself then serves, with no
     * expression parsed or analysed (about a millisecond each). */
    private static boolean kept(List<String> select, LogicalRelation read) {
        List<AttributeReference> have = PruneCarbonRelations.list(read.output());
        if (select.size() != have.size()) {
            return false;
        }
        for (int i = 0; i < have.size(); i++) {
            Matcher m = KEPT.matcher(select.get(i));
            if (!m.matches() || !m.group(1).equals(m.group(2))
                    || !m.group(1).replace("``", "`").equals(have.get(i).name())) {
                return false;
            }
        }
        return true;
    }

    /** Spark's relation over one group of files (its file index lists them once), or null when the read
     * resolves to something else. */
    private LogicalRelation resolved(Bridge.FileGroup group, StructType schema) {
        LogicalPlan read = reader(group).schema(schema).load(paths(group)).queryExecution().analyzed();
        return read instanceof LogicalRelation lr ? lr : null;
    }

    /** {@code plan} with its output renamed to {@code attrs} (same names, types and expression ids). */
    private static LogicalPlan renamed(LogicalPlan plan, List<AttributeReference> attrs) {
        List<Attribute> have = PruneCarbonRelations.list(plan.output());
        List<NamedExpression> list = new ArrayList<>();
        for (int i = 0; i < attrs.size(); i++) {
            AttributeReference a = attrs.get(i);
            list.add(new Alias(have.get(i), a.name(), a.exprId(), a.qualifier(), Option.empty(),
                    PruneCarbonRelations.seq(List.of())));
        }
        return new Project(PruneCarbonRelations.seq(list), plan);
    }

    private static DataSourceV2Relation withOptions(DataSourceV2Relation rel, Map<String, String> extra) {
        Map<String, String> options = new LinkedHashMap<>(rel.options().asCaseSensitiveMap());
        for (String key : extra.keySet()) {
            options.keySet().removeIf(k -> k.equalsIgnoreCase(key));
        }
        options.putAll(extra);
        Object[] args = PruneCarbonRelations.args(rel);
        for (int i = 0; i < args.length; i++) {
            if (args[i] instanceof CaseInsensitiveStringMap) {
                args[i] = new CaseInsensitiveStringMap(options);
            }
        }
        return (DataSourceV2Relation) rel.makeCopy(args);
    }
}
