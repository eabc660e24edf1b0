package carbonds.spark;

import java.util.List;

import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.CodegenSupport;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.ColumnarToRowExec;
import org.apache.spark.sql.execution.ProjectExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Picks, per carbondata scan, the cheaper of its two ways into the rest of the plan, and removes the second
 * copy of every row.
 *
 * <p>A columnar scan ({@link ArrowBatchReads}) pays when generated code consumes its batches in one loop (an
 * aggregate, a join, a filter or a computed projection over it): the values go from the Arrow vectors into
 * the operator. When the rows only leave the plan (a write, a collect, a shuffle, the top of a stage) the
 * generated code returns one row per call, so there the scan reads row by row instead (the same planned
 * partitions).
 *
 * <p>Spark puts a {@code ProjectExec} over each row-based DSv2 scan to turn its rows into UnsafeRows; a Python
 * data source's rows already are (PySpark's MapInBatchEvaluator projects every Arrow row into one), so a
 * projection that selects the scan's own columns in order only copies each row again: a third of the JVM's
 * time in a full scan. It goes; any other projection (renames, expressions, a subset of the columns) stays.
 */
final class ScanRowCopy extends ColumnarRule {
    @Override
    public Rule<SparkPlan> postColumnarTransitions() {
        return new Rule<SparkPlan>() {
            @Override
            public SparkPlan apply(SparkPlan plan) {
                return PruneCarbonRelations.switchedOn() ? drop(plan, false) : plan;
            }
        };
    }

    /** {@code node} with its carbondata scans rewritten; {@code fused}: its parent consumes rows in generated code. */
    static SparkPlan drop(SparkPlan node, boolean fused) {
        if (node instanceof ProjectExec project) {
            SparkPlan child = project.child();
            BatchScanExec scan = child instanceof ColumnarToRowExec toRows && toRows.child() instanceof BatchScanExec b
                    ? b : child instanceof BatchScanExec b ? b : null;
            if (scan != null && carbon(scan) && selectsOutput(project, scan)) {
                return child == scan ? scan : drop(child, fused);
            }
        }
        if (!fused && node instanceof ColumnarToRowExec toRows && toRows.child() instanceof BatchScanExec scan
                && carbon(scan) && scan.scan() instanceof SizedScan sized && sized.columnar()) {
            return withScan(scan, sized.rows());
        }
        boolean consumes = node instanceof CodegenSupport codegen && codegen.supportCodegen();
        return PruneCarbonRelations.mapChildren(node, child -> drop(child, consumes));
    }

    /**
     * {@code exec} reading {@code scan} instead, made from the node's own constructor arguments: the case
     * class's {@code copy} differs between the Spark versions this jar supports (its last parameter is a
     * {@code StoragePartitionJoinParams} in 4.1, {@code keyGroupedPartitioning} in 4.3).
     */
    static SparkPlan withScan(BatchScanExec exec, Scan scan) {
        Object[] args = new Object[exec.productArity()];
        for (int i = 0; i < args.length; i++) {
            Object arg = exec.productElement(i);
            args[i] = arg == exec.scan() ? scan : arg;
        }
        return exec.makeCopy(args);
    }

    private static boolean carbon(BatchScanExec scan) {
        return scan.table() instanceof PythonTable table && Names.SOURCE.equalsIgnoreCase(table.name());
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
