package carbonds.spark;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Locale;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * Spark's SQL parser, plus carbon-ds's statements ({@link FrontDoor}) and CarbonData's {@code STORED AS
 * carbondata}.
 *
 * <p>Spark reads {@code STORED AS <format>} as a Hive file format and refuses {@code carbondata} when it
 * analyzes the statement. Here, in a statement starting with CREATE or REPLACE, the first {@code STORED AS
 * carbondata} outside quotes and comments (the table's clause, which comes before any {@code AS SELECT}) is
 * read as {@code USING carbondata} before Spark's parser sees the text, so it only changes statements Spark
 * would refuse; a query's {@code stored AS carbondata} (a column alias) is left alone. The parser is a proxy of Spark's: every other method (their set changes between Spark releases) is
 * the delegate's.
 */
final class StoredAsParser implements InvocationHandler {
    private final SparkSession session;
    private final ParserInterface delegate;

    private StoredAsParser(SparkSession session, ParserInterface delegate) {
        this.session = session;
        this.delegate = delegate;
    }

    static ParserInterface wrap(SparkSession session, ParserInterface delegate) {
        return (ParserInterface) Proxy.newProxyInstance(StoredAsParser.class.getClassLoader(),
                new Class<?>[] {ParserInterface.class}, new StoredAsParser(session, delegate));
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        boolean plan = method.getName().equals("parsePlan") || method.getName().equals("parsePlanWithParameters");
        if (plan && args != null && args.length > 0 && args[0] instanceof String text) {
            LogicalPlan claimed = FrontDoor.claim(session, text);  // carbon-ds's statement: its command
            if (claimed != null) {
                return claimed;
            }
            String rewritten = rewrite(text);
            if (rewritten != null) {
                args = args.clone();
                args[0] = rewritten;
            }
        }
        try {
            return method.invoke(delegate, args);
        } catch (InvocationTargetException e) {
            if (plan && e.getCause() instanceof ParseException && args[0] instanceof String text) {
                RuntimeException clearer = FrontDoor.parseFailure(text, e.getCause());
                if (clearer != null) {
                    throw clearer;
                }
            }
            throw e.getCause();
        }
    }

    /** {@code text} with {@code STORED AS carbondata} as {@code USING carbondata}; null when it has none. */
    static String rewrite(String text) {
        int first = blanks(text, 0);
        if (word(text, first, "create") < 0 && word(text, first, "replace") < 0) {
            return null;
        }
        StringBuilder out = new StringBuilder(text.length());
        boolean changed = false;
        int i = 0;
        int n = text.length();
        while (i < n) {
            char c = text.charAt(i);
            int end = skip(text, i);
            if (end > i) {  // a quoted string or a comment: copied as is
                out.append(text, i, end);
                i = end;
                continue;
            }
            if (Character.isLetter(c) && (i == 0 || !isWord(text.charAt(i - 1)))) {
                int[] match = changed ? null : storedAs(text, i);
                if (match != null) {
                    out.append("USING ").append(text, match[0], match[1]);
                    i = match[1];
                    changed = true;
                    continue;
                }
            }
            out.append(c);
            i++;
        }
        return changed ? out.toString() : null;
    }

    /** [start, end) of the word {@code carbondata} when {@code STORED AS carbondata} begins at {@code i}. */
    private static int[] storedAs(String text, int i) {
        int j = word(text, i, "stored");
        if (j < 0) {
            return null;
        }
        j = word(text, blanks(text, j), "as");
        if (j < 0) {
            return null;
        }
        int start = blanks(text, j);
        int end = word(text, start, "carbondata");
        return end < 0 || start == j ? null : new int[] {start, end};
    }

    private static int word(String text, int i, String word) {
        int end = i + word.length();
        if (end > text.length() || !text.substring(i, end).toLowerCase(Locale.ROOT).equals(word)
                || end < text.length() && isWord(text.charAt(end))) {
            return -1;
        }
        return end;
    }

    private static int blanks(String text, int i) {
        while (i < text.length()) {
            int end = skip(text, i);
            if (end > i && text.charAt(i) != '\'' && text.charAt(i) != '"' && text.charAt(i) != '`') {
                i = end;  // a comment
            } else if (Character.isWhitespace(text.charAt(i))) {
                i++;
            } else {
                break;
            }
        }
        return i;
    }

    /** The end of the quoted string or comment starting at {@code i}, or {@code i} when none starts there. */
    private static int skip(String text, int i) {
        char c = text.charAt(i);
        if (c == '\'' || c == '"' || c == '`') {
            int j = i + 1;
            while (j < text.length() && text.charAt(j) != c) {
                j += text.charAt(j) == '\\' && c != '`' ? 2 : 1;
            }
            return Math.min(j + 1, text.length());
        }
        if (text.startsWith("--", i)) {
            int j = text.indexOf('\n', i);
            return j < 0 ? text.length() : j + 1;
        }
        if (text.startsWith("/*", i)) {
            int j = text.indexOf("*/", i + 2);
            return j < 0 ? text.length() : j + 2;
        }
        return i;
    }

    private static boolean isWord(char c) {
        return Character.isLetterOrDigit(c) || c == '_';
    }
}
