package carbonds.spark;

import java.util.List;
import java.util.Locale;
import java.util.Set;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.ExternalCommandRunner;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.sql} as the front door for CarbonData's statements.
 *
 * <p>carbon-ds's statements (CarbonData's DDL, segment, partition and DML statements, and Spark's ALTER /
 * DROP / INSERT forms on carbondata tables) are run by carbon-ds's Python code, the same code
 * {@code carbon_ds.sql} runs. The Python driver installs a {@link Runner} (carbon_ds.spark.statements.front_door) through
 * py4j; the parser ({@link StoredAsParser}) asks it, for a statement starting with one of {@link #HEADS},
 * whether the statement is carbon-ds's, and if so makes it a {@link CarbonStatement} command that the runner
 * executes when Spark runs the command (once, eagerly, as Spark runs every command).
 *
 * <p>Statements carbon-ds itself sends to Spark (its tables' catalog entries) go through {@link #sparkSql},
 * which the parser never claims.
 */
public final class FrontDoor implements ExternalCommandRunner {
    /** The Python side: claims statements and runs them. */
    public interface Runner {
        /** The statement's output schema as JSON when carbon-ds runs it, else null (Spark's statement). */
        String claim(Object session, String text);

        /** Runs a claimed statement; its result as a {@code Dataset<Row>}. */
        Object run(Object session, String text);

        /** For a statement Spark could not parse: "did you mean ..." when it is close to a carbon-ds one. */
        String hint(String text);
    }

    /** First words of the statements the runner may claim; any other statement is Spark's at once. */
    static final Set<String> HEADS = Set.of("create", "drop", "alter", "show", "delete", "update", "merge",
            "clean", "insert", "refresh");
    static final FrontDoor INSTANCE = new FrontDoor();
    private static final ThreadLocal<Integer> SPARK_ONLY = ThreadLocal.withInitial(() -> 0);
    private static volatile Runner runner;

    private FrontDoor() {
    }

    /** Installs the Python runner of this driver (carbon_ds.register does); a later call replaces it. */
    public static void install(Runner r) {
        runner = r;
    }

    public static boolean installed() {
        return runner != null;
    }

    /** {@code text} run by Spark alone: never claimed by carbon-ds, whatever it says. */
    public static Dataset<Row> sparkSql(SparkSession session, String text) {
        SPARK_ONLY.set(SPARK_ONLY.get() + 1);
        try {
            return session.sql(text);
        } finally {
            SPARK_ONLY.set(SPARK_ONLY.get() - 1);
        }
    }

    /** The command for {@code text} when carbon-ds runs it, else null. */
    static LogicalPlan claim(SparkSession session, String text) {
        Runner r = runner;
        if (r == null || SPARK_ONLY.get() > 0 || !HEADS.contains(firstWord(text))) {
            return null;
        }
        String schema;
        try {
            schema = r.claim(session, text);
        } catch (RuntimeException e) {
            throw CarbonStatementException.from(e);
        }
        return schema == null ? null : new CarbonStatement(text, schema);
    }

    static List<Row> run(SparkSession session, String text) {
        Runner r = runner;
        if (r == null) {
            throw new CarbonStatementException("carbon_ds.errors.CarbonTableError: the carbon-ds runner of this "
                    + "driver is gone (the Python driver stopped?); statement: " + text);
        }
        Object result;
        try {
            result = r.run(session, text);
        } catch (RuntimeException e) {
            throw CarbonStatementException.from(e);
        }
        @SuppressWarnings("unchecked")
        Dataset<Row> rows = (Dataset<Row>) result;
        return rows.collectAsList();
    }

    /** CarbonData statements Spark's grammar has no form of: their first words, lower case. */
    private static final java.util.List<String> CARBON_ONLY = java.util.List.of("show segments", "clean files",
            "delete from table", "create materialized view", "refresh materialized view", "show materialized views",
            "drop materialized view");

    /**
     * A clearer error than Spark's for a statement Spark could not parse, or null: the runner's "did you mean",
     * or, in a driver without the runner, how to run a CarbonData statement.
     */
    static RuntimeException parseFailure(String text, Throwable sparkError) {
        Runner r = runner;
        String message = null;
        if (r != null) {
            try {
                message = r.hint(text);
            } catch (RuntimeException e) {
                return null;  // no hint: Spark's own error stands
            }
        } else if (isCarbonOnly(text)) {
            message = "carbon_ds.errors.CarbonOptionError: this is a CarbonData statement, which carbon-ds runs "
                    + "through spark.sql once the session's Python driver has registered carbon-ds "
                    + "(carbon_ds.register(spark); sessions built by carbon_ds.configure_spark are registered), "
                    + "or through carbon_ds.sql(spark, text)";
        }
        if (message == null) {
            return null;
        }
        CarbonStatementException out = new CarbonStatementException(message + "\n" + sparkError.getMessage());
        out.initCause(sparkError);
        return out;
    }

    private static boolean isCarbonOnly(String text) {
        String head = text.strip().toLowerCase(Locale.ROOT).replaceAll("\\s+", " ");
        if (CARBON_ONLY.stream().anyMatch(head::startsWith)) {
            return true;
        }
        return head.startsWith("alter table ") && head.matches("(?s)alter table \\S+ (add segment|compact).*");
    }

    /** The first word of {@code text}, lower case, after blanks, comments and opening parentheses. */
    static String firstWord(String text) {
        int i = 0;
        int n = text.length();
        while (i < n) {
            char c = text.charAt(i);
            if (Character.isWhitespace(c) || c == '(') {
                i++;
            } else if (text.startsWith("--", i)) {
                int j = text.indexOf('\n', i);
                i = j < 0 ? n : j + 1;
            } else if (text.startsWith("/*", i)) {
                int j = text.indexOf("*/", i + 2);
                i = j < 0 ? n : j + 2;
            } else {
                break;
            }
        }
        int j = i;
        while (j < n && Character.isLetter(text.charAt(j))) {
            j++;
        }
        return text.substring(i, j).toLowerCase(Locale.ROOT);
    }

    /** Spark's ExternalCommandRunner: {@code spark.executeCommand} is not a way in (the runner needs a session). */
    @Override
    public String[] executeCommand(String command, CaseInsensitiveStringMap options) {
        throw new UnsupportedOperationException("carbon-ds statements run through spark.sql");
    }
}
