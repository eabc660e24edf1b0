// Test-only: rows of a CarbonData table folder (Metadata/schema, tablestatus, segments) read the way
// CarbonData's engines read a table: CarbonTableInputFormat plans the splits from the table status (valid
// segments only, index pruning with the filter), and each split's record reader applies delete deltas and the
// filter. The same reader the SDK uses for a bare folder (CarbonFileInputFormat) ignores all of that.

import java.nio.file.Paths;
import java.sql.Date;
import java.text.SimpleDateFormat;
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

import org.apache.carbondata.core.constants.CarbonCommonConstants;
import org.apache.carbondata.core.index.IndexFilter;
import org.apache.carbondata.core.keygenerator.directdictionary.timestamp.DateDirectDictionaryGenerator;
import org.apache.carbondata.core.metadata.AbsoluteTableIdentifier;
import org.apache.carbondata.core.metadata.datatype.DataType;
import org.apache.carbondata.core.metadata.datatype.DataTypes;
import org.apache.carbondata.core.metadata.schema.SchemaReader;
import org.apache.carbondata.core.metadata.schema.table.CarbonTable;
import org.apache.carbondata.core.scan.expression.Expression;
import org.apache.carbondata.core.scan.model.ProjectionDimension;
import org.apache.carbondata.core.scan.model.QueryModel;
import org.apache.carbondata.core.util.CarbonProperties;
import org.apache.carbondata.hadoop.CarbonProjection;
import org.apache.carbondata.hadoop.api.CarbonInputFormat;
import org.apache.carbondata.hadoop.api.CarbonTableInputFormat;
import org.apache.carbondata.hadoop.util.CarbonVectorizedRecordReader;

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
      // the reader CarbonReader picks (CarbonReaderBuilder.getRecordReader): the vector reader unless a complex
      // column is projected; the row reader returns null for no-dictionary primitive dimensions
      QueryModel model = format.createQueryModel(split, context);
      boolean complex = false;
      for (ProjectionDimension d : model.getProjectionDimensions()) {
        complex |= d.getDimension().isComplex();
      }
      RecordReader<Void, ?> reader;
      if (complex) {
        reader = format.createRecordReader(split, context);
      } else {
        model.setDirectVectorFill(filter == null);
        reader = new CarbonVectorizedRecordReader(model);
      }
      try {
        reader.initialize(split, context);
        while (reader.nextKeyValue()) {
          rows.add(formatted((Object[]) reader.getCurrentValue(), model));
        }
      } finally {
        reader.close();
      }
    }
    return rows;
  }

  /** Top-level DATE and TIMESTAMP values as CarbonReader.formatDateAndTimeStamp gives them: text in the
   * configured formats (a DATE arrives as days, a TIMESTAMP as microseconds). */
  static Object[] formatted(Object[] row, QueryModel model) {
    CarbonProperties props = CarbonProperties.getInstance();
    SimpleDateFormat date = new SimpleDateFormat(props.getProperty(CarbonCommonConstants.CARBON_DATE_FORMAT,
        CarbonCommonConstants.CARBON_DATE_DEFAULT_FORMAT));
    SimpleDateFormat time = new SimpleDateFormat(props.getProperty(CarbonCommonConstants.CARBON_TIMESTAMP_FORMAT,
        CarbonCommonConstants.CARBON_TIMESTAMP_DEFAULT_FORMAT));
    for (ProjectionDimension d : model.getProjectionDimensions()) {
      Object v = row[d.getOrdinal()];
      DataType type = d.getDimension().getDataType();
      if (v instanceof Integer && type == DataTypes.DATE) {
        row[d.getOrdinal()] = date.format(new Date(DateDirectDictionaryGenerator.MILLIS_PER_DAY * (int) v));
      } else if (v instanceof Long && type == DataTypes.TIMESTAMP) {
        row[d.getOrdinal()] = time.format(new Date((long) v / 1000));
      }
    }
    return row;
  }
}
