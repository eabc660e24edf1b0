package carbonds.test;

import org.apache.spark.sql.connector.catalog.DelegatingCatalogExtension;

/** A session catalog that replaces Spark's own and hands every call to it, as Delta Lake's DeltaCatalog does
 * for tables that are not Delta tables. */
public class PassThroughCatalog extends DelegatingCatalogExtension {
}
