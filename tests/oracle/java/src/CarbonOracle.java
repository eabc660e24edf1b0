// Test-only harness: Apache CarbonData's own SDK writing and reading folders for carbon-ds's differential tests.
//
// java CarbonOracle <batch.json> <results.json>
//
// The batch is {"jobs": [job, ...]}; every job runs in this one JVM, in order, and gets one entry in the
// results ({"id", "ok", "error", "rows"}), so a failing job never stops the others.
//
//   {"id", "kind": "write", "out": folder, "schema": [{"name", "type"}...], "files": [[row...]...],
//    "tableProperties": {...}, "loadOptions": {...}, "carbonProperties": {...}}
//       each element of "files" is one CarbonWriter (one data file or more) of CSV-input rows: an array of
//       strings (null for SQL NULL) in schema order; complex values joined by the load's delimiters.
//   {"id", "kind": "read", "path": folder, "projection": [names], "filter": expr, "out": file}
//       CarbonReader over the folder; one JSON array per row in "out", values as canon() prints them.
//       "paths": [folder, ...] instead of "path" reads each folder with its own CarbonReader, in order.
//   {"id", "kind": "delete", "path": folder, "filter": expr}
//       CarbonIUD deletes the rows of an SDK folder matching the filter (delete deltas beside its files).
//   {"id", "kind": "table", "path": table, ...as read}
//       the table read through its Metadata/schema and tablestatus (CarbonTableInputFormat), as
//       CarbonData's engines read a table: segment statuses, delete deltas and update status apply.
//   {"id", "kind": "cli", "args": [...]}
//       carbondata-cli's CarbonCli (e.g. ["-cmd", "summary", "-p", folder, "-a"]); the lines it prints are
//       the result's "output". CarbonCli keeps some failures to itself (a stack trace on stderr, output cut
//       short), so the tests check the output for the sections they ask for.
//
// Types are text: int, smallint, bigint, float, double, boolean, string, varchar, date, timestamp, binary,
// decimal(p,s), array<T>, struct<a:T,...>, map<K,V>. Filters: {"op": "=" | "!=" | "<" | "<=" | ">" | ">=",
// "column", "type", "value"}, {"op": "in" | "not in", "column", "type", "values"}, {"op": "is null" |
// "is not null", "column", "type"}, {"op": "and" | "or", "args": [expr, expr]}; literal values are text,
// converted by the column type (date: days since 1970-01-01, timestamp: microseconds since the epoch).

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;

import java.io.BufferedWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Constructor;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;

import org.apache.carbondata.core.metadata.datatype.ArrayType;
import org.apache.carbondata.core.metadata.datatype.DataType;
import org.apache.carbondata.core.metadata.datatype.DataTypes;
import org.apache.carbondata.core.metadata.datatype.DecimalType;
import org.apache.carbondata.core.metadata.datatype.Field;
import org.apache.carbondata.core.metadata.datatype.MapType;
import org.apache.carbondata.core.metadata.datatype.StructField;
import org.apache.carbondata.core.metadata.datatype.StructType;
import org.apache.carbondata.core.scan.expression.ColumnExpression;
import org.apache.carbondata.core.scan.expression.Expression;
import org.apache.carbondata.core.scan.expression.LiteralExpression;
import org.apache.carbondata.core.scan.expression.conditional.EqualToExpression;
import org.apache.carbondata.core.scan.expression.conditional.GreaterThanEqualToExpression;
import org.apache.carbondata.core.scan.expression.conditional.GreaterThanExpression;
import org.apache.carbondata.core.scan.expression.conditional.InExpression;
import org.apache.carbondata.core.scan.expression.conditional.LessThanEqualToExpression;
import org.apache.carbondata.core.scan.expression.conditional.LessThanExpression;
import org.apache.carbondata.core.scan.expression.conditional.ListExpression;
import org.apache.carbondata.core.scan.expression.conditional.NotEqualsExpression;
import org.apache.carbondata.core.scan.expression.conditional.NotInExpression;
import org.apache.carbondata.core.scan.expression.logical.AndExpression;
import org.apache.carbondata.core.scan.expression.logical.OrExpression;
import org.apache.carbondata.core.util.CarbonProperties;
import org.apache.carbondata.sdk.file.CarbonIUD;
import org.apache.carbondata.sdk.file.CarbonReader;
import org.apache.carbondata.sdk.file.CarbonReaderBuilder;
import org.apache.carbondata.sdk.file.CarbonWriter;
import org.apache.carbondata.sdk.file.CarbonWriterBuilder;
import org.apache.carbondata.sdk.file.Schema;
import org.apache.carbondata.tool.CarbonCli;

