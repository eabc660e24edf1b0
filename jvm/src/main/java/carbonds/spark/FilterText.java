package carbonds.spark;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BinaryComparison;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.InSet;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Like;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.StartsWith;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

import scala.jdk.javaapi.CollectionConverters;

/**
 * Catalyst predicates over one carbondata relation as the text of its {@code filter} option (the SQL subset
 * carbon_ds.expressions parses), the one translation of Spark predicates into carbon-ds's: {@link #implied}
 * gives text that is TRUE wherever the predicate is TRUE (it may be weaker), since Spark still evaluates every
 * predicate; anything whose meaning could differ on some row is left out.
 * A literal is spelled in its column's own domain, so the carbondata binder has no coercion to decide.
 */
final class FilterText {
    static final int MAX_IN_VALUES = 1000;  // a longer IN prunes by its min/max: megabytes of filter text otherwise

    private final Map<Long, String> columns;  // exprId -> column name, for the relation's own attributes

    FilterText(Map<Long, String> columns) {
        this.columns = columns;
    }

    String implied(Expression e) {
        if (e instanceof And a) {
            String l = implied(a.left()), r = implied(a.right());
            return l == null ? r : r == null ? l : "(" + l + " AND " + r + ")";
        }
        if (e instanceof Or o) {
            String l = implied(o.left()), r = implied(o.right());
            return l == null || r == null ? null : "(" + l + " OR " + r + ")";
        }
        if (e instanceof EqualNullSafe c) {  // a <=> v is TRUE where a = v (v not NULL) or a IS NULL (v NULL)
            Object[] got = comparison(c);
            if (got == null) {
                return null;
            }
            AttributeReference col = (AttributeReference) got[0];
            Literal lit = (Literal) got[2];
            return lit.value() == null ? "(" + quote(col.name()) + " IS NULL)" : compare(col, "=", lit, false);
        }
        if (e instanceof In || e instanceof InSet) {  // a IN (1, NULL) is TRUE only where a = 1
            return inList(e, false, true);
        }
        return exact(e, false);
    }

    /** Text that agrees with {@code e} wherever {@code e} is not NULL (what a NOT needs of its operand). */
    private String exact(Expression e, boolean negated) {
        if (e instanceof And || e instanceof Or) {
            String l = exact(e.children().apply(0), negated), r = exact(e.children().apply(1), negated);
            return l == null || r == null ? null : "(" + l + (e instanceof And ? " AND " : " OR ") + r + ")";
        }
        if (e instanceof Not n) {
            String inner = exact(n.child(), !negated);
            return inner == null ? null : "(NOT " + inner + ")";
        }
        if (e instanceof IsNull n && n.child() instanceof AttributeReference a && name(a) != null) {
            return "(" + quote(name(a)) + " IS NULL)";
        }
        if (e instanceof IsNotNull n && n.child() instanceof AttributeReference a && name(a) != null) {
            return "(" + quote(name(a)) + " IS NOT NULL)";
        }
        if (e instanceof AttributeReference a && name(a) != null && a.dataType() instanceof BooleanType) {
            return "(" + quote(name(a)) + " = TRUE)";
        }
        if (e instanceof EqualTo || e instanceof LessThan || e instanceof LessThanOrEqual
                || e instanceof GreaterThan || e instanceof GreaterThanOrEqual) {
            Object[] got = comparison((BinaryComparison) e);
            return got == null ? null
                    : compare((AttributeReference) got[0], (String) got[1], (Literal) got[2], negated);
        }
        if (e instanceof In || e instanceof InSet) {
            return inList(e, negated, false);
        }
        if (e instanceof StartsWith s) {
            return prefix(s.left(), s.right(), false);
        }
        if (e instanceof Like l) {
            return l.escapeChar() == '\\' ? prefix(l.left(), l.right(), true) : null;
        }
        return null;
    }

