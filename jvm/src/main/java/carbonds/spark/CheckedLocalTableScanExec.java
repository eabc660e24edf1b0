package carbonds.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.CommandExecutionMode$;
import org.apache.spark.sql.execution.FilterExec;
import org.apache.spark.sql.execution.ProjectExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.exchange.Exchange;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.reflect.ClassTag$;

/**
 * The local table scan of a carbondata read's rows read at planning ({@link ViewRows}, {@link KnownRows}) that
 * checks, each time it runs, that the table is still in the state the rows were read in (its live segment list
 * and schema bytes, {@link PlanCache#tableState}: one read of the status on the driver). Spark keeps a
 * DataFrame's physical plan for every action, and each action must see the commits before it, as the Python
 * tasks of a kept plan do (carbon_ds.spark.source.query_version): when the table changed, the relation the rows
 * replaced is planned and read again by Spark (its Python tasks), as the table is now. As Spark's own local
 * table scan, it collects its rows without a job (a broadcast of it runs none) and is equal to a scan of the
 * same rows, so Spark reuses one exchange for two alike.
 */
public final class CheckedLocalTableScanExec extends SparkPlan {
    /** What the check needs: the table's folder, its state when read, the relation the rows replaced;
     * {@code asOfCall}: read while carbon_ds.sql planned its statement (the rows stay in every stage). */
    record Recheck(String path, String state, LogicalPlan relation, boolean asOfCall) {
    }

    // set while carbon_ds.sql plans a statement (PlannedQueries), whose DataFrame holds the tables as they were
    // when it returned: its rows read at planning stay where they are
    private static final ThreadLocal<Boolean> AS_OF_CALL = ThreadLocal.withInitial(() -> false);

    private final Seq<Attribute> output;
    private final InternalRow[] rows;  // UnsafeRows of output
    private final transient Recheck check;

    /** Spark's makeCopy calls this (the product's output, then {@link #otherCopyArgs()}): public. */
    public CheckedLocalTableScanExec(Seq<Attribute> output, InternalRow[] rows, Recheck check) {
        this.output = output;
        this.rows = rows;
        this.check = check;
    }

    /** {@code planning}'s result, the rows it reads at planning kept in every stage ({@link Exposed}). */
    static <T> T asOfCall(java.util.function.Supplier<T> planning) {
        return PruneCarbonRelations.with(AS_OF_CALL, true, planning);
    }

    /** Whether this thread plans a carbon_ds.sql statement ({@link #asOfCall}). */
    static boolean planningAsOfCall() {
        return AS_OF_CALL.get();
    }

    @Override
    public Seq<Attribute> output() {
        return output;
    }

    @Override
    public Seq<SparkPlan> children() {
        return PruneCarbonRelations.seq(List.of());
    }

