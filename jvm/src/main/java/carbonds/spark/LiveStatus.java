package carbonds.spark;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A table's schema and live segment list bytes, the state every rule of this extension plans from. Which
 * segment list file is live follows CarbonData's rule as carbon_ds/table/meta/status/status_versions.py states it
 * (tests/spark/test_versioned_status_native.py checks that the two pick the same file):
 * the {@code tablestatus_<version>} the schema's {@code latestversion} property names; else the plain
 * {@code tablestatus} when it exists; else the {@code tablestatus_<digits>} with the largest number; else
 * the plain file (a table without loads).
 *
 * <p>The schema is compact thrift; rather than decode it, the property is found as the map entry's bytes: the
 * key's length (13, one varint byte) and text, then the value's varint length and digits (a version is the
 * commit's epoch milliseconds). A column of that name is followed by its id, a uuid, so it names nothing; a
 * property naming no digits names no file either (the data source then reports the missing file).
 */
public final class LiveStatus {
    private static final long MAX_METADATA_BYTES = 64L << 20;  // a larger file is not planned against here
    private static final byte[] KEY = Names.STATUS_VERSION_PROPERTY.getBytes(StandardCharsets.US_ASCII);
    private static final int MAX_VERSION_CHARS = 64;
    private static final byte[] MISSING = new byte[0];

    /** The table's schema bytes, its live segment list file and that file's bytes (null: none readable). */
    record Metadata(byte[] schema, Path statusFile, byte[] status) {
        /** What a plan of the table depends on in its metadata, or null when either file cannot be read. */
        String state() {
            if (schema == null || status == null) {
                return null;
            }
            return PlanCache.digest(statusFile.getName().getBytes(StandardCharsets.UTF_8)) + "/"
                    + PlanCache.digest(status) + "/" + PlanCache.digest(schema);
        }
    }

    private LiveStatus() {
    }

    /** The path of the table's live segment list file (null when the schema cannot be read). */
    public static String path(Configuration conf, String table) {
        Metadata m = read(conf, table);
        return m == null ? null : m.statusFile().toString();
    }

    /** The table's metadata as a read now plans it, or null when it has no readable schema. */
    static Metadata read(Configuration conf, String table) {
        if (table == null) {
            return null;
        }
        Path dir = new Path(table, "Metadata");
        byte[] schema = bytes(conf, new Path(dir, "schema"));
        if (schema == null || schema == MISSING) {
            return null;
        }
        String named = namedVersion(schema);
        if (named != null) {
            Path file = new Path(dir, Names.STATUS_FILE + "_" + named);
            return new Metadata(schema, file, present(bytes(conf, file)));
        }
        Path plain = new Path(dir, Names.STATUS_FILE);
        byte[] status = bytes(conf, plain);
        if (status != MISSING) {
            return new Metadata(schema, plain, status);
        }
        String newest = newestVersion(conf, dir);
        if (newest == null) {
            return new Metadata(schema, plain, null);
        }
        Path file = new Path(dir, Names.STATUS_FILE + "_" + newest);
        return new Metadata(schema, file, present(bytes(conf, file)));
    }

    /** The version the schema's table properties name, or null when they name none (of several matches,
     * the last: the table properties follow the columns). */
    static String namedVersion(byte[] schema) {
        String found = null;
        for (int at = 1; at + KEY.length < schema.length; at++) {
            if (schema[at - 1] != KEY.length || !matches(schema, at)) {
                continue;
            }
            int length = schema[at + KEY.length] & 0xff;  // one varint byte: a value under 128 bytes
            int start = at + KEY.length + 1;
            if (length < 0x80 && length <= MAX_VERSION_CHARS && start + length <= schema.length) {
                String value = new String(schema, start, length, StandardCharsets.US_ASCII).strip();
                if (!value.isEmpty() && value.chars().allMatch(c -> c >= '0' && c <= '9')) {
                    found = value;
                }
            }
        }
        return found;
    }

    private static boolean matches(byte[] data, int at) {
        for (int i = 0; i < KEY.length; i++) {
            if (data[at + i] != KEY[i]) {
                return false;
            }
        }
        return true;
    }

    /** The largest number of the folder's {@code tablestatus_<digits>} files, or null when it has none. */
    private static String newestVersion(Configuration conf, Path dir) {
        String prefix = Names.STATUS_FILE + "_";
        long newest = -1;
        try {
            FileSystem fs = dir.getFileSystem(conf);
            for (FileStatus st : fs.listStatus(dir)) {
                String name = st.getPath().getName();
                String digits = name.startsWith(prefix) ? name.substring(prefix.length()) : "";
                if (!digits.isEmpty() && digits.chars().allMatch(c -> c >= '0' && c <= '9') && digits.length() < 19) {
                    newest = Math.max(newest, Long.parseLong(digits));
                }
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        return newest < 0 ? null : Long.toString(newest);
    }

    private static byte[] present(byte[] data) {
        return data == MISSING ? null : data;
    }

    /** The bytes of a small metadata file; {@link #MISSING} when there is no such file, null when it is too
     * large or cannot be read. */
    private static byte[] bytes(Configuration conf, Path file) {
        try {
            FileSystem fs = file.getFileSystem(conf);
            FileStatus st = fs.getFileStatus(file);
            if (st.getLen() > MAX_METADATA_BYTES) {
                return null;
            }
            try (InputStream in = fs.open(file)) {
                return in.readAllBytes();
            }
        } catch (FileNotFoundException e) {
            return MISSING;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