    private String name(AttributeReference a) {
        return columns.get(a.exprId().id());
    }

    /** The relation column {@code e} stands for, through widening casts of integral columns. */
    private AttributeReference column(Expression e) {
        if (e instanceof AttributeReference a) {
            return name(a) != null ? a : null;
        }
        if (e instanceof Cast c && c.child() instanceof AttributeReference a && name(a) != null) {
            int from = integralRank(a.dataType()), to = integralRank(c.dataType());
            if (from > 0 && to >= from) {
                return a;
            }
            if (from > 0 && from < 4 && c.dataType() instanceof DoubleType) {
                return a;  // every int fits a double exactly; a long above 2**53 does not
            }
            if (from > 0 && c.dataType() instanceof DecimalType d && d.precision() - d.scale() >= digits(from)) {
                return a;
            }
        }
        return null;
    }

    /** {column, operator with the column on the left, literal} of a comparison, or null. */
    private Object[] comparison(BinaryComparison c) {
        String op = c instanceof EqualTo || c instanceof EqualNullSafe ? "="
                : c instanceof LessThan ? "<" : c instanceof LessThanOrEqual ? "<="
                : c instanceof GreaterThan ? ">" : ">=";
        AttributeReference col = column(c.left());
        if (col != null && c.right() instanceof Literal lit) {
            return new Object[] {col, op, lit};
        }
        col = column(c.right());
        if (col != null && c.left() instanceof Literal lit) {
            String mirror = op.equals("<") ? ">" : op.equals("<=") ? ">=" : op.equals(">") ? "<"
                    : op.equals(">=") ? "<=" : op;
            return new Object[] {col, mirror, lit};
        }
        return null;
    }

    private String compare(AttributeReference col, String op, Literal lit, boolean negated) {
        DataType kind = col.dataType();
        // Spark orders NaN above every number, CarbonData's comparisons and min/max do not
        if (kind instanceof FloatType
                || kind instanceof DoubleType && (negated || !(op.equals("=") || op.startsWith("<")))) {
            return null;
        }
        String text = render(lit.value(), lit.dataType(), kind);
        return text == null ? null : "(" + quote(name(col)) + " " + op + " " + text + ")";
    }

    private String inList(Expression e, boolean negated, boolean dropNulls) {
        Expression child;
        List<Object> values = new ArrayList<>();
        DataType litType;
        if (e instanceof InSet s) {
            child = s.child();
            litType = child.dataType();
            CollectionConverters.asJava(s.hset().iterator()).forEachRemaining(values::add);
        } else {
            In in = (In) e;
            child = in.value();
            litType = null;
            for (Expression x : PruneCarbonRelations.list(in.list())) {
                if (!(x instanceof Literal lit) || (litType != null && !litType.equals(lit.dataType()))) {
                    return null;
                }
                litType = lit.dataType();
                values.add(lit.value());
            }
        }
        AttributeReference col = column(child);
        if (col == null || values.isEmpty() || col.dataType() instanceof FloatType) {
            return null;
        }
        if (values.contains(null)) {
            if (!dropNulls) {
                return null;  // a NULL in the list makes IN never FALSE, which no filter text can say
            }
            values.removeIf(v -> v == null);
            if (values.isEmpty()) {
                return null;
            }
        }
        if (values.size() > MAX_IN_VALUES) {
            return negated || !dropNulls ? null : range(col, values, litType);  // a range is weaker than the IN
        }
        Set<String> texts = new LinkedHashSet<>();
        for (Object v : values) {
            if (col.dataType() instanceof DoubleType
                    && (negated || v instanceof Number n && n.doubleValue() == 0.0)) {
                return null;  // besides NaN: an IN list matches by hash, where 0.0 and -0.0 differ
            }
            String t = render(v, litType, col.dataType());
            if (t == null) {
                return null;
            }
            texts.add(t);
        }
        return "(" + quote(name(col)) + " IN (" + String.join(", ", texts) + "))";
    }

