package carbonds.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.CaseWhen;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Range;
import org.apache.spark.sql.catalyst.plans.logical.Range$;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Option;
import scala.Tuple2;

/**
 * Relations whose rows the Python side knew at planning ({@link ReadPlans}), replaced by rows Spark makes:
 * no Python task. {@code {"rows": n}}: a relation of no column becomes a one-slice range of n empty rows (as
 * carbon_ds.sql's rewrite reads {@code count(*)}), an empty read an empty relation of the same attributes.
 * {@code {"values": [[text, n], ...]}}: a read of a partitioned table's partition column alone, each file
 * holding one value, becomes a range whose row i takes the value whose running row count first exceeds i.
 * The rows are the table's at planning, as the files of every scan Spark plans are.
 */
final class KnownRows {
    private KnownRows() {
    }

    static LogicalPlan replace(LogicalPlan node, Map<DataSourceV2Relation, JsonNode> known, int slices) {
        if (node instanceof DataSourceV2Relation rel && known.containsKey(rel)) {
            JsonNode answer = known.get(rel);
            List<Attribute> output = new ArrayList<>(PruneCarbonRelations.list(rel.output()));
            if (answer.path("values").isArray() && answer.get("values").size() > 0 && output.size() == 1) {
                return values(output.get(0), answer.get("values"), slices);
            }
            long rows = answer.path("rows").asLong(0);
            if (!output.isEmpty() || rows == 0) {
                return LocalRelation$.MODULE$.apply(PruneCarbonRelations.seq(output));
            }
            LogicalPlan range = Range$.MODULE$.apply(0L, rows, 1L, 1);
            return new Project(PruneCarbonRelations.seq(List.of()), range);
        }
        return PruneCarbonRelations.mapChildren(node, child -> replace(child, known, slices));
    }

    /** Whether {@code answer} gives values this relation's one column can take (else Spark plans it). */
    static boolean valid(JsonNode answer, DataSourceV2Relation rel) {
        JsonNode values = answer.path("values");
        if (!values.isArray() || values.size() == 0 || rel.output().size() != 1) {
            return false;
        }
        DataType type = rel.output().head().dataType();
        try {
            for (JsonNode v : values) {
                if (!v.get(1).canConvertToLong() || v.get(1).asLong() <= 0) {
                    return false;
                }
                literal(v.get(0).asText(), type);
            }
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }

    private static LogicalPlan values(Attribute out, JsonNode values, int slices) {
        long total = 0;
        for (JsonNode v : values) {
            total += v.get(1).asLong();
        }
        Range range = Range$.MODULE$.apply(0L, total, 1L, Math.max(1, slices));
        Attribute id = range.output().head();
        List<Tuple2<Expression, Expression>> branches = new ArrayList<>();
        long end = 0;
        for (JsonNode v : values) {
            end += v.get(1).asLong();
            branches.add(new Tuple2<>(new LessThan(id, Literal.create(end, DataTypes.LongType)),
                    literal(v.get(0).asText(), out.dataType())));
        }
        Expression value = new CaseWhen(PruneCarbonRelations.seq(branches), Option.empty());
        NamedExpression named = new Alias(value, out.name(), out.exprId(), out.qualifier(), Option.empty(),
                PruneCarbonRelations.seq(List.of()));
        return new Project(PruneCarbonRelations.seq(List.of(named)), range);
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
