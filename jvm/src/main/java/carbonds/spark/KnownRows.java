package carbonds.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Range;
import org.apache.spark.sql.catalyst.plans.logical.Range$;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Option;

/**
 * Relations whose rows the Python side knew at planning ({@link ReadPlans}), replaced by rows Spark makes:
 * no Python task. An answer with {@code rows} n: a relation of no column becomes a one-slice range of n empty rows (as
 * carbon_ds.sql's rewrite reads {@code count(*)}), an empty read an empty relation of the same attributes.
 * {@link Known#local}: a small read's rows ({@code arrow}), read at planning ({@link ReadPlans}) from the files that call
 * planned, become the relation's table ({@link ViewRows}), which Spark plans as a local table scan.
 * {@code values} ({@code [[text, n], ...]}): a read of a partitioned table's partition column alone, each file
 * holding one value, becomes a range whose row i takes the value whose running row count first exceeds i
 * (as carbon_ds.spark.source.partition_values builds it for carbon_ds.read); counted by that value alone, the
 * counts themselves.
 * The rows are the table's at planning, as the files of every scan Spark plans are.
 */
final class KnownRows {
    private KnownRows() {
    }

    /** A relation's answer ({@link ReadPlans}), with the rows it carried ({@code arrow}) as Spark's and the
     * table's state ({@link PlanCache#tableState}) they are of; both null for a rows or values answer. */
    record Known(Bridge.ReadAnswer answer, UnsafeRow[] local, String state) {
    }

    static LogicalPlan replace(LogicalPlan node, Map<DataSourceV2Relation, Known> known, int slices) {
        if (node instanceof Aggregate agg) {
            LogicalPlan counted = countsByValue(agg, known);
            if (counted != null) {
                return counted;
            }
        }
        if (node instanceof DataSourceV2Relation rel && known.containsKey(rel)) {
            Known k = known.get(rel);
            Bridge.ReadAnswer answer = k.answer();
            List<Attribute> output = new ArrayList<>(PruneCarbonRelations.list(rel.output()));
            if (answer.values() != null && !answer.values().isEmpty() && output.size() == 1) {
                return values(output.get(0), answer.values(), slices);
            }
            if (k.local() != null) {
                return localRows(rel, output, k.local(), k.state());
            }
            long rows = answer.rows() == null ? 0L : answer.rows();
            if (!output.isEmpty() || rows == 0) {
                return LocalRelation$.MODULE$.apply(PruneCarbonRelations.seq(output));
            }
            LogicalPlan range = Range$.MODULE$.apply(0L, rows, 1L, 1);
            return new Project(PruneCarbonRelations.seq(List.of()), range);
        }
        return PruneCarbonRelations.mapChildren(node, child -> replace(child, known, slices));
    }

    /**
     * {@code rel} reading {@code data}, read at planning ({@link ViewRows}) with the table in {@code state}: same
     * attributes, options, catalog and identifier, so EXPLAIN names the table it read; Spark plans a local table
     * scan of it that reads {@code rel} again if the table has changed when it runs ({@link CheckedLocalTableScanExec}).
     */
    private static LogicalPlan localRows(DataSourceV2Relation rel, List<Attribute> output, UnsafeRow[] data,
                                         String state) {
        StructField[] fields = new StructField[output.size()];
        for (int i = 0; i < fields.length; i++) {
            Attribute a = output.get(i);
            fields[i] = new StructField(a.name(), a.dataType(), a.nullable(), a.metadata());
        }
        String name = rel.identifier().isDefined() ? rel.identifier().get().toString()
                : rel.options().getOrDefault("path", rel.table().name());
        Object[] args = PruneCarbonRelations.args(rel);  // (table, output, catalog, identifier, options, ...)
        CheckedLocalTableScanExec.Recheck check = new CheckedLocalTableScanExec.Recheck(rel.options().get("path"), state, rel,
                CheckedLocalTableScanExec.planningAsOfCall());
        args[0] = new ViewRows(Names.SOURCE, name, new StructType(fields), data, check);
        return (LogicalPlan) rel.makeCopy(args);
    }

