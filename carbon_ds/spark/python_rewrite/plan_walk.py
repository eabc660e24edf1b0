"""Reading Spark's Catalyst plans: which carbondata relations a query reads, which of their columns it
needs, and which of its predicates the carbondata ``filter`` option can carry.

Spark hands a Python data source neither the columns nor the rows a query needs (see
carbon_ds.spark.source.datasource), but Spark's own optimizer works both out: in the optimized plan every
relation occurrence is read only through the attributes some node references, and the rows it keeps pass
through the ``Filter`` nodes right above it. This module reads that from the JVM through py4j (classic
PySpark only) so that carbon_ds.spark.python_rewrite.query can put in relations that read only that.

Two plans are walked. The *optimized* plan says what is needed (``scans_of``); the *analyzed* plan is
what gets rewritten (``relations_of``), because rewriting it keeps every statement intact (an INSERT's
target, views, subqueries) and lets Spark optimize the result again. ``assign`` connects the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from carbon_ds.spark.python_rewrite.catalyst import (
    Column,
    FilterTranslator,
    attributes,
    carbon_relation,
    conjuncts,
    field_kind,
    fields_of,
    node_name,
    relation_options,
    single_path,
    to_list,
)

# Nodes whose output is child attributes passed through by exprId plus attributes computed from their
# expressions, so ``node.references()`` is all they read from their children. Any other node (Union,
# CTE definitions, writes, Python UDF nodes, anything new) is taken to read every column of every child.
PASS_BY_ID = frozenset({
    "Project", "Filter", "Aggregate", "Join", "Sort", "GlobalLimit", "LocalLimit", "Offset", "Tail",
    "Window", "WindowGroupLimit", "Generate", "Expand", "Sample", "Deduplicate", "RepartitionByExpression",
    "Repartition", "RebalancePartitions", "SubqueryAlias", "View", "ResolvedHint", "Subquery",
})
# Nodes between a scan and a Filter above it that keep the scan's rows as they are (a Limit or a Sample
# does not: filtering before it changes which rows it keeps).
ROW_PRESERVING = frozenset({
    "RepartitionByExpression", "Repartition", "RebalancePartitions", "ResolvedHint", "SubqueryAlias", "View",
    "Sort",
})

# -------------------------------------------------------------------------------------- the two walks


@dataclass
class Scan:
    """A carbondata relation occurrence of the optimized plan: what is read of it."""

    relation: Any  # its DataSourceV2Relation
    names: list[str]  # output column names, in order
    ids: list[int]  # their exprIds
    needed: set[str] = field(default_factory=set)  # lower-case names some node reads
    predicates: list[str] = field(default_factory=list)  # translated conjuncts of the Filters above (AND)
    untranslated: list[str] = field(default_factory=list)  # Catalyst SQL of the conjuncts left to Spark
    long_in: bool = False  # a Filter above holds an IN longer than catalyst.MAX_IN_VALUES


@dataclass
class Relation:
    """A carbondata relation occurrence of the analyzed plan: what gets replaced."""

    node: Any  # the DataSourceV2Relation
    names: list[str]  # output column names, in order
    ids: list[int]  # their exprIds
    fields: list[dict[str, Any]]  # their StructType JSON fields (type, nullable)
    view: str | None  # the view or alias it was reached through, for messages
    options: dict[str, str]
    scans: list[Scan] = field(default_factory=list)  # optimized occurrences that read it
    ambiguous: set[str] = field(default_factory=set)  # columns of copies that could be another occurrence
    any_ambiguous: bool = False

    @property
    def path(self) -> str | None:
        return single_path(self.options)


def relations_of(jvm: Any, analyzed: Any) -> list[Relation]:
    """Every carbondata relation of an analyzed plan, subquery plans included (an INSERT's target is not
    a child of the write node, so it is never among them). Equal occurrences (same exprIds) are one
    Relation: a rewrite replaces nodes by equality, so they can only be replaced together."""
    found: list[Relation] = []
    stack: list[tuple[Any, str | None]] = [(analyzed, None)]
    while stack:
        node, view = stack.pop()
        kind = node_name(node)
        rel = carbon_relation(node, kind)
        if rel is not None:
            if any(r.node.equals(rel) for r in found):
                continue
            output = attributes(rel.output())
            found.append(Relation(rel, [n for n, _i in output], [i for _n, i in output], fields_of(rel), view,
                                  relation_options(jvm, rel)))
            continue
        if kind == "View":
            view = str(node.desc().identifier().table())
        elif kind == "SubqueryAlias" and view is None:
            view = str(node.alias())
        stack.extend((child, view) for child in to_list(node.children()))
        stack.extend((sub, view) for sub in to_list(node.subqueries()))
    return found


@dataclass
class Walk:
    scans: list[Scan]
    cached: bool  # the plan reads cached data (an InMemoryRelation)
    nondeterministic: bool  # some expression's value depends on which rows reach it (rand(), ...)
    joins: bool = False  # the plan joins (only then does the size of a relation matter to Spark)


def scans_of(optimized: Any) -> Walk:
    """The carbondata occurrences of an optimized plan with their needed columns and filter text."""
    referenced: set[int] = set()
    found: list[tuple[Any, Any, list[Any]]] = []  # (scan node, relation, ancestors nearest first)
    cached = nondeterministic = joins = False
    stack: list[tuple[Any, list[Any], bool]] = [(optimized, [], True)]
    while stack:
        node, ancestors, is_root = stack.pop()
        kind = node_name(node)
        cached |= kind == "InMemoryRelation"
        joins |= kind == "Join"
        rel = carbon_relation(node, kind)
        if rel is not None:
            found.append((node, rel, ancestors))
            if is_root:
                referenced.update(i for _n, i in attributes(node.output()))
            continue
        # QueryPlan.deterministic covers the node's expressions and its children's (one call, cached)
        nondeterministic = nondeterministic or not node.deterministic()
        referenced.update(i for _n, i in attributes(node.references()))
        if is_root:  # the query's result, or a subquery's value used by its expression
            referenced.update(i for _n, i in attributes(node.output()))
        children = to_list(node.children())
        if kind not in PASS_BY_ID:
            for child in children:
                referenced.update(i for _n, i in attributes(child.output()))
        stack.extend((child, [node, *ancestors], False) for child in children)
        stack.extend((sub, [], True) for sub in to_list(node.subqueries()))
    scans = []
    for node, rel, ancestors in found:
        output = attributes(node.output())
        scan = Scan(rel, [n for n, _i in output], [i for _n, i in output])
        scan.needed = {n.lower() for n, i in output if i in referenced}
        columns = {}
        for (name, i), f in zip(output, fields_of(node), strict=True):
            kind = field_kind(f)
            if kind is not None:
                columns[i] = Column(name, kind)
        translator = FilterTranslator(columns)
        _collect_predicates(scan, translator, ancestors)
        scan.long_in = translator.long_in
        scans.append(scan)
    return Walk(scans, cached, nondeterministic, joins)


def _collect_predicates(scan: Scan, translator: FilterTranslator, ancestors: list[Any]) -> None:
    """Conjuncts of the Filters that see exactly the scan's rows: those directly above it, through nodes
    that keep rows and column identities. A Filter holding a non-deterministic conjunct ends the walk:
    Spark evaluates it on the rows that reach it, so no row may be removed before it."""
    for node in ancestors:
        kind = node_name(node)
        if kind == "Filter":
            parts = conjuncts(node.condition())
            if not all(c.deterministic() for c in parts):
                return
            for c in parts:
                text = translator.implied(c)
                if text is None:
                    sql = str(c.sql())  # shortened: a 100,000-value IN is megabytes of text
                    scan.untranslated.append(sql if len(sql) <= 1000 else sql[:1000] + " ...")
                elif text not in scan.predicates:
                    scan.predicates.append(text)
        elif kind == "Project":
            if not all(node_name(x) == "AttributeReference" for x in to_list(node.projectList())):
                return
        elif kind not in ROW_PRESERVING:
            return


def assign(jvm: Any, relations: list[Relation], scans: list[Scan]) -> list[Scan]:
    """Attach each optimized occurrence to the analyzed occurrence it reads; returns those that match
    none (then nothing may be rewritten: some relation would lose columns that occurrence reads).

    The optimizer keeps exprIds, so an occurrence normally matches exactly one relation by them. Copies
    the optimizer makes (a CTE inlined where it is used twice) have fresh exprIds but share the
    relation's table object: with one candidate it is theirs; with several, each candidate reads the
    copy's columns and no filter (the copy could be any of them)."""
    by_id = {i: k for k, r in enumerate(relations) for i in r.ids}
    unmatched = []
    for scan in scans:
        hits = {by_id[i] for i in scan.ids if i in by_id}
        if len(hits) != 1:
            table = scan.relation.table()
            hits = {k for k, r in enumerate(relations) if r.node.table().equals(table)}
        if not hits:
            path = single_path(relation_options(jvm, scan.relation))
            hits = {k for k, r in enumerate(relations) if r.path == path}
        if not hits:
            unmatched.append(scan)
        elif len(hits) == 1:
            relations[hits.pop()].scans.append(scan)
        else:
            for k in hits:
                relations[k].ambiguous |= scan.needed
                relations[k].any_ambiguous = True
    return unmatched
