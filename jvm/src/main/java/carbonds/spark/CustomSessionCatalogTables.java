package carbonds.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.catalyst.plans.logical.InsertIntoStatement;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias$;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation$;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.List;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

/**
 * Resolves {@code carbondata} tables of Spark's session catalog when that catalog is replaced by another
 * ({@code spark.sql.catalog.spark_catalog}, e.g. Delta Lake's {@code DeltaCatalog}).
 *
 * <p>Spark's own session catalog loads a table of a Python data source as that source's table. A replacing
 * catalog that delegates to it (Spark's {@code DelegatingCatalogExtension}) gets the stored table description
 * instead, and Spark then looks for a file source named {@code carbondata}, which a Python source is not:
 * every read and INSERT of the table fails ("carbondata is not a valid Spark SQL Data Source"). This rule
 * runs in the analyzer's hint batch, before relations are resolved, and resolves such a table's name the way
 * Spark's own catalog would: the data source's table with the stored schema, then {@link CarbonCatalogTables}
 * gives it its location and properties. It does nothing when the session catalog is Spark's own, for
 * temporary views, for names of other catalogs and for tables of other formats.
 */
final class CustomSessionCatalogTables extends Rule<LogicalPlan> {
    private static final String SESSION_CATALOG = "spark_catalog";
    private static final String CATALOG_CONF = "spark.sql.catalog." + SESSION_CATALOG;

    private final SparkSession session;

    CustomSessionCatalogTables(SparkSession session) {
        this.session = session;
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        String impl = session.sessionState().conf().getConfString(CATALOG_CONF, "builtin").trim();
        if (impl.isEmpty() || "builtin".equalsIgnoreCase(impl)) {
            return plan;
        }
        return plan.transformDownWithSubqueries(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            // a name is looked up in the catalog once, here: isDefinedAt only picks the node kinds
            @Override
            public boolean isDefinedAt(LogicalPlan node) {
                return node instanceof UnresolvedRelation
                        || node instanceof InsertIntoStatement i && i.table() instanceof UnresolvedRelation;
            }

            @Override
            public LogicalPlan apply(LogicalPlan node) {
                if (node instanceof InsertIntoStatement i) {  // the target is no child, and stays unaliased
                    UnresolvedRelation target = (UnresolvedRelation) i.table();
                    CatalogTable meta = catalogTable(target);
                    if (meta == null) {
                        return node;
                    }
                    Object[] args = PruneCarbonRelations.args(i);  // its fields differ between Spark releases
                    for (int k = 0; k < args.length; k++) {
                        if (args[k] == target) {
                            args[k] = relation(target, meta);
                        }
                    }
                    return (LogicalPlan) i.makeCopy(args);
                }
                UnresolvedRelation u = (UnresolvedRelation) node;
                CatalogTable meta = catalogTable(u);
                if (meta == null) {
                    return node;
                }
                TableIdentifier id = meta.identifier();
                List<String> qualified = List.of(SESSION_CATALOG, id.database().get(), id.table());
                return SubqueryAlias$.MODULE$.apply(PruneCarbonRelations.seq(qualified), relation(u, meta));
            }
        });
    }

    /** The carbondata table of the session catalog a batch read or write of this name refers to; else null. */
    private CatalogTable catalogTable(UnresolvedRelation u) {
        if (u.isStreaming()) {
            return null;
        }
        List<String> parts = CollectionConverters.asJava(u.multipartIdentifier());
        SessionCatalog catalog = session.sessionState().catalog();
        CatalogManager manager = session.sessionState().catalogManager();
        boolean sessionCurrent = SESSION_CATALOG.equalsIgnoreCase(manager.currentCatalog().name());
        TableIdentifier id;
        if (parts.size() == 3 && SESSION_CATALOG.equalsIgnoreCase(parts.get(0))) {
            id = new TableIdentifier(parts.get(2), Option.apply(parts.get(1)));
        } else if (sessionCurrent && parts.size() == 2) {
            id = new TableIdentifier(parts.get(1), Option.apply(parts.get(0)));
        } else if (sessionCurrent && parts.size() == 1) {
            id = new TableIdentifier(parts.get(0), Option.apply(catalog.getCurrentDatabase()));
        } else {
            return null;
        }
        try {
            if (parts.size() < 3 && catalog.isTempView(u.multipartIdentifier()) || !catalog.tableExists(id)) {
                return null;
            }
            CatalogTable meta = catalog.getTableMetadata(id);
            return meta.provider().isDefined() && Names.SOURCE.equalsIgnoreCase(meta.provider().get()) ? meta : null;
        } catch (Exception e) {  // NoSuchNamespace and the like, declared by Scala: Spark's own error follows
            return null;
        }
    }

    /** The data source's relation for the table, as Spark's own session catalog makes it. */
    private DataSourceV2Relation relation(UnresolvedRelation u, CatalogTable meta) {
        PythonDataSourceV2 source = new PythonDataSourceV2();
        source.setShortName(Names.SOURCE);
        Table table = source.getTable(meta.schema(), new Transform[0], java.util.Map.of());
        CatalogPlugin catalog = session.sessionState().catalogManager().v2SessionCatalog();
        TableIdentifier id = meta.identifier();
        Identifier ident = Identifier.of(new String[] {id.database().get()}, id.table());
        // a write target's name carries the privileges it needs as an option, for the catalog, not the source
        java.util.Map<String, String> options = new java.util.LinkedHashMap<>(u.options().asCaseSensitiveMap());
        options.keySet().removeIf(k -> k.equalsIgnoreCase(UnresolvedRelation.REQUIRED_WRITE_PRIVILEGES()));
        return DataSourceV2Relation$.MODULE$.create(table, Option.apply(catalog), Option.apply(ident),
                new CaseInsensitiveStringMap(options), Option.empty());
    }
}
