// Test-only: rows of a CarbonData table folder (Metadata/schema, tablestatus, segments) read the way
// CarbonData's engines read a table: CarbonTableInputFormat plans the splits from the table status (valid
// segments only, index pruning with the filter), and each split's record reader applies delete deltas and the
// filter. The same reader the SDK uses for a bare folder (CarbonFileInputFormat) ignores all of that.

import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;

import org.apache.carbondata.core.index.IndexFilter;
import org.apache.carbondata.core.metadata.AbsoluteTableIdentifier;
import org.apache.carbondata.core.metadata.schema.SchemaReader;
import org.apache.carbondata.core.metadata.schema.table.CarbonTable;
import org.apache.carbondata.core.scan.expression.Expression;
import org.apache.carbondata.hadoop.CarbonProjection;
import org.apache.carbondata.hadoop.api.CarbonInputFormat;
import org.apache.carbondata.hadoop.api.CarbonTableInputFormat;

final class TableRows {
  private TableRows() {
  }

  static List<Object[]> read(String path, String[] projection, Expression filter) throws Exception {
    String name = Paths.get(path).getFileName().toString();
    Job job = Job.getInstance(new JobConf(new Configuration()));
    Configuration conf = job.getConfiguration();
    conf.set("query.id", UUID.randomUUID().toString());
    AbsoluteTableIdentifier id = AbsoluteTableIdentifier.from(path, "default", name);
    CarbonTable table = SchemaReader.readCarbonTableFromStore(id);
    CarbonInputFormat.setTableInfo(conf, table.getTableInfo());
    CarbonInputFormat.setDatabaseName(conf, "default");
    CarbonInputFormat.setTableName(conf, name);
    CarbonInputFormat.setTablePath(conf, path);
    FileInputFormat.addInputPath(job, new Path(path));
    if (projection != null) {
      CarbonProjection p = new CarbonProjection();
      for (String c : projection) {
        p.addColumn(c);
      }
      CarbonInputFormat.setColumnProjection(conf, p);
    }
    if (filter != null) {
      CarbonInputFormat.setFilterPredicates(conf, new IndexFilter(table, filter));
    }
    CarbonTableInputFormat<Object[]> format = new CarbonTableInputFormat<>();
    List<Object[]> rows = new ArrayList<>();
    for (InputSplit split : format.getSplits(job)) {
      TaskAttemptContextImpl context = new TaskAttemptContextImpl(conf, new TaskAttemptID());
      RecordReader<Void, Object[]> reader = format.createRecordReader(split, context);
      try {
        reader.initialize(split, context);
        while (reader.nextKeyValue()) {
          rows.add(reader.getCurrentValue());
        }
      } finally {
        reader.close();
      }
    }
    return rows;
  }
}
