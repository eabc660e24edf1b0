package carbonds.spark;

import java.time.ZoneId;
import java.time.Instant;
import java.time.LocalDate;
import java.time.zone.ZoneOffsetTransition;
import java.time.zone.ZoneRules;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Complete$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampType;
import scala.Option;

/**
 * {@code GROUP BY} keys {@code count(*)} straight over a carbondata relation, counted in its read tasks:
 * each task hands Spark one row per group it saw (the keys and their count) rather than every row, and
 * Spark sums the counts. A key is a column or the day of a timestamp column ({@code to_date(ts)}, a cast to
 * date) in the cast's time zone, whose UTC offsets and their changes (this JVM's rules) travel with the
 * request; a float key is left to Spark, which groups NaN and -0.0 its own way.
 *
 * <p>The relation becomes one that declares the keys and the count (option
 * {@value Names#PARTIAL_COUNTS_OPTION}, read by carbon_ds.spark.source.partial_counts); the Aggregate sums the counts, its outputs keeping their expression ids,
 * so nothing above changes. Only an Aggregate directly over the relation (through a projection of its
 * columns) qualifies: a Filter between them keeps every row's evaluation with Spark. A single plain column
 * key is left as it is: a partitioned table's partition column is counted from metadata ({@link KnownRows}).
 * The conf {@value Names#CONF_PARTIAL_COUNTS} turns it off.
 */
final class PartialCounts {
    // a zone's transitions are sent from 1800 (before any in the tz database) to 2400
    private static final long FROM_SECONDS = LocalDate.of(1800, 1, 1).toEpochDay() * 86_400L;
    private static final long UNTIL_SECONDS = LocalDate.of(2400, 1, 1).toEpochDay() * 86_400L;

    private PartialCounts() {
    }

    static boolean enabled() {
        return !"false".equalsIgnoreCase(SQLConf.get().getConfString(Names.CONF_PARTIAL_COUNTS, "true").trim());
    }

    /** {@code node} with every qualifying Aggregate counted in its relation's tasks; {@code made} follows. */
    static LogicalPlan push(LogicalPlan node, List<ReadPlans.Made> made) {
        if (node instanceof Aggregate agg) {
            LogicalPlan counted = rewrite(agg, made);
            if (counted != null) {
                return counted;
            }
        }
        return PruneCarbonRelations.mapChildren(node, child -> push(child, made));
    }

    private static LogicalPlan rewrite(Aggregate agg, List<ReadPlans.Made> made) {
        LogicalPlan child = agg.child();
        // Spark pulls a grouping expression out into a projection below (_groupingexpression): its
        // attributes stand for their expressions over the relation's columns
        Map<Long, Expression> projected = new HashMap<>();
        if (child instanceof Project project) {
            for (NamedExpression e : PruneCarbonRelations.list(project.projectList())) {
                if (e instanceof Alias alias) {
                    projected.put(alias.exprId().id(), alias.child());
                } else if (!(e instanceof Attribute)) {
                    return null;
                }
            }
            child = project.child();
        }
        int at = -1;
        for (int i = 0; i < made.size(); i++) {
            if (made.get(i).relation() == child) {
                at = i;
            }
        }
        if (at < 0) {
            return null;
        }
        DataSourceV2Relation rel = made.get(at).relation();
        if (rel.output().isEmpty() || PruneCarbonRelations.readsRowPositions(rel)
                || rel.options().containsKey(Names.PARTIAL_COUNTS_OPTION)) {
            return null;
        }
        List<Expression> groups = PruneCarbonRelations.list(agg.groupingExpressions());
        if (groups.isEmpty() || groups.size() == 1 && unalias(groups.get(0), projected) instanceof Attribute) {
            return null;  // count(*) and GROUP BY one column have their metadata answers
        }
        Map<Long, String> names = new HashMap<>();
        for (AttributeReference a : PruneCarbonRelations.list(rel.output())) {
            names.put(a.exprId().id(), a.name());
        }
        List<Bridge.CountKey> keys = new ArrayList<>();
        List<AttributeReference> keyAttrs = new ArrayList<>();
        for (Expression g : groups) {
            Bridge.CountKey key = key(unalias(g, projected), names);
            if (key == null) {
                return null;
            }
            keys.add(key);
            DataType type = key.day() != null ? DataTypes.DateType : g.dataType();
            keyAttrs.add(new AttributeReference("k" + keyAttrs.size(), type, g.nullable(), Metadata.empty(),
                    NamedExpression$.MODULE$.newExprId(), PruneCarbonRelations.seq(List.of())));
        }
        AttributeReference count = new AttributeReference("n", DataTypes.LongType, false, Metadata.empty(),
                NamedExpression$.MODULE$.newExprId(), PruneCarbonRelations.seq(List.of()));
        List<NamedExpression> outputs = new ArrayList<>();
        for (NamedExpression e : PruneCarbonRelations.list(agg.aggregateExpressions())) {
            Expression value = e instanceof Alias alias ? alias.child() : (Expression) e;
            Expression replacement = null;
            for (int i = 0; i < groups.size() && replacement == null; i++) {
                if (value.semanticEquals(groups.get(i))) {
                    replacement = keyAttrs.get(i);
                }
            }
            if (replacement == null && counts(value)) {
                AggregateExpression sum = AggregateExpression$.MODULE$.apply(new Sum(count), Complete$.MODULE$, false,
                        Option.empty());
                replacement = new Coalesce(PruneCarbonRelations.seq(List.of(sum, Literal.create(0L, DataTypes.LongType))));
            }
            if (replacement == null) {
                return null;
            }
            outputs.add(new Alias(replacement, e.name(), e.exprId(), e.qualifier(), Option.empty(),
                    PruneCarbonRelations.seq(List.of())));
        }
        List<AttributeReference> output = new ArrayList<>(keyAttrs);
        output.add(count);
        StructField[] fields = new StructField[output.size()];
        for (int i = 0; i < fields.length; i++) {
            AttributeReference a = output.get(i);
            fields[i] = new StructField(a.name(), a.dataType(), a.nullable(), a.metadata());
        }
        // equal specs write equal texts (the record's component order): SizedPythonTable's exchange reuse keys on it
        String spec = Bridge.write(new Bridge.PartialCountsSpec(keys, Bridge.VERSION));
        PythonTable old = (PythonTable) rel.table();
        PythonDataSourceV2 source = new PythonDataSourceV2();
        source.setShortName(old.name());
        PythonTable table = new SizedPythonTable(source, old.name(), new StructType(fields), -1.0);
        DataSourceV2Relation partial = PruneCarbonRelations.mark(rel, table, PruneCarbonRelations.seq(output), null,
                Map.of(Names.PARTIAL_COUNTS_OPTION, spec));
        made.set(at, new ReadPlans.Made(source, partial));
        Object[] args = PruneCarbonRelations.args(agg);  // (groupings, aggregates, child, ...)
        args[0] = PruneCarbonRelations.seq(new ArrayList<Expression>(keyAttrs));
        args[1] = PruneCarbonRelations.seq(outputs);
        args[2] = partial;
        return (LogicalPlan) agg.makeCopy(args);
    }

