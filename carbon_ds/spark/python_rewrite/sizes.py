"""Sizes Spark can plan joins with.

A Python data source reports no statistics (PySpark's scan does not implement SupportsReportStatistics), so
Spark sizes every carbondata relation at ``spark.sql.defaultSizeInBytes`` (Long.MaxValue) and never
broadcasts one in a join, however small: every join becomes a sort-merge join with two shuffles.

``sized`` puts a fresh relation behind a ``LogicalRDD`` leaf carrying an estimate made the way Spark
sizes a Parquet relation: stored bytes (here only those of the blocklets the relation's filter keeps)
times the share of the declared columns in the row width (Spark's default widths per type). Spark then
broadcasts it, or a small join built from it, where it would broadcast the same data in Parquet. The
rows are those of the relation's own physical plan, so results cannot change; only the join strategy does.
"""

from __future__ import annotations

from typing import Any

from carbon_ds.spark.python_rewrite.catalyst import jvm_class, scala_object

__all__ = ["row_width", "sized"]

# Spark's DataType.defaultSize per type key; decimals are 8 bytes up to 18 digits, else 16.
_WIDTH = {"boolean": 1, "byte": 1, "short": 2, "integer": 4, "long": 8, "float": 4, "double": 8, "date": 4,
          "timestamp": 8, "timestamp_ntz": 8, "string": 20, "binary": 100}
_ROW_OVERHEAD = 8  # EstimationUtils.getSizePerRow adds 8 bytes per row


def _width(kind: Any) -> int:
    if not isinstance(kind, str):
        return 20  # nested: no estimate that matters here
    if kind.startswith("decimal"):
        precision = int(kind[len("decimal(") :].split(",")[0]) if "(" in kind else 10
        return 8 if precision <= 18 else 16
    return _WIDTH.get(kind.split(" ")[0], 20)


def row_width(fields: list[dict[str, Any]]) -> int:
    """Spark's estimated bytes per row of StructType JSON fields."""
    return _ROW_OVERHEAD + sum(_width(f["type"]) for f in fields)


def sized(spark: Any, jdf: Any, size_in_bytes: int) -> Any:
    """A LogicalRDD leaf over ``jdf``'s physical plan that tells Spark it holds ``size_in_bytes``, or None
    when this Spark's LogicalRDD cannot be built as expected (the caller keeps the plain relation).

    The constructor is found by reflection and filled by parameter type, since its arity changes between
    Spark releases (output, rdd, partitioning, ordering, isStreaming, stream, session, stats, constraints...).
    """
    jvm = spark._jvm
    qe = jdf.queryExecution()
    executed = qe.executedPlan()
    logical = jvm_class(jvm, "java.lang.Class").forName("org.apache.spark.sql.execution.LogicalRDD")
    constructors = list(logical.getConstructors())
    if len(constructors) != 1:
        return None
    ctor = constructors[0]
    # Type.toString: "boolean", "class org.apache...Partitioning", "scala.Option<...Statistics>"
    types = [str(t.toString()).removeprefix("class ").removeprefix("interface ")
             for t in ctor.getGenericParameterTypes()]
    # py4j hands a Scala BigInt back as a Python int, so Statistics cannot be built from here directly:
    # Spark's own V2 conversion builds it from a long (no size or row count in _Unknown: the long is used)
    relation = scala_object(jvm, "org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation$")
    stats = relation.transformV2Stats(_Unknown(jvm), max(1, int(size_in_bytes)),
                                      scala_object(jvm, "scala.collection.immutable.Nil$"))
    none = scala_object(jvm, "scala.None$")
    nil = scala_object(jvm, "scala.collection.immutable.Nil$")
    args = jvm_class(jvm, "java.util.ArrayList")()
    seqs = 0
    for t in types:
        if t.startswith("scala.collection.immutable.Seq"):
            args.add(executed.output() if seqs == 0 else nil)  # output, then ordering
            seqs += 1
        elif t.startswith("org.apache.spark.rdd.RDD"):
            args.add(qe.toRdd())
        elif t.endswith("Partitioning"):
            args.add(jvm_class(jvm, "org.apache.spark.sql.catalyst.plans.physical.UnknownPartitioning")(0))
        elif t == "boolean":
            args.add(False)  # not streaming, not a checkpoint
        elif t.endswith("SparkSession"):
            args.add(spark._jsparkSession)
        elif t == "scala.Option<org.apache.spark.sql.catalyst.plans.logical.Statistics>":
            args.add(jvm_class(jvm, "scala.Some")(stats))
        elif t.startswith("scala.Option"):
            args.add(none)
        else:
            return None
    return ctor.newInstance(args.toArray())


class _Unknown:
    """A connector ``Statistics`` that knows nothing (called back once, while the estimate is built)."""

    def __init__(self, jvm: Any):
        self._jvm = jvm

    def sizeInBytes(self) -> Any:  # noqa: N802 - Java's name
        return self._jvm.java.util.OptionalLong.empty()

    def numRows(self) -> Any:  # noqa: N802 - Java's name
        return self._jvm.java.util.OptionalLong.empty()

    def columnStats(self) -> Any:  # noqa: N802 - Java's name
        return self._jvm.java.util.HashMap()

    class Java:
        implements = ["org.apache.spark.sql.connector.read.Statistics"]
