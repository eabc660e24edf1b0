package carbonds.spark;

import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;

/**
 * The {@code carbondata} provider as a JVM data source (META-INF/services), delegating to the Python data
 * source of that name exactly as Spark's own Python data source provider does.
 *
 * <p>Why it exists: Spark finds a Python data source only through the JVM's <em>active</em> session, which a
 * thread other than the one that started the session does not have, so {@code df.write.format("carbondata")}
 * failed with DATA_SOURCE_NOT_FOUND from thread pools. A registered provider is found by name from any thread
 * and process of the application, and Spark then runs the Python source through the default session.
 *
 * <p>Tables of Spark's catalog get a table that reports what the catalog records ({@link DescribedPythonTable}).
 */
public final class CarbonSource extends PythonDataSourceV2 implements DataSourceRegister {
    // no constructor work: Spark names the instance (setShortName, once) right after it finds it by name
    @Override
    public String shortName() {
        return Names.SOURCE;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new DescribedPythonTable(this, shortName(), schema, partitioning, properties);
    }
}
