package carbonds.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collections;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.datasources.LogicalRelation;

/**
 * The Python side's native-union plan of each table, kept for the next query of that table, so a query of
 * an unchanged mixed table makes one Python planning call instead of two; and the planned reads the Python
 * side marks as kept ({@link ReadPlans}), so a repeated query of an unchanged table makes none. An entry
 * answers only when the state it was planned in holds: the same live segment list file and bytes
 * ({@link LiveStatus}), schema bytes, columns and segments option (the caller's state string), and every
 * external file it lists still of the size the plan recorded (a file rewritten in place, or gone, sends the
 * query to the Python side again).
 */
public final class PlanCache {
    private static final int TABLES = 64;
    private static final Map<String, Entry> PLANS = lru(TABLES);
    private static final java.util.concurrent.atomic.AtomicLong HITS = new java.util.concurrent.atomic.AtomicLong();

    /** Planned reads (ReadPlans answers the Python side marked as kept), by table path and read request. */
    private static final int READS = 128;
    private static final int MAX_READ_CHARS = 1 << 19;  // at most 64 MB kept; a larger plan is asked for again
    private static final Map<String, ReadEntry> READ_PLANS = lru(READS);
    private static final java.util.concurrent.atomic.AtomicLong READ_HITS = new java.util.concurrent.atomic.AtomicLong();

    /** A thread-safe map that forgets its least recently used entry beyond {@code max}. */
    private static <V> Map<String, V> lru(int max) {
        return Collections.synchronizedMap(new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, V> eldest) {
                return size() > max;
            }
        });
    }

    /** {@code relations}: Spark's resolved relation of each group of the plan's files, by group key, made
     * by the first query that reads them (resolving one checks, globs and lists every path again). */
    private record Entry(String state, Bridge.NativePlan plan, Map<String, LogicalRelation> relations) {
        Entry(String state, Bridge.NativePlan plan) {
            this(state, plan, new ConcurrentHashMap<>());
        }
    }

    /** How many plans were answered from the cache in this JVM (for tests and diagnostics). */
    public static long hits() {
        return HITS.get();
    }

    /** How many planned reads were answered from the cache in this JVM (for tests and diagnostics). */
    public static long readHits() {
        return READ_HITS.get();
    }

    private PlanCache() {
    }

    /** The digest of the table's live segment list (its file and bytes) and schema bytes, or null when
     * either cannot be read (a bare folder, a very large status: nothing is kept for it then). */
    static String tableState(Configuration conf, String path) {
        LiveStatus.Metadata metadata = LiveStatus.read(conf, path);
        return metadata == null ? null : metadata.state();
    }

    /** {@code rows}: the answer's rows read at planning, decoded by the first query that uses them
     * ({@link #keptRows}); the request key fixes the relation's columns, so one decode serves every query. */
    private record ReadEntry(String state, Bridge.ReadAnswer answer, AtomicReference<UnsafeRow[]> rows) {
        ReadEntry(String state, Bridge.ReadAnswer answer) {
            this(state, answer, new AtomicReference<>());
        }
    }

    /** The kept answer to read request {@code key} planned when the table was in {@code state}, or null. */
    static Bridge.ReadAnswer keptRead(String key, String state) {
        ReadEntry e = READ_PLANS.get(key);
        if (e == null || !e.state().equals(state)) {
            return null;
        }
        READ_HITS.incrementAndGet();
        return e.answer();
    }

    static void keepRead(String key, String state, Bridge.ReadAnswer answer) {
        if (answer.read() == null || answer.read().length() <= MAX_READ_CHARS) {
            READ_PLANS.put(key, new ReadEntry(state, answer));
        }
    }

    /**
     * The rows of {@code answer}, kept for request {@code key} in {@code state}, as {@code decode} makes them:
     * decoded by the first query that plans the read, shared by the next ones (a small dimension table read
     * at planning is thousands of rows, decoded and copied per query otherwise). An answer not kept is
     * decoded every time; a null decode (types differ) is not kept. Shared rows are never written to.
     */
    static UnsafeRow[] keptRows(String key, String state, Bridge.ReadAnswer answer, Callable<UnsafeRow[]> decode)
            throws Exception {
        ReadEntry e = READ_PLANS.get(key);
        if (e == null || e.answer() != answer || !e.state().equals(state)) {
            return decode.call();
        }
        UnsafeRow[] rows = e.rows().get();
        if (rows == null) {
            rows = decode.call();
            e.rows().compareAndSet(null, rows);
        }
        return rows;
    }

    /** The kept plan of the table at {@code path} for {@code state}, or null. */
    static Bridge.NativePlan get(Configuration conf, String path, String state) {
        Entry e = PLANS.get(path);
        if (e == null || !e.state().equals(state) || !sizesHold(conf, e.plan())) {
            return null;
        }
        HITS.incrementAndGet();
        return e.plan();
    }

    /** Where the resolved relations of the plan kept for {@code path} in {@code state} go: that entry's own
     * (a relation lives as long as the plan whose files it lists), or a map of this query alone. */
    static Map<String, LogicalRelation> relations(String path, String state) {
        Entry e = state == null ? null : PLANS.get(path);
        return e != null && e.state().equals(state) ? e.relations() : new HashMap<>();
    }

    static void put(String path, String state, Bridge.NativePlan plan) {
        if (plan.groups() != null) {
            PLANS.put(path, new Entry(state, plan));
        }
    }

    /** Whether every external file of {@code plan} still has the size it had when planned. */
    private static boolean sizesHold(Configuration conf, Bridge.NativePlan plan) {
        try {
            for (Bridge.FileGroup group : plan.groups()) {
                List<String> paths = group.paths();
                List<Long> sizes = group.sizes();
                if (paths == null || sizes == null || sizes.size() != paths.size()) {
                    return false;
                }
                for (int i = 0; i < paths.size(); i++) {
                    Path p = new Path(paths.get(i));
                    FileStatus st = p.getFileSystem(conf).getFileStatus(p);
                    if (sizes.get(i) == null || st.getLen() != sizes.get(i)) {
                        return false;
                    }
                }
            }
            return true;
        } catch (IOException | RuntimeException e) {
            return false;  // gone or unreadable: the Python side plans again and reports it
        }
    }

    static String digest(byte[] data) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
        } catch (NoSuchAlgorithmException e) {
            // every JDK has SHA-256; without it the bytes themselves are the key
            return new String(data, StandardCharsets.ISO_8859_1);
        }
    }
}
