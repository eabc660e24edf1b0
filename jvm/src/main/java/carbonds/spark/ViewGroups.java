package carbonds.spark;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection$;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.expressions.aggregate.Max;
import org.apache.spark.sql.catalyst.expressions.aggregate.Min;
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A query grouping by exactly a small view's groups, answered with its final rows at planning.
 *
 * <p>The view holds one row per group of its grouping columns (its refresh re-aggregates), so a query whose
 * grouping keys are exactly those columns, with no filter, has one group per view row: each re-aggregate
 * ({@link ViewRewrite}) over one row is that row's value (sum: the value in the sum's type, min and max: the
 * value, count(DISTINCT c): 0 or 1). Those values are computed here from the rows {@link ViewRows} holds, and
 * the view's relation then holds the query's rows under the Aggregate's own output attributes: Spark collects
 * a local scan's rows without running a job, where an Aggregate over them ran two (a shuffle). Anything else
 * is left to the Aggregate.
 */
final class ViewGroups {
    private ViewGroups() {
    }

    /**
     * {@code agg} rebuilt over {@code rel} ({@code groups}, {@code outputs}) as the view relation holding its
     * answer, or null when {@code rel} holds no rows, the groups are not exactly {@code viewGroups} or some
     * output is not one value per row.
     */
    static LogicalPlan answer(Aggregate agg, DataSourceV2Relation rel, List<Expression> groups,
                              List<NamedExpression> outputs, Set<AttributeReference> viewGroups) {
        if (!(rel.table() instanceof ViewRows rows) || viewGroups.isEmpty()
                || groups.size() != viewGroups.size() || !new HashSet<Expression>(groups).equals(viewGroups)) {
            return null;  // (a view without groups: a global aggregate over no row still answers one row)
        }
        List<Expression> perRow = new ArrayList<>();
        for (NamedExpression e : outputs) {
            Expression value = oneRow(e instanceof Alias alias ? alias.child() : (Expression) e);
            if (value == null) {
                return null;
            }
            perRow.add(value);
        }
        List<AttributeReference> output = new ArrayList<>();
        List<StructField> fields = new ArrayList<>();
        Set<String> names = new HashSet<>();
        for (Attribute a : PruneCarbonRelations.list(agg.output())) {
            if (!(a instanceof AttributeReference ref) || !names.add(a.name().toLowerCase(Locale.ROOT))) {
                return null;  // Spark's scan push-down matches a scan's columns to the relation's by name
            }
            output.add(ref);
            fields.add(new StructField(a.name(), a.dataType(), a.nullable(), Metadata.empty()));
        }
        List<Attribute> input = new ArrayList<>(PruneCarbonRelations.list(rel.output()));
        UnsafeProjection project = UnsafeProjection$.MODULE$.create(PruneCarbonRelations.seq(perRow),
                PruneCarbonRelations.seq(input));
        List<InternalRow> answered = new ArrayList<>();
        for (InternalRow row : rows.rows()) {
            answered.add(project.apply(row).copy());
        }
        Object[] args = PruneCarbonRelations.args(rel);  // (table, output, catalog, identifier, options, ...)
        args[0] = new ViewRows(rows.name(), new StructType(fields.toArray(new StructField[0])),
                answered.toArray(new InternalRow[0]));
        args[1] = PruneCarbonRelations.seq(output);
        return (LogicalPlan) rel.makeCopy(args);
    }

    /** {@code e} over a group of one row, or null when some part of it is not a re-aggregate known here. */
    private static Expression oneRow(Expression e) {
        if (e instanceof AggregateExpression ae) {
            AggregateFunction f = ae.aggregateFunction();
            List<Expression> args = PruneCarbonRelations.list(f.children());
            if (ae.filter().isDefined() || args.size() != 1) {
                return null;
            }
            Expression arg = args.get(0);
            if (ae.isDistinct()) {
                return f instanceof Count ? new If(new IsNull(arg), Literal.create(0L, DataTypes.LongType),
                        Literal.create(1L, DataTypes.LongType)) : null;
            }
            if (f instanceof Sum) {
                return arg.dataType().equals(f.dataType()) ? arg : new Cast(arg, f.dataType(), scala.Option.empty());
            }
            return f instanceof Min || f instanceof Max ? arg : null;
        }
        List<Expression> children = PruneCarbonRelations.list(e.children());
        List<Expression> mapped = new ArrayList<>(children.size());
        for (Expression c : children) {
            Expression m = oneRow(c);
            if (m == null) {
                return null;
            }
            mapped.add(m);
        }
        return children.isEmpty() ? e : e.withNewChildren(PruneCarbonRelations.seq(mapped));
    }
}
