package carbonds.spark;

import static com.fasterxml.jackson.annotation.JsonInclude.Include.NON_DEFAULT;
import static com.fasterxml.jackson.annotation.JsonInclude.Include.NON_NULL;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.annotation.JsonFormat;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import org.slf4j.LoggerFactory;

/**
 * The messages between this extension and the Python data source, typed: the records mirror
 * carbon_ds.spark.bridge.protocol one to one (same names, components named and ordered as the JSON keys, which
 * tests/package/test_bridge_protocol.py checks from this source). A component annotated {@code @JsonInclude} is
 * left out while it is null (or false), as the Python side leaves out a field declared with a default; any
 * other is always written, null included. {@code Shape.ARRAY} writes the components as a list.
 * A StructType travels as its JSON ({@link JsonNode}; {@code DataType.fromJson} where used).
 * Every top-level request and answer carries {@code v}: {@link #VERSION} when built here; an answer of another
 * version is taken as no answer ({@link #answer}), as the Python side answers nothing to a request of one.
 */
public final class Bridge {
    public static final int VERSION = 1;

    /** Production: a key the other side added is ignored (a newer package under an older jar). */
    static final ObjectMapper JSON = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();

    /** {@link #echo}'s: an unknown key or a scalar of another type fails (a missing or null component reads
     * as null or 0, which echo's comparison of the texts finds). */
    private static final ObjectMapper STRICT = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
            .build();

    private Bridge() {
    }

    /** An answer, whose version {@link #answer} checks. */
    interface Versioned {
        int v();
    }

    // ------------------------------------------------------------ M1: plan reads (ReadPlans)

    public record ReadSettings(int maxArrowBatchSize, boolean filterPushdown, boolean binaryAsBytes, long localBytes,
                               @JsonInclude(NON_DEFAULT) boolean bytesOnly) {
    }

    /** {@code options} sorted (a TreeMap), so equal reads write equal texts. */
    public record ReadRequest(Map<String, String> options, JsonNode schema) {
    }

    public record PlanReadsRequest(ReadSettings settings, List<ReadRequest> reads, int v) {
    }

    @JsonFormat(shape = JsonFormat.Shape.ARRAY)
    public record ValueCount(String value, long rows) {
    }

    public record ReadAnswer(@JsonInclude(NON_NULL) String read, @JsonInclude(NON_NULL) Long rows,
                             @JsonInclude(NON_NULL) List<ValueCount> values, @JsonInclude(NON_NULL) String arrow,
                             @JsonInclude(NON_NULL) Long bytes, @JsonInclude(NON_DEFAULT) boolean keep,
                             @JsonInclude(NON_NULL) String plan) {
    }

    public record PlanReadsAnswer(List<ReadAnswer> answers, int v) implements Versioned {
    }

    // ------------------------------------------------------------ M2: native union plan (NativeUnion)

    public record NativePlanRequest(JsonNode declared, Map<String, JsonNode> known, int v) {
    }

    public record FileGroup(String key, String format, Map<String, String> options, List<String> paths,
                            List<Long> sizes, @JsonInclude(NON_NULL) List<String> select) {
    }

    public record NativePlan(List<String> carbon_segments, List<FileGroup> groups) {
    }

    public record NativePlanAnswer(NativePlan plan, int v) implements Versioned {
    }

    // ------------------------------------------------------------ M3: fresh materialized views (ViewRewrite)

    public record ViewsRequest(List<String> tables, long localBytes, int v) {
    }

    /** {@code values}: Integer, Long or String literals. */
    public record Condition(String column, String op, List<Object> values) {
    }

    public record ViewGroup(String name, String column, String granularity) {
    }

    public record ViewAggregate(String name, String func, String column, @JsonInclude(NON_NULL) String sum,
                                @JsonInclude(NON_NULL) String count) {
    }

    @JsonFormat(shape = JsonFormat.Shape.ARRAY)
    public record JoinKey(String left, String right) {
    }

    public record View(@JsonInclude(NON_NULL) String arrow, String path, String name, String segment,
                       List<Condition> where, String zone, JsonNode schema, List<Long> tables, List<JoinKey> keys,
                       List<ViewGroup> groups, List<ViewAggregate> aggregates) {
    }

    public record ViewsAnswer(List<View> views, int v) implements Versioned {
    }

    // ------------------------------------------------------------ O1: option partial_counts (PartialCounts)

    public record Day(List<Long> offsets, List<Long> at, @JsonInclude(NON_NULL) Long until,
                      @JsonInclude(NON_NULL) String zone) {
    }

    public record CountKey(String column, @JsonInclude(NON_NULL) Day day) {
    }

    public record PartialCountsSpec(List<CountKey> keys, int v) {
    }

    // ------------------------------------------------------------ the codec