    /**
     * {@code ((c >= min) AND (c <= max))} of a long IN list: TRUE wherever the IN is, so blocklets prune by
     * min/max without the list spelled into the filter text (Spark still matches the values). Each bound is
     * rounded outwards into the column's domain and left out when there is none (beyond the column's range).
     */
    private String range(AttributeReference col, List<Object> values, DataType litType) {
        DataType kind = col.dataType();
        Comparator<Object> order = order(litType);
        if (order == null || kind instanceof DoubleType || kind instanceof BooleanType) {
            return null;  // NaN and -0.0 order differently in CarbonData; a boolean set is never long
        }
        String c = quote(name(col));
        String lo = bound(Collections.min(values, order), litType, kind, true);
        String hi = bound(Collections.max(values, order), litType, kind, false);
        lo = lo == null ? null : "(" + c + " >= " + lo + ")";
        hi = hi == null ? null : "(" + c + " <= " + hi + ")";
        return lo == null ? hi : hi == null ? lo : "(" + lo + " AND " + hi + ")";
    }

    /** The order of Catalyst values of type {@code t} (strings by their UTF-8 bytes, as CarbonData's), or null. */
    private static Comparator<Object> order(DataType t) {
        if (integralRank(t) > 0 || t instanceof DateType || t instanceof TimestampType) {
            return Comparator.comparingLong(v -> ((Number) v).longValue());
        }
        if (t instanceof DoubleType || t instanceof FloatType) {
            return Comparator.comparingDouble(v -> ((Number) v).doubleValue());  // NaN last: no bound from it
        }
        if (t instanceof DecimalType) {
            return (a, b) -> ((Decimal) a).compare((Decimal) b);
        }
        if (isPlainString(t)) {
            return (a, b) -> ((UTF8String) a).binaryCompare((UTF8String) b);
        }
        return null;
    }

    /** A lower (or upper) bound at {@code value} in the column's domain, rounded outwards, or null. */
    static String bound(Object value, DataType lit, DataType col, boolean lower) {
        RoundingMode outwards = lower ? RoundingMode.FLOOR : RoundingMode.CEILING;
        int rank = integralRank(col);
        boolean floating = lit instanceof DoubleType || lit instanceof FloatType;
        if (rank > 0 && !floating && (integralRank(lit) > 0 || lit instanceof DecimalType)) {
            BigDecimal v = number(value).setScale(0, outwards);
            long max = new long[] {0, Byte.MAX_VALUE, Short.MAX_VALUE, Integer.MAX_VALUE, Long.MAX_VALUE}[rank];
            boolean fits = v.compareTo(BigDecimal.valueOf(max)) <= 0
                    && v.compareTo(BigDecimal.valueOf(-max - 1)) >= 0;
            return fits ? v.toPlainString() : null;
        }
        if (col instanceof DecimalType d && (integralRank(lit) > 0 || lit instanceof DecimalType)) {
            BigDecimal v = number(value);
            return (v.scale() > d.scale() ? v.setScale(d.scale(), outwards) : v).toPlainString();
        }
        if (col instanceof TimestampType && lit instanceof TimestampType) {  // CarbonData keeps milliseconds
            long micros = ((Number) value).longValue();
            long ms = lower ? Math.floorDiv(micros, 1000L) : -Math.floorDiv(-micros, 1000L);
            return render(ms * 1000, lit, col);
        }
        return render(value, lit, col);
    }

    private String prefix(Expression left, Expression right, boolean like) {
        if (!(left instanceof AttributeReference a) || name(a) == null || !isPlainString(a.dataType())
                || !(right instanceof Literal lit) || lit.value() == null || !isPlainString(lit.dataType())) {
            return null;
        }
        String text = lit.value().toString();
        if (like) {
            if (!text.endsWith("%")) {
                return null;
            }
            text = text.substring(0, text.length() - 1);
        }
        if (text.isEmpty() || text.contains("%") || text.contains("_") || text.contains("\\")) {
            return null;
        }
        return "(" + quote(name(a)) + " LIKE '" + (text + "%").replace("'", "''") + "')";
    }

