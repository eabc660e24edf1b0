package carbonds.spark;

import java.io.File;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.V2WriteCommand;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.TableSpecBase;
import org.apache.spark.sql.catalyst.plans.logical.CreateTableAsSelect;
import org.apache.spark.sql.catalyst.plans.logical.ReplaceTableAsSelect;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

/**
 * Makes {@code carbondata} tables of Spark's session catalog readable and writable.
 *
 * <p>Spark stores such a table (provider, schema, location, properties) but hands a Python data source only
 * the options of the statement: the table's location never reaches it, so every read and write of the table
 * fails for want of a path. This post-hoc resolution rule gives each carbondata relation that comes from the
 * session catalog the options {@code path} (the table's location) plus the table's carbondata properties
 * ({@code TBLPROPERTIES ('sort_columns'=...)}, used when the first write creates the table folder). Writes
 * into the table (INSERT, {@code saveAsTable} in append mode) take their options from the relation. CTAS and
 * REPLACE ... AS SELECT create the table while they run, so their write options get the location the table
 * will have: the one given, else Spark's default for a managed table.
 */
public final class CarbonCatalogTables extends Rule<LogicalPlan> {
    /** Table properties that describe a carbondata table, and so pass to its reads and writes. */
    private static final Set<String> TABLE_OPTIONS = tableOptions();
    private static final String SESSION_CATALOG = "spark_catalog";

    private final SparkSession session;

    CarbonCatalogTables(SparkSession session) {
        this.session = session;
    }