    /**
     * {@code GROUP BY column} counting rows ({@code count(*)}, {@code count(1)}, {@code count(column)}) over a
     * values answer: the counts themselves, one row per value, no row made (null when the aggregate is any
     * other). The values are never NULL (NULLs go to the DEFAULT partition, which a values answer never has).
     */
    private static LogicalPlan countsByValue(Aggregate agg, Map<DataSourceV2Relation, Known> known) {
        LogicalPlan child = agg.child();
        if (child instanceof Project project
                && PruneCarbonRelations.list(project.projectList()).stream().allMatch(e -> e instanceof Attribute)) {
            child = project.child();
        }
        if (!(child instanceof DataSourceV2Relation rel) || !known.containsKey(rel)
                || !valid(known.get(rel).answer(), rel)) {
            return null;
        }
        Attribute column = rel.output().head();
        List<Expression> keys = PruneCarbonRelations.list(agg.groupingExpressions());
        if (keys.size() != 1 || !(keys.get(0) instanceof Attribute key) || !key.exprId().equals(column.exprId())) {
            return null;
        }
        List<NamedExpression> outputs = PruneCarbonRelations.list(agg.aggregateExpressions());
        boolean[] counts = new boolean[outputs.size()];
        for (int i = 0; i < counts.length; i++) {
            NamedExpression e = outputs.get(i);
            if (e instanceof Attribute a && a.exprId().equals(column.exprId())) {
                continue;
            }
            if (!(e instanceof Alias alias && alias.child() instanceof AggregateExpression ae
                    && ae.aggregateFunction() instanceof Count count && !ae.isDistinct() && ae.filter().isEmpty()
                    && PruneCarbonRelations.list(count.children()).stream().allMatch(c ->
                        c instanceof Literal l && l.value() != null
                            || c instanceof Attribute a && a.exprId().equals(column.exprId())))) {
                return null;
            }
            counts[i] = true;
        }
        Map<Object, Long> rows = new LinkedHashMap<>();
        for (Bridge.ValueCount v : known.get(rel).answer().values()) {
            rows.merge(literal(v.value(), column.dataType()).value(), v.rows(), Long::sum);
        }
        List<InternalRow> data = new ArrayList<>();
        for (Map.Entry<Object, Long> row : rows.entrySet()) {
            Object[] cells = new Object[counts.length];
            for (int i = 0; i < counts.length; i++) {
                cells[i] = counts[i] ? row.getValue() : row.getKey();
            }
            data.add(new GenericInternalRow(cells));
        }
        return new LocalRelation(agg.output(), PruneCarbonRelations.seq(data), false, Option.empty());
    }

    /** Whether {@code answer} gives values this relation's one column can take (else Spark plans it). */
    static boolean valid(Bridge.ReadAnswer answer, DataSourceV2Relation rel) {
        List<Bridge.ValueCount> values = answer.values();
        if (values == null || values.isEmpty() || rel.output().size() != 1) {
            return false;
        }
        DataType type = rel.output().head().dataType();
        try {
            for (Bridge.ValueCount v : values) {
                if (v == null || v.rows() <= 0) {
                    return false;
                }
                literal(v.value(), type);
            }
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }

    private static LogicalPlan values(Attribute out, List<Bridge.ValueCount> values, int slices) {
        List<Long> ends = new ArrayList<>();
        List<Expression> literals = new ArrayList<>();
        long end = 0;
        for (Bridge.ValueCount v : values) {
            end += v.rows();
            ends.add(end);
            literals.add(literal(v.value(), out.dataType()));
        }
        Range range = Range$.MODULE$.apply(0L, end, 1L, Math.max(1, slices));
        Expression value = pick(range.output().head(), ends, literals, 0, ends.size());
        NamedExpression named = new Alias(value, out.name(), out.exprId(), out.qualifier(), Option.empty(),
                PruneCarbonRelations.seq(List.of()));
        return new Project(PruneCarbonRelations.seq(List.of(named)), range);
    }

    /** The value whose rows hold {@code id} (known to be in values lo..hi-1's rows): a balanced tree of
     * comparisons, log2(values) per row rather than one per value. */
    private static Expression pick(Attribute id, List<Long> ends, List<Expression> literals, int lo, int hi) {
        if (hi - lo == 1) {
            return literals.get(lo);
        }
        int mid = (lo + hi) / 2;
        return new If(new LessThan(id, Literal.create(ends.get(mid - 1), DataTypes.LongType)),
                pick(id, ends, literals, lo, mid), pick(id, ends, literals, mid, hi));
    }

    /** The value spelled {@code text} (Spark SQL's cast from a string) as a literal of {@code type}. */
    private static Literal literal(String text, DataType type) {
        Expression cast = new Cast(Literal.create(UTF8String.fromString(text), DataTypes.StringType), type,
                Option.apply(SQLConf.get().sessionLocalTimeZone()));
        Object value = cast.eval(null);
        if (value == null) {
            throw new IllegalStateException("partition value " + text + " is no " + type.simpleString());
        }
        return new Literal(value, type);
    }
}