public final class CarbonOracle {
  // one Hadoop configuration for every reader and writer: building one loads Hadoop's XML resources
  static final org.apache.hadoop.conf.Configuration HADOOP = new org.apache.hadoop.conf.Configuration();

  private CarbonOracle() {
  }

  public static void main(String[] args) throws Exception {
    // what CarbonReader formats timestamps with: to the millisecond CarbonData keeps
    CarbonProperties.getInstance().addProperty("carbon.timestamp.format", "yyyy-MM-dd HH:mm:ss.SSS");
    JsonObject batch = new JsonParser().parse(
        new String(Files.readAllBytes(Paths.get(args[0])), StandardCharsets.UTF_8)).getAsJsonObject();
    JsonArray results = new JsonArray();
    for (JsonElement e : batch.getAsJsonArray("jobs")) {
      JsonObject job = e.getAsJsonObject();
      JsonObject result = new JsonObject();
      result.add("id", job.get("id"));
      long started = System.nanoTime();
      try {
        String kind = job.get("kind").getAsString();
        long rows;
        if (kind.equals("write")) {
          rows = write(job);
        } else if (kind.equals("read")) {
          rows = read(job, false);
        } else if (kind.equals("table")) {
          rows = read(job, true);
        } else if (kind.equals("cli")) {
          List<String> lines = cli(job);
          JsonArray output = new JsonArray();
          for (String line : lines) {
            output.add(new JsonPrimitive(line));
          }
          result.add("output", output);
          rows = lines.size();
        } else if (kind.equals("delete")) {
          // CarbonData's own delete of an SDK folder's rows (delete delta files beside the data files)
          CarbonIUD.getInstance(HADOOP).delete(job.get("path").getAsString(),
              expression(job.getAsJsonObject("filter")));
          rows = 0;
        } else {
          throw new IllegalArgumentException("unknown job kind " + kind);
        }
        result.addProperty("ok", true);
        result.addProperty("rows", rows);
      } catch (Throwable t) {
        result.addProperty("ok", false);
        StringWriter trace = new StringWriter();
        t.printStackTrace(new PrintWriter(trace));
        result.addProperty("error", trace.toString());
      }
      result.addProperty("ms", (System.nanoTime() - started) / 1_000_000);
      results.add(result);
    }
    Gson gson = new GsonBuilder().serializeNulls().create();
    Files.write(Paths.get(args[1]), gson.toJson(results).getBytes(StandardCharsets.UTF_8));
    // CarbonData leaves non-daemon pool threads behind a failed load
    System.exit(0);
  }

  // ------------------------------------------------------------------ types

