package carbonds.spark;

import java.lang.reflect.Method;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTableType;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Changes to a carbondata table's entry in Spark's session catalog that Spark's SQL cannot express, called
 * by carbon_ds.spark.statements.catalog so that what the catalog records stays what the table is: its columns after a
 * schema change (any change: Spark's ALTER TABLE refuses dropping and retyping columns of a data source table),
 * and MANAGED or EXTERNAL as carbon-ds's owner rule says (Spark's CREATE TABLE refuses a managed table over a
 * folder that already holds data, and carbon-ds creates the table folder before the entry).
 */
public final class CatalogEntries {
    private CatalogEntries() {
    }

    /** Replaces the columns of {@code db.table} (a JSON StructType, partition columns last). */
    public static void replaceSchema(SparkSession session, String db, String table, String schemaJson) {
        SessionCatalog catalog = session.sessionState().catalog();
        catalog.externalCatalog().alterTableSchema(db, table, (StructType) DataType.fromJson(schemaJson));
        catalog.refreshTable(new TableIdentifier(table, Option.apply(db)));
    }

    /**
     * Records {@code db.table} as MANAGED (its DROP TABLE deletes its folder) or EXTERNAL (DROP keeps it). The
     * properties that Spark's V2 path reads the type from ({@code location} given, {@code external}) follow.
     */
    public static void setType(SparkSession session, String db, String table, boolean managed) throws Exception {
        SessionCatalog catalog = session.sessionState().catalog();
        TableIdentifier ident = new TableIdentifier(table, Option.apply(db));
        CatalogTable meta = catalog.getTableMetadata(ident);
        CatalogTableType type = managed ? CatalogTableType.MANAGED() : CatalogTableType.EXTERNAL();
        if (meta.tableType() == type) {
            return;
        }
        java.util.Map<String, String> props = new java.util.LinkedHashMap<>(
                CollectionConverters.asJava(meta.properties()));
        props.remove(TableCatalog.PROP_LOCATION);
        props.remove(TableCatalog.PROP_EXTERNAL);
        if (!managed) {
            props.put(TableCatalog.PROP_EXTERNAL, "true");
        }
        scala.collection.immutable.Map<String, String> newProps =
                scala.collection.immutable.Map.from(CollectionConverters.asScala(props));
        catalog.externalCatalog().alterTable(copy(meta, type, newProps));
        catalog.refreshTable(ident);
    }

    /** {@code meta} with another type and properties: the case class's copy with every other field its default
     * (unchanged), found by name because the copy's parameter list grows between Spark releases; the
     * properties parameter is the one whose default is {@code meta.properties()}. */
    static CatalogTable copy(CatalogTable meta, CatalogTableType type, scala.collection.immutable.Map<String, String> props)
            throws ReflectiveOperationException {
        Method copy = null;
        for (Method m : CatalogTable.class.getMethods()) {
            if (m.getName().equals("copy")) {
                copy = m;
            }
        }
        if (copy == null) {
            throw new NoSuchMethodException("CatalogTable.copy");
        }
        Class<?>[] params = copy.getParameterTypes();
        Object[] args = new Object[params.length];
        for (int i = 0; i < params.length; i++) {
            Object current = CatalogTable.class.getMethod("copy$default$" + (i + 1)).invoke(meta);
            if (params[i] == CatalogTableType.class) {
                args[i] = type;
            } else if (current == meta.properties()) {
                args[i] = props;
            } else {
                args[i] = current;
            }
        }
        return (CatalogTable) copy.invoke(meta, args);
    }
}