    static String write(Object message) {
        try {
            return JSON.writeValueAsString(message);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);  // records of strings, numbers and trees always write
        }
    }

    static <T> T read(String json, Class<T> type) throws IOException {
        return JSON.readValue(json, type);
    }

    /** The answer {@code json} as {@code type}, or null when it is null or of another version (a Python package
     * not shipped with this jar, whose answer may mean something else: Spark then plans as without the
     * extension). */
    static <A extends Versioned> A answer(String json, Class<A> type) throws IOException {
        A got = read(json, type);
        if (got == null || got.v() == VERSION) {
            return got;
        }
        if (DROPPED.getAndIncrement() == 0) {  // said once per JVM: every query would say it again
            LoggerFactory.getLogger(Bridge.class).warn(
                    "carbon-ds: the Python package answered the extension with message version {} ({}), this jar "
                    + "speaks version {}: such answers are ignored and queries over carbondata tables are planned "
                    + "as without the extension. Install carbon-ds from one wheel (its jar and its Python package "
                    + "together) on the driver.", got.v(), type.getSimpleName(), VERSION);
        }
        return null;
    }

    /** Answers of another version ignored since the JVM started. */
    public static long droppedAnswers() {
        return DROPPED.get();
    }

    private static final AtomicLong DROPPED = new AtomicLong();

    /** Whether {@link #answer} takes {@code json} as the answer named {@code kind} (the version test). */
    public static boolean taken(String kind, String json) throws IOException {
        Class<?> type = messages().get(kind);
        if (type == null || !Versioned.class.isAssignableFrom(type)) {
            throw new IllegalArgumentException("Bridge.taken: expected an answer's name, found " + kind);
        }
        return answer(json, type.asSubclass(Versioned.class)) != null;
    }

    /**
     * {@code json} read strictly as the record named {@code kind} and written again (the round-trip test): a
     * key the record lacks, a component missing, or a value of another type fails, naming the record.
     */
    public static String echo(String kind, String json) throws IOException {
        Class<?> type = messages().get(kind);
        if (type == null) {
            throw new IllegalArgumentException("Bridge.echo: expected a message name, found " + kind);
        }
        String out = STRICT.writeValueAsString(STRICT.readValue(json, type));
        // a component the text lacks reads as null and writes as null: the two texts then differ
        if (!STRICT.readTree(out).equals(STRICT.readTree(json))) {
            throw new IllegalArgumentException("Bridge.echo: " + kind + " read from " + json + " writes " + out);
        }
        return out;
    }

    /** Every message record by its name. */
    static Map<String, Class<?>> messages() {
        Map<String, Class<?>> out = new LinkedHashMap<>();
        for (Class<?> c : Bridge.class.getDeclaredClasses()) {
            if (c.isRecord()) {
                out.put(c.getSimpleName(), c);
            }
        }
        return out;
    }

    /** Java-built instances of the messages this side writes, as {@code {name: [text, ...]}} (the round-trip test). */
    public static String samples() throws IOException {
        JsonNode schema = JSON.readTree(
                "{\"type\":\"struct\",\"fields\":[{\"name\":\"x\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}");
        Map<String, String> options = new TreeMap<>(Map.of("b", "2", "a", "1"));
        Map<String, List<Object>> out = new LinkedHashMap<>();
        out.put("PlanReadsRequest", List.of(
                new PlanReadsRequest(new ReadSettings(10000, true, false, 4L << 20, false),
                        List.of(new ReadRequest(options, schema), new ReadRequest(Map.of(), schema)), VERSION),
                new PlanReadsRequest(new ReadSettings(1, false, true, 0L, true), List.of(), VERSION)));
        out.put("NativePlanRequest", List.of(
                new NativePlanRequest(schema, Map.of("k1", schema), VERSION),
                new NativePlanRequest(schema, Map.of(), VERSION)));
        java.util.ArrayList<String> tables = new java.util.ArrayList<>();
        tables.add("file:/t");
        tables.add(null);
        out.put("ViewsRequest", List.of(new ViewsRequest(tables, 100L, VERSION),
                new ViewsRequest(List.of(), 0L, VERSION)));
        out.put("PartialCountsSpec", List.of(
                new PartialCountsSpec(List.of(new CountKey("s", null),
                        new CountKey("t", new Day(List.of(3600L, 7200L), List.of(100L), 2000L, "Europe/Paris"))),
                        VERSION),
                new PartialCountsSpec(List.of(new CountKey("t", new Day(List.of(0L), List.of(), null, null))),
                        VERSION)));
        Map<String, List<String>> texts = new LinkedHashMap<>();
        out.forEach((kind, messages) -> texts.put(kind, messages.stream().map(Bridge::write).toList()));
        return write(texts);
    }
}