    @Override
    public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> newChildren) {
        return this;  // a leaf
    }

    @Override
    public Seq<Object> otherCopyArgs() {
        return PruneCarbonRelations.seq(List.of(rows, check));
    }

    @Override
    public int productArity() {
        return 1;
    }

    @Override
    public Object productElement(int n) {
        if (n != 0) {
            throw new IndexOutOfBoundsException(n);
        }
        return output;
    }

    @Override
    public boolean canEqual(Object that) {
        return that instanceof CheckedLocalTableScanExec;
    }

    @Override
    public boolean equals(Object other) {
        return other == this || other instanceof CheckedLocalTableScanExec o && output.equals(o.output)
                && Arrays.equals(rows, o.rows) && Objects.equals(check.path(), o.check.path())
                && Objects.equals(check.state(), o.check.state());
    }

    @Override
    public int hashCode() {
        return Objects.hash(output, Arrays.hashCode(rows), check.path(), check.state());
    }

    /** The planned rows while the table is unchanged, else its rows as it is now. */
    private InternalRow[] current() {
        if (check.state().equals(PlanCache.tableState(sparkContext().hadoopConfiguration(), check.path()))) {
            return rows;
        }
        SparkPlan plan = planned(check.relation()).executedPlan();
        return unsafe(plan.executeCollect(), plan.output(), output);
    }

    /** Spark's planning of {@code relation} alone (its Python scan; the planning call gave it its read). */
    private static org.apache.spark.sql.execution.QueryExecution planned(LogicalPlan relation) {
        org.apache.spark.sql.classic.SparkSession session =
                (org.apache.spark.sql.classic.SparkSession) org.apache.spark.sql.SparkSession.active();
        return session.sessionState().executePlan(relation, CommandExecutionMode$.MODULE$.SKIP());
    }

    /** {@code read} (rows of {@code input}) as UnsafeRows of {@code output}: as they are when they already are
     * (rows read at planning are made an array of UnsafeRows once, {@link ReadPlans#arrowRows}: its type says
     * so without a look at each row). */
    private static InternalRow[] unsafe(InternalRow[] read, Seq<Attribute> input, Seq<Attribute> output) {
        if (input.equals(output) && read instanceof UnsafeRow[]) {
            return read;
        }
        List<Expression> columns = new ArrayList<>(PruneCarbonRelations.list(output));
        UnsafeProjection projection = UnsafeProjection.create(PruneCarbonRelations.seq(columns), input);
        InternalRow[] out = new InternalRow[read.length];
        for (int i = 0; i < read.length; i++) {
            out[i] = projection.apply(read[i]).copy();
        }
        return out;
    }

    @Override
    public RDD<InternalRow> doExecute() {
        InternalRow[] now = current();
        // as Spark's own local table scan: the rows spread over the cores, so the stage they start (a join,
        // an aggregation) is not run by one task
        int slices = Math.min(Math.max(now.length, 1), sparkContext().defaultParallelism());
        return sparkContext().parallelize(PruneCarbonRelations.seq(Arrays.asList(now)), slices,
                ClassTag$.MODULE$.apply(InternalRow.class));
    }

    @Override
    public InternalRow[] executeCollect() {
        return current();
    }

    @Override
    public InternalRow[] executeTake(int limit) {
        InternalRow[] now = current();
        return Arrays.copyOf(now, Math.min(Math.max(limit, 0), now.length));
    }

    @Override
    public InternalRow[] executeTail(int limit) {
        InternalRow[] now = current();
        return Arrays.copyOfRange(now, Math.max(0, now.length - Math.max(limit, 0)), now.length);
    }

    /**
     * Puts the relation's Python scan back where rows read at planning would run in the result stage, under
     * no exchange: Spark keeps the RDD a plan node makes for every action on a kept DataFrame, so only a scan
     * under an exchange or broadcast (whose result Spark keeps as well, for any scan) or collected directly
     * runs its check each time. The scan reads what the planning call planned (no Python call); its tasks
     * re-plan when a later action finds the table changed (carbon_ds.spark.source.query_version).
     */
    static final class Exposed extends ColumnarRule {
        @Override
        public Rule<SparkPlan> preColumnarTransitions() {
            return new Rule<SparkPlan>() {
                @Override
                public SparkPlan apply(SparkPlan plan) {
                    return plan instanceof CheckedLocalTableScanExec ? plan : replace(plan);
                }
            };
        }

        private static SparkPlan replace(SparkPlan node) {
            if (node instanceof Exchange || node instanceof QueryStageExec) {
                return node;
            }
            if (node instanceof CheckedLocalTableScanExec scan) {
                if (scan.check.asOfCall()) {
                    return node;
                }
                try {
                    return planned(scan.check.relation()).sparkPlan();
                } catch (RuntimeException | LinkageError e) {
                    return node;  // the rows, checked when collected
                }
            }
            return PruneCarbonRelations.mapChildren(node, Exposed::replace);
        }
    }

    /**
     * Plans a scan of checked rows as {@link CheckedLocalTableScanExec}, and the Projects and Filters right
     * above it one by one (Spark's own strategy would plan them with the scan, as a plain local table scan).
     */
    static final class Strategy extends SparkStrategy {
        @Override
        public Seq<SparkPlan> apply(LogicalPlan plan) {
            if (plan instanceof Project p && checked(p.child())) {
                return PruneCarbonRelations.seq(List.of(new ProjectExec(p.projectList(), planLater(p.child()))));
            }
            if (plan instanceof Filter f && checked(f.child())) {
                return PruneCarbonRelations.seq(List.of(new FilterExec(f.condition(), planLater(f.child()))));
            }
            if (plan instanceof DataSourceV2ScanRelation s && s.scan() instanceof ViewRows scan
                    && scan.check() != null) {
                Seq<Attribute> output = PruneCarbonRelations.seq(new ArrayList<>(PruneCarbonRelations.list(s.output())));
                InternalRow[] rows = unsafe(scan.rows(), output, output);
                return PruneCarbonRelations.seq(List.of(new CheckedLocalTableScanExec(output, rows, scan.check())));
            }
            return PruneCarbonRelations.seq(List.of());
        }

        private static boolean checked(LogicalPlan node) {
            while (node instanceof Project || node instanceof Filter) {
                node = node.children().head();
            }
            return node instanceof DataSourceV2ScanRelation s && s.scan() instanceof ViewRows rows
                    && rows.check() != null;
        }
    }
}
