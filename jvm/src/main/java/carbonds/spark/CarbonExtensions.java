package carbonds.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.SparkStrategy;

import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * The carbon-ds Spark session extension: {@code spark.sql.extensions=carbonds.spark.CarbonExtensions}.
 *
 * <p>Its rule runs in the optimizer's "Pre CBO Rules" batch: after column pruning and predicate push-down
 * have settled what each relation must deliver, before scan push-down builds the scans. So every plan over a
 * {@code carbondata} relation reads only what it needs, whoever built it (DataFrame calls, {@code spark.sql}
 * over views or tables, Spark Connect, the Thrift server).
 *
 * <p>A pre-CBO rule before it ({@link ViewRewrite}) answers GROUP BY queries from fresh materialized views.
 *
 * <p>An operator-optimization rule ({@link NativeUnion}) reads the external segments of mixed tables with
 * Spark's own file scans, unioned with the carbondata segments' read, before Spark prunes and pushes down.
 *
 * <p>A post-hoc resolution rule ({@link CarbonCatalogTables}) makes carbondata tables of Spark's session
 * catalog readable and writable; a hint-batch rule ({@link CustomSessionCatalogTables}) resolves them first
 * where another catalog (Delta Lake's) replaces the session catalog; and the parser ({@link StoredAsParser}) takes CarbonData's
 * {@code CREATE TABLE ... STORED AS carbondata} as {@code USING carbondata}.
 *
 * <p>A physical rule ({@link ScanRowCopy}) drops the row copy Spark adds over a carbondata scan; a planner
 * strategy ({@link CheckedLocalTableScanExec}) plans rows read at planning as a local scan that checks the table each run.
 */
public final class CarbonExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectOptimizerRule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new NativeUnion(session);
            }
        });
        // before PruneCarbonRelations (rules run in the order injected): the view's relation is pruned too
        extensions.injectPreCBORule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new ViewRewrite(session);
            }
        });
        extensions.injectPreCBORule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new PruneCarbonRelations(session);
            }
        });
        extensions.injectPostHocResolutionRule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new CarbonCatalogTables(session);
            }
        });
        extensions.injectHintResolutionRule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new CustomSessionCatalogTables(session);
            }
        });
        extensions.injectColumnar(new AbstractFunction1<SparkSession, ColumnarRule>() {
            @Override
            public ColumnarRule apply(SparkSession session) {
                return new ScanRowCopy();
            }
        });
        extensions.injectColumnar(new AbstractFunction1<SparkSession, ColumnarRule>() {
            @Override
            public ColumnarRule apply(SparkSession session) {
                return new CheckedLocalTableScanExec.Exposed();
            }
        });
        extensions.injectPlannerStrategy(new AbstractFunction1<SparkSession, SparkStrategy>() {
            @Override
            public SparkStrategy apply(SparkSession session) {
                return new CheckedLocalTableScanExec.Strategy();
            }
        });
        extensions.injectParser(new AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
            @Override
            public ParserInterface apply(SparkSession session, ParserInterface delegate) {
                return StoredAsParser.wrap(session, delegate);
            }
        });
        return BoxedUnit.UNIT;
    }
}
