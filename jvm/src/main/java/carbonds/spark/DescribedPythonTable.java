package carbonds.spark;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A carbondata Python table that reports its partitioning and properties, so DESCRIBE [EXTENDED], SHOW CREATE
 * TABLE and {@code spark.catalog.listTables} show what Spark's catalog records (location, provider, type,
 * partition columns, TBLPROPERTIES) instead of an empty managed table; SHOW CREATE TABLE's text then makes the
 * same carbondata table. Spark's session catalog hands the catalog's properties, plus {@code path} (the
 * location), to the provider's getTable; a location given by the user (property {@code location}) or the
 * {@code external} property makes the table EXTERNAL, as Spark's own rule does; a managed table's SHOW CREATE
 * TABLE has no LOCATION, as Spark's has not. Its scans and writes get the location and the table's carbondata
 * options (streaming {@code toTable} and {@code readStream.table} have no other way to them).
 */
final class DescribedPythonTable extends PythonTable {
    private final Transform[] partitioning;
    private final Map<String, String> properties;
    private final Map<String, String> tableOptions;

    DescribedPythonTable(PythonDataSourceV2 source, String shortName, StructType schema, Transform[] partitioning,
            Map<String, String> given) {
        super(source, shortName, schema);
        this.partitioning = partitioning == null ? new Transform[0] : partitioning.clone();
        Map<String, String> props = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : given.entrySet()) {
            if (!e.getKey().equalsIgnoreCase("path")) {
                props.put(e.getKey(), e.getValue());
            }
        }
        boolean managedLocation = "true".equalsIgnoreCase(props.remove(TableCatalog.PROP_IS_MANAGED_LOCATION));
        if (props.containsKey(TableCatalog.PROP_LOCATION) && !managedLocation) {
            props.put(TableCatalog.PROP_EXTERNAL, "true");
        }
        if (!props.containsKey(TableCatalog.PROP_EXTERNAL)) {
            props.put(TableCatalog.PROP_IS_MANAGED_LOCATION, "true");  // SHOW CREATE TABLE: no LOCATION clause
        }
        String path = given.get("path");
        if (path != null) {
            props.put(TableCatalog.PROP_LOCATION, path);
        }
        props.put(TableCatalog.PROP_PROVIDER, shortName);
        this.properties = Map.copyOf(props);
        this.tableOptions = CarbonCatalogTables.tableOptions(given, this.partitioning);
    }

    /** Scans and writes of the table get its location and options; a statement's own options win. */
    private CaseInsensitiveStringMap withTableOptions(CaseInsensitiveStringMap options) {
        Map<String, String> out = new LinkedHashMap<>(tableOptions);
        out.putAll(options.asCaseSensitiveMap());
        return new CaseInsensitiveStringMap(out);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return super.newScanBuilder(withTableOptions(options));
    }

    /** Streaming {@code toTable} and V2 writes hand the writer only the statement's options. */
    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        CaseInsensitiveStringMap options = withTableOptions(info.options());
        return super.newWriteBuilder(new LogicalWriteInfo() {
            @Override
            public CaseInsensitiveStringMap options() {
                return options;
            }

            @Override
            public String queryId() {
                return info.queryId();
            }

            @Override
            public StructType schema() {
                return info.schema();
            }

            @Override
            public Optional<StructType> rowIdSchema() {
                return info.rowIdSchema();
            }

            @Override
            public Optional<StructType> metadataSchema() {
                return info.metadataSchema();
            }
        });
    }

    @Override
    public Transform[] partitioning() {
        return partitioning.clone();
    }

    @Override
    public Map<String, String> properties() {
        return properties;
    }
}
