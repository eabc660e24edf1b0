package carbonds.spark;

import java.io.InputStream;
import java.util.HashSet;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructField;

/**
 * Size estimates Spark can plan joins with, made the way Spark sizes a Parquet relation: the stored bytes of
 * the readable segments (dataSize + indexSize in Metadata/tablestatus; only the chosen ones with option
 * segments) times the share of the declared columns in the row width (Spark's default width per type).
 */
final class TableSize {
    private static final Set<String> READABLE = Set.of("Success", "Marked for Update", "Partial Success");
    private static final ObjectMapper JSON = new ObjectMapper();

    private TableSize() {
    }

    static long rowWidth(StructField[] fields) {
        long w = 8;  // EstimationUtils.getSizePerRow adds 8 bytes a row
        for (StructField f : fields) {
            DataType t = f.dataType();
            w += t instanceof DecimalType d ? (d.precision() <= 18 ? 8 : 16) : t.defaultSize();
        }
        return w;
    }

    /** Stored bytes of the readable segments of the table at {@code path}, or -1 without a tablestatus. */
    static long storedBytes(Configuration conf, String path, String segments) {
        Set<String> chosen = null;
        if (segments != null && !segments.isBlank()) {
            chosen = new HashSet<>();
            for (String s : segments.split(",")) {
                chosen.add(s.trim());
            }
        }
        try {
            Path status = new Path(new Path(path, "Metadata"), "tablestatus");
            FileSystem fs = status.getFileSystem(conf);
            if (!fs.exists(status)) {
                return -1;
            }
            JsonNode entries;
            try (InputStream in = fs.open(status)) {
                entries = JSON.readTree(in);
            }
            long total = 0;
            for (JsonNode e : entries) {
                boolean visible = !"false".equalsIgnoreCase(e.path("visibility").asText("true"));
                if (READABLE.contains(e.path("loadStatus").asText("")) && visible
                        && (chosen == null || chosen.contains(e.path("loadName").asText("")))) {
                    total += e.path("dataSize").asLong(0) + e.path("indexSize").asLong(0);
                }
            }
            return total;
        } catch (Exception e) {
            return -1;  // no estimate: Spark plans the relation as it would without one
        }
    }
}