  /** A type's text (see the header) as CarbonData's DataType. */
  static DataType parseType(String text) {
    String t = text.trim();
    String lower = t.toLowerCase();
    if (lower.startsWith("decimal(")) {
      String[] ps = t.substring(8, t.length() - 1).split(",");
      return DataTypes.createDecimalType(Integer.parseInt(ps[0].trim()), Integer.parseInt(ps[1].trim()));
    }
    if (lower.startsWith("array<")) {
      return DataTypes.createArrayType(parseType(t.substring(6, t.length() - 1)));
    }
    if (lower.startsWith("map<")) {
      List<String> kv = splitTop(t.substring(4, t.length() - 1));
      return DataTypes.createMapType(parseType(kv.get(0)), parseType(kv.get(1)));
    }
    if (lower.startsWith("struct<")) {
      List<StructField> fields = new ArrayList<>();
      for (String part : splitTop(t.substring(7, t.length() - 1))) {
        int colon = part.indexOf(':');
        fields.add(structField(part.substring(0, colon).trim(), parseType(part.substring(colon + 1))));
      }
      return DataTypes.createStructType(fields);
    }
    switch (lower) {
      case "int": return DataTypes.INT;
      case "smallint": return DataTypes.SHORT;
      case "bigint": return DataTypes.LONG;
      case "float": return DataTypes.FLOAT;
      case "double": return DataTypes.DOUBLE;
      case "boolean": return DataTypes.BOOLEAN;
      case "string": return DataTypes.STRING;
      case "varchar": return DataTypes.VARCHAR;
      case "date": return DataTypes.DATE;
      case "timestamp": return DataTypes.TIMESTAMP;
      case "binary": return DataTypes.BINARY;
      default: throw new IllegalArgumentException("unknown type " + text);
    }
  }

