"""Spark queries over carbondata relations that read only what they need, in sessions without the extension.

Where the carbon-ds extension's rules are on (a session started through ``carbon_ds.configure_spark``,
``carbon_ds.extension.enabled`` not ``false``), the extension is the one planner: ``run`` hands a query to
it in one JVM call (jvm/src PlannedQueries, planned at the call) and anything else to ``spark.sql`` as
written; ``optimize`` returns its DataFrame. No Python code walks a plan there. The rewrite below serves
only sessions without those rules (a session made without ``configure_spark`` and given to
``carbon_ds.register``, a driver without the jar, the rules switched off), which have no hook in Spark's
optimizer: from Python it can prune only the statements and DataFrames it is handed. It does there what
the rules do (columns, translated predicates, join sizes, small reads as local relations, mixed tables by
Spark's own scans) plus direct reads (carbon_ds.spark.python_rewrite.direct) in place of the rules' one planning call.

Spark pushes neither a projection nor (on PySpark 4.1-4.3, safely) a filter into a Python data source, so
``SELECT a FROM t WHERE b = 5`` over a carbondata view decodes every column of every row. Spark's
optimizer does know what each relation occurrence needs; carbon_ds.spark.python_rewrite.plan_walk reads that from the
optimized plan. Here every carbondata occurrence of the *analyzed* plan is replaced by a drop-in node:

    Project([Alias(fresh.col or NULL, name)(old exprId, ...) for each old column], fresh relation)

The fresh relation reads only the needed columns with the translated predicates as its ``filter``, so
the reader decodes only those columns of the blocklets and pages that can match: a
``spark.read.format("carbondata")`` load with that ``.schema`` and option, or (by default) the same
reader planned here and read through ``mapInArrow`` (carbon_ds.spark.python_rewrite.direct), a small read on the driver
(carbon_ds.spark.local). The node keeps the old output attributes,
so nothing above it changes, and Spark analyzes and optimizes the rewritten plan as usual.

Why the answer is the same: the optimized plan O is equivalent to the analyzed plan P for any contents
of the relations. O reads only the needed columns of each occurrence, and the occurrence's rows reach
nothing but the Filters the predicates come from (which Spark still evaluates). Replacing a relation by
"the rows where a weaker predicate holds, unneeded columns NULL" therefore leaves O's answer, hence P's,
unchanged. Every new relation is a fresh load: it shares no reader or partition list with any other
query, which is what keeps repeated queries on one view correct (see datasource.pushdown_is_safe).

What passes through unchanged (``rewrite`` returns None): commands other than INSERT ... SELECT into a
data source (DDL, CACHE, EXPLAIN, ...), plans that read cached data, statements with no carbondata
relation, and Spark Connect sessions (no JVM to ask).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import Any

from py4j.java_gateway import is_instance_of
from pyspark.sql.classic.dataframe import DataFrame
from pyspark.sql.types import StructType

from carbon_ds.errors import CarbonError
from carbon_ds.names import FILTER_OPTION, PRUNED_OPTION, ROW_POSITIONS_OPTION, SEGMENTS_OPTION, SOURCE, UNSCALED_OPTION
from carbon_ds.spark.bridge.extension import extension_active, extension_rules_on
from carbon_ds.spark.bridge.native_read import MixedPlan, mixed_of, union_frame
from carbon_ds.spark.local import CONF_LOCAL_BYTES, local_frame, local_limit
from carbon_ds.spark.python_rewrite.catalyst import field_kind, jvm_class, node_name, scala_object, to_list
from carbon_ds.spark.python_rewrite.direct import direct_enabled, direct_frame
from carbon_ds.spark.python_rewrite.plan_walk import Relation, assign, relations_of, scans_of
from carbon_ds.spark.python_rewrite.sizes import row_width, sized
from carbon_ds.table.meta.conform import has_unscaled_form
from carbon_ds.table.meta.options import WRITE_OPTIONS, parse_bool
from carbon_ds.table.read.pruning import as_expr
from carbon_ds.table.read.scan import arrow_schema_of, scan_estimate
from carbon_ds.table.read.scan import count as count_rows

__all__ = ["CONF_LOCAL_BYTES", "CONF_REWRITE", "CONF_STATISTICS", "RelationRead", "analyze", "optimize", "rewrite", "rewrite_enabled", "run"]

CONF_REWRITE = "carbon_ds.sql.rewrite"
"""Spark conf: ``false`` makes ``carbon_ds.sql`` pass queries to ``spark.sql`` unchanged."""
CONF_STATISTICS = "carbon_ds.sql.statistics"
"""Spark conf: ``true`` (the default) gives rewritten relations a size estimate for join planning
(carbon_ds.spark.python_rewrite.sizes), so Spark broadcasts small sides instead of shuffling the large one."""
# Write commands whose query may be rewritten: their target is a field, not a child, so it stays as is.
WRITE_ROOTS = frozenset({"AppendData", "OverwriteByExpression", "OverwritePartitionsDynamic",
                         "InsertIntoHadoopFsRelationCommand"})
# First keywords of the statements worth analyzing (anything else is a command: not rewritten).
QUERY_KEYWORDS = frozenset({"SELECT", "WITH", "INSERT", "FROM", "TABLE"})
_COMMAND = "org.apache.spark.sql.catalyst.plans.logical.Command"
# Cheapest columns to decode when rows must be read without any column (ties: the first column).
_EXPRESSIONS = "org.apache.spark.sql.catalyst.expressions."
_TYPES = "org.apache.spark.sql.types."
_CONVERTERS = "scala.jdk.javaapi.CollectionConverters"
_CHEAP = {"boolean": 0, "byte": 0, "short": 1, "integer": 2, "date": 2, "float": 2, "long": 3, "timestamp": 3,
          "double": 3}


@dataclass(frozen=True)
class RelationRead:
    """What a rewritten statement reads for one carbondata relation occurrence of its analyzed plan.

    ``columns`` are decoded (empty: only rows are counted, from the index files when there is no
    ``filter``); ``filter`` is the new relation's ``filter`` option (the original one AND the translated
    predicates). ``unchanged`` says why the occurrence keeps its original relation (None: replaced).
    """

    view: str | None
    path: str | None
    columns: tuple[str, ...]
    filter: str | None
    all_columns: tuple[str, ...]
    copies: int = 1  # optimized occurrences it serves (a CTE used twice: 2)
    untranslated: tuple[str, ...] = ()  # predicates above it left to Spark alone (Catalyst SQL)
    unchanged: str | None = None
    # an IN longer than catalyst.MAX_IN_VALUES above it: never a local relation, where Spark's optimizer
    # would match each row against the whole list, one value at a time (minutes for 10,000 strings)
    long_in: bool = False


@dataclass
class _Analysis:
    analyzed: Any
    root: str
    reason: str | None  # why the whole statement passes through (None: rewrite what `reads` says)
    relations: list[Relation]
    reads: list[RelationRead]
    nondeterministic: bool = False  # rand() and the like see rows in their data source partitions
    joins: bool = False  # a size estimate only matters to a join

    @property
    def replaces(self) -> bool:
        return self.reason is None and any(r.unchanged is None for r in self.reads)


# ----------------------------------------------------------------------------------------------- API


def rewrite_enabled(spark: Any) -> bool:
    """Whether ``carbon_ds.sql`` rewrites queries in this session (conf ``carbon_ds.sql.rewrite``)."""
    return parse_bool(spark.conf.get(CONF_REWRITE, "true"), f"spark conf {CONF_REWRITE}", True)


def is_query(text: str) -> bool:
    """Whether ``text`` starts (after comments and parentheses) like a query or INSERT ... SELECT."""
    rest = text.lstrip()
    while True:
        if rest.startswith("--"):
            rest = rest.partition("\n")[2].lstrip()
        elif rest.startswith("/*"):
            rest = rest.partition("*/")[2].lstrip()
        elif rest.startswith("("):
            rest = rest[1:].lstrip()
        else:
            break
    word = rest.split(None, 1)[0] if rest else ""
    return word.upper() in QUERY_KEYWORDS


def analyze(spark: Any, text: str) -> list[RelationRead]:
    """What ``rewrite(spark, text)`` would read for each carbondata relation occurrence. Nothing runs:
    an INSERT is analyzed, not executed. A statement that passes through gives []."""
    analysis = _analyze(spark, _query_execution(spark, text))
    return analysis.reads if analysis.reason is None else []


def rewrite(spark: Any, text: str) -> DataFrame | None:
    """``spark.sql(text)`` with every carbondata relation reading only what the statement needs, or None
    when the statement must pass through unchanged (see the module docstring) or the rewrite cannot be
    planned. An INSERT ... SELECT runs here, once, as ``spark.sql`` runs it; its errors are raised."""
    if not hasattr(spark, "_jsparkSession"):
        return None  # Spark Connect
    try:
        qe = _query_execution(spark, text)
        qe.assertAnalyzed()
    except Exception:  # noqa: BLE001 - the user's parse/analysis error: spark.sql(text) raises it as usual
        return None
    return _rewritten(spark, qe)


def run(spark: Any, text: str) -> DataFrame:
    """``spark.sql(text)``: where the extension's rules are on, planned by them at this call (a query) or as
    written (anything else); elsewhere rewritten here to read only what it needs when it is a query or
    INSERT ... SELECT over carbondata relations and the conf ``carbon_ds.sql.rewrite`` is not ``false``."""
    if is_query(text) and rewrite_enabled(spark):
        if extension_rules_on(spark):
            out = _planned_by_extension(spark, text)
        else:
            out = rewrite(spark, text)
        if out is not None:
            return out
    return spark.sql(text)


def _planned_by_extension(spark: Any, text: str) -> DataFrame | None:
    """The query planned by the extension's rules in one JVM call (jvm/src PlannedQueries), as of this call;
    None for a command, a write, a statement without carbondata relations or an error (spark.sql's then)."""
    if not hasattr(spark, "_jsparkSession"):
        return None  # Spark Connect: the server's extension plans what spark.sql sends
    try:
        planned = jvm_class(spark._jvm, "carbonds.spark.PlannedQueries").planned(spark._jsparkSession, text)
    except Exception:  # noqa: BLE001 - an older jar without the class: Spark plans the statement itself
        return None
    return None if planned is None else DataFrame(planned, spark)


def optimize(df: DataFrame) -> DataFrame:
    """An equivalent DataFrame whose carbondata relations read only the columns and rows ``df`` needs.

    For DataFrames built from carbondata loads with select/filter/join/aggregations:
    ``carbon_ds.optimize(spark.read.format("carbondata").load(p).where("b = 5").select("a"))`` decodes
    only ``a`` and ``b`` of the blocklets where b can be 5. ``df`` itself is returned when there is
    nothing to rewrite, on Spark Connect, and where the extension's rules are on (they plan ``df`` as it is).

    Example:
        >>> df = spark.read.format("carbondata").load(path)
        >>> fast = carbon_ds.optimize(df.where("speed > 100").select("vin"))   # reads vin and speed only
        >>> fast.count() == df.where("speed > 100").count()
        True
    """
    jdf = getattr(df, "_jdf", None)
    if jdf is None or extension_rules_on(df.sparkSession):
        return df  # Spark Connect, or the extension's rules prune every plan of the session
    out = _rewritten(df.sparkSession, jdf.queryExecution())
    return df if out is None else out


# ------------------------------------------------------------------------------------------ analysis


def _query_execution(spark: Any, text: str) -> Any:
    return _skip_mode(spark, spark._jsparkSession.sessionState().sqlParser().parsePlan(text))


def _skip_mode(spark: Any, plan: Any) -> Any:
    """Spark's QueryExecution of ``plan`` in SKIP mode: analyzed and optimized, commands never run."""
    skip = scala_object(spark._jvm, "org.apache.spark.sql.execution.CommandExecutionMode$").SKIP()
    return spark._jsparkSession.sessionState().executePlan(plan, skip)


def _optimized(spark: Any, qe: Any) -> Any:
    """Spark's optimized plan of ``qe``; with the Spark extension on, as Spark's own rules alone make it (its
    local reads, integer decimals and unions would hide the relations matched below)."""
    if extension_active(spark):
        return jvm_class(spark._jvm, "carbonds.spark.PruneCarbonRelations").optimizedWithoutRules(qe)
    return qe.optimizedPlan()


def _analyze(spark: Any, qe: Any) -> _Analysis:
    analyzed = qe.analyzed()
    root = node_name(analyzed)
    out = _Analysis(analyzed, root, None, [], [])
    if root not in WRITE_ROOTS and is_instance_of(spark._sc._gateway, analyzed, _COMMAND):
        out.reason = f"command {root}"
        return out
    out.relations = relations_of(spark._jvm, analyzed)
    if not out.relations:
        out.reason = "no carbondata relation"
        return out
    walk = scans_of(_optimized(spark, qe))
    if walk.cached:
        # the cache matches the original relations only: a rewrite would read the table again
        out.reason = "the plan reads cached data"
        return out
    if assign(spark._jvm, out.relations, walk.scans):
        out.reason = "an optimized relation matches no relation of the analyzed plan"
        return out
    out.nondeterministic, out.joins = walk.nondeterministic, walk.joins
    out.reads = [_decide(r, walk.nondeterministic) for r in out.relations]
    return out


def _decide(rel: Relation, nondeterministic: bool) -> RelationRead:
    """The columns and filter of the relation that replaces ``rel``."""
    base = RelationRead(rel.view, rel.path, tuple(rel.names), rel.options.get(FILTER_OPTION), tuple(rel.names),
                        copies=len(rel.scans), untranslated=tuple(t for s in rel.scans for t in s.untranslated))
    if not rel.scans and not rel.any_ambiguous:
        return _unchanged(base, "not read by the optimized plan")
    if rel.path is None:
        return _unchanged(base, "not one table path")
    if rel.options.get(ROW_POSITIONS_OPTION, "false").strip().lower() != "false":
        return _unchanged(base, "a with_row_positions relation (DELETE/UPDATE)")
    needed = set(rel.ambiguous).union(*(s.needed for s in rel.scans))
    # an unneeded column becomes NULL, which a non-nullable attribute must never be
    needed |= {f["name"].lower() for f in rel.fields if not f["nullable"]}
    columns = [n for n in rel.names if n.lower() in needed]
    predicate = None
    if not nondeterministic and not rel.any_ambiguous:
        predicate = _predicate(rel)
    original = rel.options.get(FILTER_OPTION) or None
    text = f"({original}) AND ({predicate})" if original and predicate else original or predicate
    if not columns and nondeterministic:
        # a rows-only read is planned as one partition; rand() and the like must see the same partitions
        columns = [min(rel.names, key=lambda n: (_CHEAP.get(_kind(rel, n), 9), rel.names.index(n)))]
    return RelationRead(rel.view, rel.path, tuple(columns), text, tuple(rel.names), len(rel.scans),
                        base.untranslated, long_in=any(s.long_in for s in rel.scans))


def _unchanged(read: RelationRead, why: str) -> RelationRead:
    return RelationRead(read.view, read.path, read.all_columns, read.filter, read.all_columns, read.copies,
                        read.untranslated, why)


def _kind(rel: Relation, name: str) -> str:
    return field_kind(rel.fields[rel.names.index(name)]) or ""


def _predicate(rel: Relation) -> str | None:
    """OR over the optimized occurrences of the AND of each one's predicates; None when one of them
    has none (it reads every row). Predicates the carbondata parser refuses are dropped: they only prune."""
    schema = arrow_schema_of(rel.path)
    alternatives: list[str] = []
    for scan in rel.scans:
        kept = [p for p in scan.predicates if _accepted(p, schema)]
        if not kept:
            return None
        text = " AND ".join(kept)
        if text not in alternatives:
            alternatives.append(text)
    if not alternatives:
        return None
    return alternatives[0] if len(alternatives) == 1 else " OR ".join(f"({a})" for a in alternatives)


def _accepted(predicate: str, schema: Any) -> bool:
    try:
        as_expr(predicate, schema)
    except CarbonError:
        return False
    return True


# ------------------------------------------------------------------------------------------ rewriting


def _rewritten(spark: Any, qe: Any) -> DataFrame | None:
    try:
        analysis = _analyze(spark, qe)
        if not analysis.replaces:
            return None
        plan = _replace(spark, analysis)
        if analysis.root not in WRITE_ROOTS:
            return _dataframe(spark, plan)  # analyzed only: a query runs when an action asks
        # a write runs inside Dataset.ofRows: prove the plan analyzes before anything is written
        _skip_mode(spark, plan).assertAnalyzed()
    except Exception as e:  # noqa: BLE001 - the unchanged statement is always right
        warnings.warn(f"carbon_ds: query not rewritten ({type(e).__name__}: {str(e)[:300]})", stacklevel=3)
        return None
    return _dataframe(spark, plan)  # runs the write; its errors are the write's, never retried


def _replace(spark: Any, analysis: _Analysis) -> Any:
    """The analyzed plan with each replaced relation swapped for its drop-in node (subqueries too)."""
    jvm = spark._jvm
    mapping = jvm_class(jvm, "java.util.HashMap")()
    for rel, read in zip(analysis.relations, analysis.reads, strict=True):
        if read.unchanged is None:
            mapping.put(rel.node, _drop_in(spark, rel, read, analysis.nondeterministic, analysis.joins))
    # a Scala Map is a PartialFunction from the old nodes to the new ones
    return analysis.analyzed.transformUpWithSubqueries(jvm_class(jvm, _CONVERTERS).asScala(mapping))


def _fresh(spark: Any, rel: Relation, read: RelationRead, keep_partitions: bool = False, joins: bool = True
           ) -> tuple[Any, dict[str, tuple[int, int]]]:
    """The plan of a new relation over ``read.path`` declaring ``read.columns`` with the types and
    nullability of ``rel``'s attributes (a user schema of other types is kept), sized for Spark's join
    planning (carbon_ds.spark.python_rewrite.sizes) where this Spark allows it; and the columns it delivers as unscaled
    decimals ({lower-case name: (precision, scale)}), which the drop-in node turns back into decimals."""
    by_name = {f["name"].lower(): f for f in rel.fields}
    fields = [{**by_name[c.lower()], "metadata": {}} for c in read.columns]
    segments = rel.options.get(SEGMENTS_OPTION)
    sizing = joins and str(spark.conf.get(CONF_STATISTICS, "true")).strip().lower() == "true"
    # a local relation has other partitions: a non-deterministic expression would see other rows together
    try_local = not keep_partitions and not read.long_in and local_limit(spark) > 0
    mixed = mixed_of(spark, read.path, segments)
    native = mixed is not None and _table_columns(read, fields)
    if native and try_local:
        # estimating a mixed read opens every external file's footer: only worth it when even all of the
        # external bytes, scaled to the columns read, would make a local relation
        external = sum(sum(sizes) for _ref, _paths, sizes in mixed.external)
        try_local = external * row_width(fields) // max(1, row_width(rel.fields)) <= local_limit(spark)
    # the stored bytes and rows the pruned read touches, read once for both decisions
    wanted = try_local or sizing and not native
    estimate = scan_estimate(read.path, read.filter, segments) if read.columns and wanted else (0, 0)
    local = _local(spark, rel, read, fields, estimate) if try_local else None
    if local is not None:
        return local, {}
    if native:
        return _native(spark, rel, read, fields, mixed, sizing), {}
    unscaled = _unscaled(read.path, fields)
    declared = StructType.fromJson({"type": "struct", "fields": [
        {**f, "type": "long"} if f["name"].lower() in unscaled else f for f in fields]})
    options = {k: v for k, v in rel.options.items() if k not in ("path", "paths", FILTER_OPTION)}
    # final for the Spark extension's rule (jvm/src), which would otherwise prune it once more
    options[PRUNED_OPTION] = "true"
    if read.filter:
        options[FILTER_OPTION] = read.filter
    if unscaled:
        options[UNSCALED_OPTION] = ",".join(f["name"] for f in fields if f["name"].lower() in unscaled)
    frame = direct_frame(spark, read.path, declared, options) if direct_enabled(spark) else None
    if frame is None:
        frame = spark.read.format(SOURCE).schema(declared).options(**options).load(read.path)
    jdf = frame._jdf
    # sizing plans the relation now (its partitions): worth it only where Spark chooses a join strategy
    if not sizing:
        return jdf.queryExecution().analyzed(), unscaled
    try:
        # the size Spark would estimate for the same columns in Parquet, so it can broadcast small sides
        node = sized(spark, jdf, estimate[0] * row_width(fields) // max(1, row_width(rel.fields)))
    except Exception:  # noqa: BLE001 - without an estimate the relation is planned as before
        node = None
    return (node if node is not None else jdf.queryExecution().analyzed()), unscaled


def _table_columns(read: RelationRead, fields: list[dict[str, Any]]) -> bool:
    """Whether every declared column is a table column (a user schema may declare others)."""
    names = {f.name.lower() for f in arrow_schema_of(read.path)}
    return all(f["name"].lower() in names for f in fields)


def _native(spark: Any, rel: Relation, read: RelationRead, fields: list[dict[str, Any]], mixed: MixedPlan,
            sizing: bool) -> Any:
    """The plan of the native union (carbon_ds.spark.bridge.native_read) of a mixed table: Spark's own scans of
    the external files, unioned with the carbondata segments read as usual (``read.filter`` prunes them).
    The external scans get no filter text: the query's own Filter above the drop-in node reaches them
    through Spark's optimizer (pushed filters, literal partition columns folded), with Spark's semantics.
    Spark sizes its scans itself; the carbondata part gets the estimate of its own segments."""
    declared = StructType.fromJson({"type": "struct", "fields": fields})
    options = {k: v for k, v in rel.options.items() if k not in ("path", "paths", FILTER_OPTION, SEGMENTS_OPTION)}
    options[PRUNED_OPTION] = "true"
    if read.filter:
        options[FILTER_OPTION] = read.filter

    def carbon_part(struct: StructType, ids: str) -> DataFrame:
        if not struct.fields and not read.filter:
            # rows only (count(*)): the carbondata segments' count from their index files, here
            return spark.range(0, count_rows(read.path, None, ids), 1, 1).select()
        opts = {**options, SEGMENTS_OPTION: ids}
        frame = direct_frame(spark, read.path, struct, opts) if direct_enabled(spark) else None
        if frame is None:
            frame = spark.read.format(SOURCE).schema(struct).options(**opts).load(read.path)
        if not sizing:
            return frame
        try:
            size = scan_estimate(read.path, read.filter, ids)[0] if struct.fields else 0
            node = sized(spark, frame._jdf, size * row_width(fields) // max(1, row_width(rel.fields)))
        except Exception:  # noqa: BLE001 - without an estimate the part is planned as before
            node = None
        return frame if node is None else _dataframe(spark, node)

    return union_frame(spark, mixed, declared, carbon_part)._jdf.queryExecution().analyzed()


def _unscaled(path: str, fields: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """The declared decimal columns of at most 18 digits whose declared type is the table's own: Spark
    converts Arrow decimals to its own value by value through Java's BigDecimal, while an unscaled bigint
    rebuilt by MakeDecimal costs about what a bigint does (TPC-H lineitem's four decimals: see docs/sql.md)."""
    table_types = {f.name.lower(): f.type for f in arrow_schema_of(path)}
    out = {}
    for f in fields:
        t = table_types.get(f["name"].lower())
        if has_unscaled_form(t) and f["type"] == f"decimal({t.precision},{t.scale})":
            out[f["name"].lower()] = (t.precision, t.scale)
    return out


def _local(spark: Any, rel: Relation, read: RelationRead, fields: list[dict[str, Any]],
           estimate: tuple[int, int | None]) -> Any:
    """The plan of a local relation holding ``read``'s rows, read here on the driver, when the read is
    small enough (carbon_ds.spark.local); None to read it through the data source as usual."""
    # a catalog table's relation also carries its table properties (write options), which change no read
    if set(rel.options) - {"path", "paths", FILTER_OPTION, SEGMENTS_OPTION, *WRITE_OPTIONS}:
        return None
    df = local_frame(spark, read.path, fields, list(read.columns), read.filter, rel.options.get(SEGMENTS_OPTION),
                     rel.fields, estimate)
    return None if df is None else df._jdf.queryExecution().analyzed()


def _drop_in(spark: Any, rel: Relation, read: RelationRead, keep_partitions: bool = False,
             joins: bool = True) -> Any:
    """Project over the fresh relation with exactly ``rel``'s output attributes (same exprIds)."""
    jvm = spark._jvm
    alias, literal, some = (jvm_class(jvm, _EXPRESSIONS + "Alias"), jvm_class(jvm, _EXPRESSIONS + "Literal"),
                            jvm_class(jvm, "scala.Some"))
    fresh, unscaled = _fresh(spark, rel, read, keep_partitions, joins)
    # the fresh relation's output is the declared schema: read.columns in order
    by_name = {c.lower(): a for c, a in zip(read.columns, to_list(fresh.output()), strict=True)}
    nil = scala_object(jvm, "scala.collection.immutable.Nil$")
    items = jvm_class(jvm, "java.util.ArrayList")()
    values = []
    make_decimal = jvm_class(jvm, _EXPRESSIONS + "MakeDecimal") if unscaled else None
    for name in rel.names:
        value = by_name.get(name.lower())
        if value is not None and name.lower() in unscaled:
            precision, scale = unscaled[name.lower()]
            value = make_decimal(value, precision, scale, True)
        values.append(value)
    first = rel.node.output().head()
    if first.qualifier().isEmpty():
        # A relation's attributes carry no qualifier, and their exprIds, types and metadata are known
        # from the walk: about three JVM calls a column instead of nine (a 16-column table costs ~0.05 s).
        jvm_id, none = first.exprId().jvmId(), scala_object(jvm, "scala.None$")
        data_type, metadata = jvm_class(jvm, _TYPES + "DataType"), jvm_class(jvm, _TYPES + "Metadata")
        expr_id = jvm_class(jvm, _EXPRESSIONS + "ExprId")
        nulls: dict[str, Any] = {}
        for name, i, f, value in zip(rel.names, rel.ids, rel.fields, values, strict=True):
            if value is None:
                key = json.dumps(f["type"])
                value = nulls.get(key)
                if value is None:
                    value = nulls[key] = literal.create(None, data_type.fromJson(key))
            meta = some(metadata.fromJson(json.dumps(f["metadata"]))) if f.get("metadata") else none
            items.add(alias(value, name, expr_id(i, jvm_id), nil, meta, nil))
    else:
        for name, old, value in zip(rel.names, to_list(rel.node.output()), values, strict=True):
            if value is None:
                value = literal.create(None, old.dataType())
            items.add(alias(value, name, old.exprId(), old.qualifier(), some(old.metadata()), nil))
    project_list = jvm_class(jvm, _CONVERTERS).asScala(items).toSeq()
    return jvm_class(jvm, "org.apache.spark.sql.catalyst.plans.logical.Project")(project_list, fresh)


def _dataframe(spark: Any, plan: Any) -> DataFrame:
    jdf = jvm_class(spark._jvm, "org.apache.spark.sql.classic.Dataset").ofRows(spark._jsparkSession, plan)
    return DataFrame(jdf, spark)