    // ------------------------------------------------------------------------------------------ literals

    private static final DateTimeFormatter TIMESTAMP =
            DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS").withZone(ZoneOffset.UTC);

    /** A literal value of type {@code lit} spelled for a column of type {@code col}, or null. */
    static String render(Object value, DataType lit, DataType col) {
        if (value == null || lit == null) {
            return null;
        }
        boolean numeric = integralRank(lit) > 0 || lit instanceof DecimalType || lit instanceof DoubleType
                || lit instanceof FloatType;
        int rank = integralRank(col);
        if (rank > 0) {
            BigDecimal v = numeric ? number(value) : null;
            if (v == null || v.stripTrailingZeros().scale() > 0) {
                return null;
            }
            BigDecimal max = BigDecimal.valueOf(new long[] {0, Byte.MAX_VALUE, Short.MAX_VALUE, Integer.MAX_VALUE,
                Long.MAX_VALUE}[rank]);
            return v.abs().compareTo(max) <= 0 ? v.toBigInteger().toString() : null;
        }
        if (col instanceof DoubleType) {
            if (!(lit instanceof DoubleType || lit instanceof FloatType || integralRank(lit) > 0)) {
                return null;
            }
            double d = ((Number) value).doubleValue();
            return Double.isFinite(d) ? Double.toString(d) + "D" : null;  // D: read back as a double
        }
        if (col instanceof DecimalType d) {
            if (!(lit instanceof DecimalType || integralRank(lit) > 0)) {
                return null;
            }
            BigDecimal v = number(value);
            return v == null || v.stripTrailingZeros().scale() > d.scale() ? null : v.toPlainString();
        }
        if (!lit.equals(col)) {
            return null;
        }
        if (isPlainString(col)) {
            return "'" + value.toString().replace("'", "''") + "'";
        }
        if (col instanceof BooleanType) {
            return (Boolean) value ? "TRUE" : "FALSE";
        }
        if (col instanceof DateType) {
            LocalDate d = LocalDate.ofEpochDay(((Number) value).longValue());
            return d.getYear() < 1 || d.getYear() > 9999 ? null : "DATE '" + d + "'";  // SQL's year range
        }
        if (col instanceof TimestampType) {
            long micros = ((Number) value).longValue();
            if (micros % 1000 != 0) {
                return null;  // CarbonData keeps milliseconds
            }
            Instant t = Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000);
            int year = t.atOffset(ZoneOffset.UTC).getYear();
            return year < 1 || year > 9999 ? null : "TIMESTAMP '" + TIMESTAMP.format(t) + "+00:00'";
        }
        return null;
    }

    private static BigDecimal number(Object value) {
        if (value instanceof Decimal d) {
            return d.toJavaBigDecimal();
        }
        if (value instanceof Double || value instanceof Float) {
            double x = ((Number) value).doubleValue();
            return Double.isFinite(x) ? new BigDecimal(x) : null;
        }
        if (value instanceof Number n) {
            return BigDecimal.valueOf(n.longValue());
        }
        return null;
    }

    static boolean isPlainString(DataType t) {
        // other collations compare differently from CarbonData's byte order
        return t instanceof StringType s && s.isUTF8BinaryCollation();
    }

    private static int integralRank(DataType t) {
        return t instanceof ByteType ? 1 : t instanceof ShortType ? 2 : t instanceof IntegerType ? 3
                : t instanceof LongType ? 4 : 0;
    }

    private static int digits(int rank) {
        return new int[] {0, 3, 5, 10, 19}[rank];
    }

    static String quote(String name) {
        return "`" + name.replace("`", "``") + "`";
    }
}
