package carbonds.spark;

import java.util.List;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Statistics;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.execution.command.RunnableCommand;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

import scala.Enumeration;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A carbon-ds statement as a Spark command: {@code spark.sql} runs it once, eagerly, through the Python
 * runner ({@link FrontDoor}), and its rows are the statement's result. Its output columns are the schema the
 * runner gave when it claimed the statement. Being a command matters beyond classic sessions: Spark Connect
 * runs a command once and hands its rows to the client, where a relation would run again on every action.
 *
 * <p>Written against Scala's traits by hand (javac cannot extend Spark's leaf command case classes): the
 * members the traits give a Scala class (no children, produced attributes, dummy statistics) are spelled out.
 */
public final class CarbonStatement extends LogicalPlan implements RunnableCommand {
    private static final long serialVersionUID = 1L;
    private final String text;
    private final String schemaJson;
    private final Seq<Attribute> output;
    private Seq<Enumeration.Value> nodePatterns;

    public CarbonStatement(String text, String schemaJson) {
        this.text = text;
        this.schemaJson = schemaJson;
        @SuppressWarnings("unchecked")
        Seq<Attribute> attrs = (Seq<Attribute>) (Seq<?>) DataTypeUtils.toAttributes(
                (StructType) DataType.fromJson(schemaJson));
        this.output = attrs;
        Command.$init$(this);
        RunnableCommand.$init$(this);
    }

    String text() {
        return text;
    }

    @Override
    public Seq<Row> run(SparkSession session) {
        List<Row> rows = FrontDoor.run(session, text);
        return CollectionConverters.asScala(rows).toSeq();
    }

    @Override
    public Seq<Attribute> output() {
        return output;
    }

    @Override
    public Seq<LogicalPlan> children() {
        return CollectionConverters.asScala(List.<LogicalPlan>of()).toSeq();
    }

    @Override
    public AttributeSet producedAttributes() {
        return outputSet();
    }

    @Override
    public Statistics stats() {
        return Statistics.DUMMY();
    }

    @Override
    public Seq<Enumeration.Value> nodePatterns() {
        return nodePatterns;
    }

    @Override
    public void org$apache$spark$sql$catalyst$plans$logical$Command$_setter_$nodePatterns_$eq(
            Seq<Enumeration.Value> patterns) {
        this.nodePatterns = patterns;
    }

    @Override
    public LogicalPlan withNewChildrenInternal(IndexedSeq<LogicalPlan> children) {
        return this;  // a leaf
    }

    // Product: a copy (makeCopy) rebuilds the command from its text and schema
    @Override
    public int productArity() {
        return 2;
    }

    @Override
    public Object productElement(int n) {
        return n == 0 ? text : schemaJson;
    }

    @Override
    public boolean canEqual(Object other) {
        return other instanceof CarbonStatement;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof CarbonStatement s && s.text.equals(text) && s.schemaJson.equals(schemaJson);
    }

    @Override
    public int hashCode() {
        return text.hashCode() * 31 + schemaJson.hashCode();
    }

    @Override
    public String productPrefix() {
        return "CarbonStatement";
    }

    @Override
    public String simpleString(int maxFields) {
        return "CarbonStatement " + text.strip().replaceAll("\\s+", " ");
    }
}
