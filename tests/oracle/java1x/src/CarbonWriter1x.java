// Test-only harness: Apache CarbonData 1.6.1's CarbonWriter writing folders for carbon-ds's tests of 1.x files.
//
// java CarbonWriter1x <batch.json> <results.json>
//
// The batch is {"jobs": [job, ...]}, every job run in this one JVM, each with one entry in the results
// ({"id", "ok", "error"}):
//   {"id", "out": folder, "schema": [{"name", "type"}...], "files": [[row...]...], "sortBy": [names],
//    "localDictionary": true|false, "localDictionaryThreshold": n}
// Each element of "files" is one CarbonWriter (one data file) of CSV-input rows: arrays of strings in schema
// order, "\N" for null. Types: int, smallint, bigint, float, double, boolean, string, date, timestamp, binary,
// decimal(p,s). Timestamps are read as yyyy-MM-dd HH:mm:ss.SSS, dates as yyyy-MM-dd.

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

import org.apache.carbondata.core.metadata.datatype.DataType;
import org.apache.carbondata.core.metadata.datatype.DataTypes;
import org.apache.carbondata.core.util.CarbonProperties;
import org.apache.carbondata.sdk.file.CarbonWriter;
import org.apache.carbondata.sdk.file.CarbonWriterBuilder;
import org.apache.carbondata.sdk.file.Field;
import org.apache.carbondata.sdk.file.Schema;

public final class CarbonWriter1x {
  private CarbonWriter1x() {
  }

  public static void main(String[] args) throws Exception {
    CarbonProperties.getInstance().addProperty("carbon.timestamp.format", "yyyy-MM-dd HH:mm:ss.SSS");
    CarbonProperties.getInstance().addProperty("carbon.date.format", "yyyy-MM-dd");
    JsonObject batch = new JsonParser().parse(
        new String(Files.readAllBytes(Paths.get(args[0])), StandardCharsets.UTF_8)).getAsJsonObject();
    JsonArray results = new JsonArray();
    for (JsonElement e : batch.getAsJsonArray("jobs")) {
      JsonObject job = e.getAsJsonObject();
      JsonObject result = new JsonObject();
      result.add("id", job.get("id"));
      try {
        write(job);
        result.addProperty("ok", true);
      } catch (Throwable t) {
        result.addProperty("ok", false);
        StringWriter trace = new StringWriter();
        t.printStackTrace(new PrintWriter(trace));
        result.addProperty("error", trace.toString());
      }
      results.add(result);
    }
    Files.write(Paths.get(args[1]), results.toString().getBytes(StandardCharsets.UTF_8));
    // CarbonData leaves non-daemon pool threads behind a failed load
    System.exit(0);
  }

  static Field field(String name, String type) {
    String t = type.trim().toLowerCase();
    if (t.startsWith("decimal(")) {
      String[] ps = t.substring(8, t.length() - 1).split(",");
      DataType d = DataTypes.createDecimalType(Integer.parseInt(ps[0].trim()), Integer.parseInt(ps[1].trim()));
      return new Field(name, d);
    }
    switch (t) {
      case "int": return new Field(name, DataTypes.INT);
      case "smallint": return new Field(name, DataTypes.SHORT);
      case "bigint": return new Field(name, DataTypes.LONG);
      case "float": return new Field(name, DataTypes.FLOAT);
      case "double": return new Field(name, DataTypes.DOUBLE);
      case "boolean": return new Field(name, DataTypes.BOOLEAN);
      case "string": return new Field(name, DataTypes.STRING);
      case "date": return new Field(name, DataTypes.DATE);
      case "timestamp": return new Field(name, DataTypes.TIMESTAMP);
      case "binary": return new Field(name, DataTypes.BINARY);
      default: throw new IllegalArgumentException("unknown type " + type);
    }
  }

  static void write(JsonObject job) throws Exception {
    JsonArray schema = job.getAsJsonArray("schema");
    Field[] fields = new Field[schema.size()];
    for (int i = 0; i < fields.length; i++) {
      JsonObject f = schema.get(i).getAsJsonObject();
      fields[i] = field(f.get("name").getAsString(), f.get("type").getAsString());
    }
    int fileNo = 0;
    for (JsonElement file : job.getAsJsonArray("files")) {
      CarbonWriterBuilder builder = CarbonWriter.builder()
          .outputPath(job.get("out").getAsString())
          .withCsvInput(new Schema(fields))
          .writtenBy("carbon-ds oracle 1.x")
          .taskNo(fileNo++);
      if (job.has("sortBy")) {
        JsonArray s = job.getAsJsonArray("sortBy");
        String[] sortBy = new String[s.size()];
        for (int i = 0; i < sortBy.length; i++) {
          sortBy[i] = s.get(i).getAsString();
        }
        builder.sortBy(sortBy);
      }
      if (job.has("localDictionary")) {
        builder.enableLocalDictionary(job.get("localDictionary").getAsBoolean());
      }
      if (job.has("localDictionaryThreshold")) {
        builder.localDictionaryThreshold(job.get("localDictionaryThreshold").getAsInt());
      }
      CarbonWriter writer = builder.build();
      for (JsonElement r : file.getAsJsonArray()) {
        JsonArray row = r.getAsJsonArray();
        String[] values = new String[row.size()];
        for (int i = 0; i < values.length; i++) {
          values[i] = row.get(i).getAsString();
        }
        writer.write(values);
      }
      writer.close();
    }
  }
}