  /** Comma-separated parts of ``text`` outside angle brackets and parentheses. */
  static List<String> splitTop(String text) {
    List<String> out = new ArrayList<>();
    int depth = 0;
    int start = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '<' || c == '(') {
        depth++;
      } else if (c == '>' || c == ')') {
        depth--;
      } else if (c == ',' && depth == 0) {
        out.add(text.substring(start, i));
        start = i + 1;
      }
    }
    out.add(text.substring(start));
    return out;
  }

  static StructField structField(String name, DataType type) {
    return new StructField(name, type, children(name, type));
  }

  /** The child fields CarbonData's writer wants for a complex type (null for primitives). */
  static List<StructField> children(String name, DataType type) {
    List<StructField> out = new ArrayList<>();
    if (type instanceof ArrayType) {
      out.add(structField(name + "_val", ((ArrayType) type).getElementType()));
    } else if (type instanceof StructType) {
      for (StructField f : ((StructType) type).getFields()) {
        out.add(structField(f.getFieldName(), f.getDataType()));
      }
    } else if (type instanceof MapType) {
      // a map is stored as an array of key/value structs
      List<StructField> kv = new ArrayList<>();
      kv.add(structField("key", ((MapType) type).getKeyType()));
      kv.add(structField("value", ((MapType) type).getValueType()));
      out.add(new StructField(name + "_val", DataTypes.createStructType(kv), kv));
    } else {
      return null;
    }
    return out;
  }

  static Field field(String name, DataType type) {
    List<StructField> kids = children(name, type);
    return kids == null ? new Field(name, type) : new Field(name, type, kids);
  }

  // ------------------------------------------------------------------ writing

  static Map<String, String> strings(JsonObject obj) {
    Map<String, String> out = new LinkedHashMap<>();
    if (obj != null) {
      for (Map.Entry<String, JsonElement> e : obj.entrySet()) {
        out.put(e.getKey(), e.getValue().getAsString());
      }
    }
    return out;
  }

  static long write(JsonObject job) throws Exception {
    JsonArray schema = job.getAsJsonArray("schema");
    Field[] fields = new Field[schema.size()];
    for (int i = 0; i < fields.length; i++) {
      JsonObject f = schema.get(i).getAsJsonObject();
      fields[i] = field(f.get("name").getAsString(), parseType(f.get("type").getAsString()));
    }
    Map<String, String> carbonProps = strings(job.getAsJsonObject("carbonProperties"));
    Map<String, String> before = new HashMap<>();
    CarbonProperties props = CarbonProperties.getInstance();
    for (Map.Entry<String, String> e : carbonProps.entrySet()) {
      before.put(e.getKey(), props.getProperty(e.getKey()));
      props.addProperty(e.getKey(), e.getValue());
    }
    long rows = 0;
    try {
      int fileNo = 0;
      for (JsonElement file : job.getAsJsonArray("files")) {
        CarbonWriterBuilder builder = CarbonWriter.builder()
            .outputPath(job.get("out").getAsString())
            .withCsvInput(new Schema(fields))
            .writtenBy("carbon-ds oracle")
            .withHadoopConf(HADOOP)
            .taskNo(fileNo++);
        Map<String, String> tableProps = strings(job.getAsJsonObject("tableProperties"));
        if (!tableProps.isEmpty()) {
          builder.withTableProperties(tableProps);
        }
        Map<String, String> loadOptions = strings(job.getAsJsonObject("loadOptions"));
        if (!loadOptions.isEmpty()) {
          builder.withLoadOptions(loadOptions);
        }
        CarbonWriter writer = builder.build();
        for (JsonElement r : file.getAsJsonArray()) {
          JsonArray row = r.getAsJsonArray();
          String[] values = new String[row.size()];
          for (int i = 0; i < values.length; i++) {
            values[i] = row.get(i).isJsonNull() ? null : row.get(i).getAsString();
          }
          writer.write(values);
          rows++;
        }
        close(writer);
      }
    } finally {
      for (Map.Entry<String, String> e : before.entrySet()) {
        if (e.getValue() == null) {
          props.removeProperty(e.getKey());
        } else {
          props.addProperty(e.getKey(), e.getValue());
        }
      }
    }
    return rows;
  }

  /**
   * ``writer.close()``, without CarbonData 2.3.0's five-minute stall. The writer hands rows to its loading thread
   * through a CarbonOutputIteratorWrapper: at close it queues the last batch, queues an empty end-of-input batch
   * only if the queue is empty just then, and sets its (non-volatile) close flag after that. If the loading thread
   * takes the last batch and reads its rows between that check and the flag, it reads the flag as unset and
   * waits for another batch with ``poll(5, MINUTES)`` while close waits for it: 300 s lost, seen under CPU
   * contention (jstack: main in CarbonRecordWriter.close at Future.get, the loader in
   * CarbonOutputIteratorWrapper.hasNext at ArrayBlockingQueue.poll). A watcher queues the end-of-input batch
   * CarbonData skipped: only once close has queued everything (flag set, the closing thread parked in
   * Future.get) and the queue is empty, so it is read after every row, as CarbonData's own would be.
   */
  @SuppressWarnings("unchecked")
  static void close(CarbonWriter writer) throws Exception {
    Object wrapper = member(member(writer, "recordWriter"), "iteratorWrapper");
    java.lang.reflect.Field closed = wrapper.getClass().getDeclaredField("close");
    closed.setAccessible(true);
    ArrayBlockingQueue<Object> queue = (ArrayBlockingQueue<Object>) member(wrapper, "queue");
    Constructor<?> batch = Class.forName(wrapper.getClass().getName() + "$RowBatch").getDeclaredConstructor(int.class);
    batch.setAccessible(true);
    Object endOfInput = batch.newInstance(0);
    Thread closing = Thread.currentThread();
    Thread watcher = new Thread(() -> {
      try {
        while (!(closing.getState() == Thread.State.WAITING && closed.getBoolean(wrapper) && queue.isEmpty())) {
          Thread.sleep(20);
        }
        queue.offer(endOfInput);
      } catch (InterruptedException | IllegalAccessException e) {
        // close returned first: nothing to do
      }
    }, "oracle-close-watcher");
    watcher.setDaemon(true);
    watcher.start();
    try {
      writer.close();
    } finally {
      watcher.interrupt();
      watcher.join();
    }
  }

  /** A private field of CarbonData's (the harness is built against 2.3.0 only). */
  static Object member(Object owner, String name) throws ReflectiveOperationException {
    java.lang.reflect.Field f = owner.getClass().getDeclaredField(name);
    f.setAccessible(true);
    return f.get(owner);
  }

  // ------------------------------------------------------------------ carbondata-cli

  static List<String> cli(JsonObject job) {
    JsonArray a = job.getAsJsonArray("args");
    String[] args = new String[a.size()];
    for (int i = 0; i < args.length; i++) {
      args[i] = a.get(i).getAsString();
    }
    // the entry point that collects its lines into a list (main prints them to System.out)
    ArrayList<String> lines = new ArrayList<>();
    CarbonCli.run(args, lines, false);
    List<String> out = new ArrayList<>();
    for (String block : lines) {
      // some entries are several lines (a formatted table, the help text)
      for (String line : block.split("\n", -1)) {
        out.add(line);
      }
    }
    return out;
  }

  // ------------------------------------------------------------------ reading

  static long read(JsonObject job, boolean asTable) throws Exception {
    String path = job.has("path") ? job.get("path").getAsString() : null;
    String[] projection = null;
    if (job.has("projection") && !job.get("projection").isJsonNull()) {
      JsonArray p = job.getAsJsonArray("projection");
      projection = new String[p.size()];
      for (int i = 0; i < projection.length; i++) {
        projection[i] = p.get(i).getAsString();
      }
    }
    Expression filter = job.has("filter") && !job.get("filter").isJsonNull()
        ? expression(job.getAsJsonObject("filter")) : null;
    long rows = 0;
    try (BufferedWriter out = Files.newBufferedWriter(Paths.get(job.get("out").getAsString()),
        StandardCharsets.UTF_8)) {
      Gson gson = new GsonBuilder().serializeNulls().disableHtmlEscaping().create();
      List<Object[]> source;
      if (asTable) {
        source = TableRows.read(path, projection, filter);
      } else if (job.has("paths")) {
        // one CarbonReader per folder: the SDK reads a flat folder; over a table root holding several
        // Fact/Part0/Segment_<n> folders its filtered reads lose rows (CarbonData's own files too)
        source = new ArrayList<>();
        for (JsonElement p : job.getAsJsonArray("paths")) {
          source.addAll(sdkRows(p.getAsString(), projection, filter));
        }
      } else {
        source = sdkRows(path, projection, filter);
      }
      for (Object[] row : source) {
        JsonArray line = new JsonArray();
        for (Object v : row) {
          line.add(canon(v));
        }
        out.write(gson.toJson(line));
        out.write('\n');
        rows++;
      }
    }
    return rows;
  }

  static List<Object[]> sdkRows(String path, String[] projection, Expression filter) throws Exception {
    CarbonReaderBuilder builder = CarbonReader.builder(path, "_oracle").withHadoopConf(HADOOP);
    if (projection != null) {
      builder.projection(projection);
    }
    if (filter != null) {
      builder.filter(filter);
    }
    CarbonReader<Object> reader = builder.build();
    List<Object[]> rows = new ArrayList<>();
    try {
      while (reader.hasNext()) {
        rows.add((Object[]) reader.readNextRow());
      }
    } finally {
      reader.close();
    }
    return rows;
  }

  /** A value as the tests compare it: exact, and the same text for the same value on both sides. */
  static JsonElement canon(Object v) {
    if (v == null) {
      return JsonNull.INSTANCE;
    }
    if (v instanceof Boolean) {
      return new JsonPrimitive((Boolean) v);
    }
    if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long) {
      return new JsonPrimitive(String.valueOf(((Number) v).longValue()));
    }
    if (v instanceof Float) {
      float f = (Float) v;
      return new JsonPrimitive(Float.isNaN(f) ? "f:NaN" : String.format("f:%08x", Float.floatToRawIntBits(f)));
    }
    if (v instanceof Double) {
      double d = (Double) v;
      return new JsonPrimitive(Double.isNaN(d) ? "d:NaN"
          : String.format("d:%016x", Double.doubleToRawLongBits(d)));
    }
    if (v instanceof BigDecimal) {
      return new JsonPrimitive("n:" + ((BigDecimal) v).toPlainString());
    }
    if (v instanceof String) {
      return new JsonPrimitive("s:" + v);
    }
    if (v instanceof byte[]) {
      StringBuilder hex = new StringBuilder("x:");
      for (byte b : (byte[]) v) {
        hex.append(String.format("%02x", b & 0xff));
      }
      return new JsonPrimitive(hex.toString());
    }
    if (v instanceof Object[]) {
      JsonArray out = new JsonArray();
      for (Object o : (Object[]) v) {
        out.add(canon(o));
      }
      return out;
    }
    if (v instanceof Map) {
      JsonArray out = new JsonArray();
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        JsonArray kv = new JsonArray();
        kv.add(canon(e.getKey()));
        kv.add(canon(e.getValue()));
        out.add(kv);
      }
      return out;
    }
    return new JsonPrimitive("?" + v.getClass().getName() + ":" + v);
  }

  // ------------------------------------------------------------------ filters

  static Expression expression(JsonObject e) {
    String op = e.get("op").getAsString();
    if (op.equals("and") || op.equals("or")) {
      JsonArray args = e.getAsJsonArray("args");
      Expression out = expression(args.get(0).getAsJsonObject());
      for (int i = 1; i < args.size(); i++) {
        Expression next = expression(args.get(i).getAsJsonObject());
        out = op.equals("and") ? new AndExpression(out, next) : new OrExpression(out, next);
      }
      return out;
    }
    DataType type = parseType(e.get("type").getAsString());
    ColumnExpression column = new ColumnExpression(e.get("column").getAsString(), type);
    switch (op) {
      case "is null":
        return new EqualToExpression(column, new LiteralExpression(null, type), true);
      case "is not null":
        return new NotEqualsExpression(column, new LiteralExpression(null, type), true);
      case "in":
      case "not in": {
        List<Expression> items = new ArrayList<>();
        for (JsonElement v : e.getAsJsonArray("values")) {
          items.add(literal(v, type));
        }
        ListExpression list = new ListExpression(items);
        return op.equals("in") ? new InExpression(column, list) : new NotInExpression(column, list);
      }
      default:
        break;
    }
    LiteralExpression value = literal(e.get("value"), type);
    switch (op) {
      case "=": return new EqualToExpression(column, value);
      case "!=": return new NotEqualsExpression(column, value);
      case "<": return new LessThanExpression(column, value);
      case "<=": return new LessThanEqualToExpression(column, value);
      case ">": return new GreaterThanExpression(column, value);
      case ">=": return new GreaterThanEqualToExpression(column, value);
      default: throw new IllegalArgumentException("unknown filter op " + op);
    }
  }

  static LiteralExpression literal(JsonElement v, DataType type) {
    if (v == null || v.isJsonNull()) {
      return new LiteralExpression(null, type);
    }
    String text = v.getAsString();
    Object value;
    if (type == DataTypes.INT || type == DataTypes.DATE) {
      value = Integer.parseInt(text);
    } else if (type == DataTypes.SHORT) {
      value = Short.parseShort(text);
    } else if (type == DataTypes.LONG || type == DataTypes.TIMESTAMP) {
      value = Long.parseLong(text);
    } else if (type == DataTypes.FLOAT) {
      value = Float.parseFloat(text);
    } else if (type == DataTypes.DOUBLE) {
      value = Double.parseDouble(text);
    } else if (type == DataTypes.BOOLEAN) {
      value = Boolean.parseBoolean(text);
    } else if (type instanceof DecimalType) {
      value = new BigDecimal(text);
    } else {
      value = text;
    }
    return new LiteralExpression(value, type);
  }
}