    private static Set<String> tableOptions() {
        Set<String> out = new java.util.HashSet<>(Names.TABLE_OPTIONS);
        out.add(Names.PARTITION_BY_OPTION);
        out.add(Names.COMPRESSOR_OPTION);
        return Set.copyOf(out);
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        return plan.transformUpWithSubqueries(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan node) {
                return tableRelation(node) != null || ctasTarget(node) != null
                        || node instanceof V2WriteCommand w && w.table() instanceof LogicalPlan t && tableRelation(t) != null;
            }

            @Override
            public LogicalPlan apply(LogicalPlan node) {
                if (node instanceof V2WriteCommand w) {  // INSERT, saveAsTable(append): the target is no child
                    return (LogicalPlan) w.withNewTable(withPath(tableRelation((LogicalPlan) w.table())));
                }
                DataSourceV2Relation rel = tableRelation(node);
                if (rel == null) {
                    return withWritePath(node);
                }
                DataSourceV2Relation read = withPath(rel);
                // a table Spark created whose first write has not come yet has no folder (or an empty one): no rows
                if (hasData(read.options().get("path"))) {
                    return read;
                }
                List<Attribute> output = new ArrayList<>(PruneCarbonRelations.list(read.output()));
                return new LocalRelation(PruneCarbonRelations.seq(output),
                        PruneCarbonRelations.seq(new ArrayList<InternalRow>()), false, Option.empty());
            }
        });
    }

    /** A carbondata relation Spark made from a session-catalog table, still without a path; else null. */
    private static DataSourceV2Relation tableRelation(LogicalPlan node) {
        if (!(node instanceof DataSourceV2Relation rel) || !(rel.table() instanceof PythonTable table)
                || !Names.SOURCE.equalsIgnoreCase(table.name())
                || rel.identifier().isEmpty() || rel.catalog().isEmpty()
                || !SESSION_CATALOG.equals(rel.catalog().get().name())) {
            return null;
        }
        return rel.options().containsKey("path") || rel.options().containsKey("paths") ? null : rel;
    }

    /** The identifier a carbondata CTAS / RTAS of the session catalog creates, when its writes lack a path. */
    private static Identifier ctasTarget(LogicalPlan node) {
        Ctas plan = Ctas.of(node);
        if (plan == null || !(plan.name() instanceof ResolvedIdentifier id)) {
            return null;
        }
        TableSpecBase spec = plan.tableSpec();
        Option<String> provider = spec.provider();
        CatalogPlugin catalog = id.catalog();
        if (provider.isEmpty() || !Names.SOURCE.equalsIgnoreCase(provider.get())
                || !SESSION_CATALOG.equals(catalog.name()) || plan.writeOptions().contains("path")) {
            return null;
        }
        return id.identifier();
    }

    private boolean hasData(String path) {
        try {
            Path dir = new Path(path);
            FileSystem fs = dir.getFileSystem(session.sessionState().newHadoopConf());
            return fs.exists(dir) && fs.listStatus(dir).length > 0;
        } catch (Exception e) {  // unreachable store: the reader reports it with its own words
            return true;
        }
    }

    private DataSourceV2Relation withPath(DataSourceV2Relation rel) {
        CatalogTable meta;
        try {
            meta = session.sessionState().catalog().getTableMetadata(tableId(rel.identifier().get()));
        } catch (Exception e) {  // NoSuchTable / NoSuchNamespace, declared by Scala: Spark's own error follows
            return rel;
        }
        Map<String, String> options = new LinkedHashMap<>();
        options.putAll(CollectionConverters.asJava(meta.storage().properties()));  // OPTIONS (...)
        carbonProperties(CollectionConverters.asJava(meta.properties()), options);
        if (!meta.partitionColumnNames().isEmpty()) {  // the first write creates the table partitioned so
            options.put(Names.PARTITION_BY_OPTION, String.join(",", CollectionConverters.asJava(meta.partitionColumnNames())));
        }
        options.putAll(rel.options().asCaseSensitiveMap());
        options.put("path", localPath(meta.location()));
        Object[] args = PruneCarbonRelations.args(rel);
        for (int i = 0; i < args.length; i++) {
            if (args[i] instanceof CaseInsensitiveStringMap) {
                args[i] = new CaseInsensitiveStringMap(options);
            }
        }
        return (DataSourceV2Relation) rel.makeCopy(args);
    }

    /** The parts of CREATE / REPLACE TABLE ... AS SELECT (and saveAsTable) this rule reads. */
    private record Ctas(LogicalPlan name, TableSpecBase tableSpec, scala.collection.immutable.Map<String, String> writeOptions,
            scala.collection.immutable.Seq<Transform> partitioning) {
        static Ctas of(LogicalPlan node) {
            if (node instanceof CreateTableAsSelect c) {
                return new Ctas(c.name(), c.tableSpec(), c.writeOptions(), c.partitioning());
            }
            if (node instanceof ReplaceTableAsSelect r) {
                return new Ctas(r.name(), r.tableSpec(), r.writeOptions(), r.partitioning());
            }
            return null;
        }
    }

    private LogicalPlan withWritePath(LogicalPlan node) {
        Identifier ident = ctasTarget(node);
        Ctas plan = Ctas.of(node);
        TableSpecBase spec = plan.tableSpec();
        String path = spec.location().isDefined()
                ? localPath(spec.location().get())
                : localPath(session.sessionState().catalog().defaultTablePath(tableId(ident)));
        Map<String, String> options = new LinkedHashMap<>();
        carbonProperties(CollectionConverters.asJava(spec.properties()), options);
        String names = partitionNames(CollectionConverters.asJava(plan.partitioning()).toArray(new Transform[0]));
        if (!names.isEmpty()) {
            options.put(Names.PARTITION_BY_OPTION, names);  // CTAS ... PARTITIONED BY (c): a Hive-partitioned table
        }
        options.putAll(CollectionConverters.asJava(plan.writeOptions()));
        options.put("path", path);
        scala.collection.immutable.Map<String, String> old = plan.writeOptions();
        Object[] args = PruneCarbonRelations.args(node);
        for (int i = 0; i < args.length; i++) {
            if (args[i] == old) {
                args[i] = scala.collection.immutable.Map.from(CollectionConverters.asScala(options));
            }
        }
        return (LogicalPlan) node.makeCopy(args);
    }

    /** The data source options a catalog table gives its reads and writes: its location ({@code path}), its
     * carbondata TBLPROPERTIES and its partition columns ({@code partition_by}, for the write that creates
     * the table folder). */
    static Map<String, String> tableOptions(Map<String, String> properties, Transform[] partitioning) {
        Map<String, String> out = new LinkedHashMap<>();
        carbonProperties(properties, out);
        String names = partitionNames(partitioning);
        if (!names.isEmpty()) {
            out.putIfAbsent(Names.PARTITION_BY_OPTION, names);
        }
        if (properties.get("path") != null) {
            out.put("path", localPath(properties.get("path")));
        }
        return out;
    }

    /** "a,b" for identity partition transforms (PARTITIONED BY (a, b)); empty for none. */
    static String partitionNames(Transform[] partitioning) {
        List<String> names = new ArrayList<>();
        for (Transform t : partitioning) {
            if ("identity".equals(t.name()) && t.references().length == 1) {
                names.add(String.join(".", t.references()[0].fieldNames()));
            }
        }
        return String.join(",", names);
    }

    private static void carbonProperties(Map<String, String> properties, Map<String, String> out) {
        for (Map.Entry<String, String> e : properties.entrySet()) {
            if (TABLE_OPTIONS.contains(e.getKey().toLowerCase(java.util.Locale.ROOT))) {
                out.put(e.getKey().toLowerCase(java.util.Locale.ROOT), e.getValue());
            }
        }
    }

    private TableIdentifier tableId(Identifier ident) {
        String[] ns = ident.namespace();
        String db = ns.length > 0 ? ns[ns.length - 1] : session.sessionState().catalog().getCurrentDatabase();
        return new TableIdentifier(ident.name(), Option.apply(db));
    }

    /** A location as given in SQL: a URI with a scheme, else a local path. */
    static String localPath(String location) {
        return location.matches("^[A-Za-z][A-Za-z0-9+.-]*:.*") && !location.matches("^[A-Za-z]:[\\\\/].*")
                ? localPath(URI.create(location)) : new File(location).getAbsolutePath();
    }

    /** file: URIs as plain paths (what carbon-ds and pyarrow take for local folders); others unchanged. */
    static String localPath(URI uri) {
        if (uri.getScheme() == null) {
            return new File(uri.getPath()).getAbsolutePath();
        }
        return "file".equals(uri.getScheme()) ? new File(uri).getPath() : uri.toString();
    }
}