    private static Expression unalias(Expression e, Map<Long, Expression> projected) {
        return e instanceof Attribute a && projected.containsKey(a.exprId().id()) ? projected.get(a.exprId().id()) : e;
    }

    /** The key's request for the Python side, or null when it is no key counted there. */
    private static Bridge.CountKey key(Expression g, Map<Long, String> names) {
        if (g instanceof AttributeReference a && names.containsKey(a.exprId().id()) && groupable(a.dataType())) {
            return new Bridge.CountKey(names.get(a.exprId().id()), null);
        }
        if (g instanceof Cast cast && cast.dataType() == DataTypes.DateType
                && cast.child() instanceof AttributeReference a && names.containsKey(a.exprId().id())
                && a.dataType() instanceof TimestampType && cast.timeZoneId().isDefined()) {
            try {
                return new Bridge.CountKey(names.get(a.exprId().id()), day(ZoneId.of(cast.timeZoneId().get())));
            } catch (RuntimeException e) {
                return null;
            }
        }
        return null;
    }

    /**
     * The zone's UTC offsets as the Python side takes them: {@code offsets[0]} before the first instant of
     * {@code at}, {@code offsets[i]} from {@code at[i-1]} on; past {@code until} (given when the zone still
     * has transitions then) the Python side asks the system's time zone database for {@code zone}.
     */
    private static Bridge.Day day(ZoneId zone) {
        ZoneRules rules = zone.getRules();
        List<Long> offsets = new ArrayList<>();
        List<Long> at = new ArrayList<>();
        Instant t = Instant.ofEpochSecond(FROM_SECONDS);
        offsets.add((long) rules.getOffset(t).getTotalSeconds());
        ZoneOffsetTransition next = rules.nextTransition(t);
        while (next != null && next.getInstant().getEpochSecond() < UNTIL_SECONDS) {
            at.add(next.getInstant().getEpochSecond());
            offsets.add((long) next.getOffsetAfter().getTotalSeconds());
            next = rules.nextTransition(next.getInstant());
        }
        if (next == null) {
            return new Bridge.Day(offsets, at, null, null);
        }
        return new Bridge.Day(offsets, at, UNTIL_SECONDS, zone.getId());
    }

    private static boolean groupable(DataType type) {
        return !(type instanceof FloatType || type instanceof DoubleType || type instanceof ArrayType
                || type instanceof MapType || type instanceof StructType);
    }

    /** Whether {@code e} counts rows: count(*), count(1), count of non-null literals. */
    private static boolean counts(Expression e) {
        return e instanceof AggregateExpression ae && ae.aggregateFunction() instanceof Count c && !ae.isDistinct()
                && ae.filter().isEmpty() && PruneCarbonRelations.list(c.children()).stream()
                        .allMatch(x -> x instanceof Literal l && l.value() != null);
    }
}
