package carbonds.spark;

import java.util.List;

import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.ProjectExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Removes the second copy of every row a carbondata scan returns. Spark puts a {@code ProjectExec} over each
 * row-based DSv2 scan to turn its rows into UnsafeRows; a Python data source's rows already are (PySpark's
 * MapInBatchEvaluator projects every Arrow row into one), so a projection that selects the scan's own
 * columns in order only copies each row again: a third of the JVM's time in a full scan. Any other
 * projection (renames, expressions, a subset of the columns) stays.
 */
final class ScanRowCopy extends ColumnarRule {
    @Override
    public Rule<SparkPlan> postColumnarTransitions() {
        return new Rule<SparkPlan>() {
            @Override
            public SparkPlan apply(SparkPlan plan) {
                return PruneCarbonRelations.switchedOn() ? drop(plan) : plan;
            }
        };
    }

    static SparkPlan drop(SparkPlan node) {
        if (node instanceof ProjectExec project && project.child() instanceof BatchScanExec scan
                && carbon(scan) && selectsOutput(project, scan)) {
            return scan;
        }
        return PruneCarbonRelations.mapChildren(node, ScanRowCopy::drop);
    }

    private static boolean carbon(BatchScanExec scan) {
        return scan.table() instanceof PythonTable table && PruneCarbonRelations.SOURCE.equalsIgnoreCase(table.name());
    }

    private static boolean selectsOutput(ProjectExec project, BatchScanExec scan) {
        List<NamedExpression> select = CollectionConverters.asJava(project.projectList());
        List<AttributeReference> output = CollectionConverters.asJava(scan.output());
        if (select.size() != output.size()) {
            return false;
        }
        for (int i = 0; i < select.size(); i++) {
            if (!(select.get(i) instanceof Attribute a) || !a.exprId().equals(output.get(i).exprId())
                    || !a.dataType().equals(output.get(i).dataType())) {
                return false;
            }
        }
        return true;
    }
}
