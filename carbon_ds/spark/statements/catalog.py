"""Where carbon-ds finds tables for CarbonData's statements, and who owns their files.

The owner rule (Spark's and CarbonData's): a table declared EXTERNAL, or created with a LOCATION, keeps its
files on DROP TABLE; only a managed table (created without LOCATION, in the warehouse folder) has its folder
deleted by DROP. CarbonData's ``_external`` table property marks an external table too.

**With the carbon-ds extension** (carbon_ds.configure_spark; classic sessions) Spark's session catalog is the
one record of a table: provider ``carbondata``, location, MANAGED or EXTERNAL, partition columns and the
table's options as TBLPROPERTIES. carbon-ds writes those entries with Spark's own statements (run through
jvm/src FrontDoor.sparkSql, so they are never taken for carbon-ds's), changes them in place (columns after
a schema change, jvm/src CatalogEntries) and never drops an entry to re-create it. With a persistent
metastore (``enableHiveSupport()``) a new process finds the tables by name; without one,
``adopt_warehouse_tables`` lists the warehouse folder's CarbonData tables in the new session's catalog.

**Without the extension** (or on Spark Connect) a per-SparkSession registry in the runtime conf
(``carbon_ds.table.<db>.<table>`` = JSON {"path", "external"}) plus a temporary view ``<table>`` per table
stand in for the catalog (Spark temporary views have no database qualifier, so ``db.t`` is reachable as
``t``; the last table registered under a name wins).

Warehouse: a table created without LOCATION lives where Spark puts managed tables:
``<spark.sql.warehouse.dir>/<table>`` in the ``default`` database and ``<warehouse>/<db>.db/<table>``
otherwise. A name nothing else knows is looked up there, so a new Python process finds the tables earlier
ones created.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from carbon_ds.ddl.statement_parser import TableName
from carbon_ds.errors import CarbonError, CarbonTableError
from carbon_ds.fs import NAME_MAX, Storage, basename, dirname
from carbon_ds.names import SOURCE, TABLE_OPTIONS
from carbon_ds.spark.bridge.extension import extension_active
from carbon_ds.spark.statements.connect import check_reachable
from carbon_ds.table.meta.handle import TableHandle

CONF_PREFIX = "carbon_ds.table."

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Entry:
    db: str
    name: str
    path: str
    external: bool = False
    registered: bool = True  # False: found in the warehouse, not (yet) in this session's registry


def current_db(spark: Any) -> str:
    try:
        return spark.catalog.currentDatabase() or "default"
    except Exception:  # noqa: BLE001 - a catalog without databases
        return "default"


def _key(db: str, name: str) -> str:
    return f"{CONF_PREFIX}{db.lower()}.{name.lower()}"


def local_path(uri: str) -> str:
    """``file:/x`` and ``file:///x`` (how Spark reports local folders) -> ``/x``; other URIs unchanged."""
    if uri.startswith("file://"):
        return uri[len("file://") :] or "/"
    if uri.startswith("file:"):
        return uri[len("file:") :]
    return uri


def warehouse_dir(spark: Any) -> str:
    value = spark.conf.get("spark.sql.warehouse.dir", None) or "spark-warehouse"
    path = local_path(value)
    return os.path.abspath(path) if "://" not in path else path.rstrip("/")


def default_location(spark: Any, db: str, name: str) -> str:
    base = warehouse_dir(spark)
    sep = "/" if "://" in base else os.sep
    if db.lower() == "default":
        return f"{base}{sep}{name.lower()}"
    return f"{base}{sep}{db.lower()}.db{sep}{name.lower()}"


def register(spark: Any, db: str, name: str, path: str, external: bool = False) -> Entry:
    spark.conf.set(_key(db, name), json.dumps({"path": path, "external": external}))
    return Entry(db.lower(), name.lower(), path, external)


def unregister(spark: Any, db: str, name: str) -> None:
    try:
        spark.conf.unset(_key(db, name))
    except Exception:  # noqa: BLE001 - unsetting an absent key is not an error worth raising
        pass


def _session_catalog(spark: Any) -> Any:
    """The JVM SessionCatalog of a classic session, None on Spark Connect."""
    jsession = getattr(spark, "_jsparkSession", None)
    return None if jsession is None else jsession.sessionState().catalog()


def _identifier(spark: Any, db: str, name: str) -> Any:
    jvm = spark._jvm
    return jvm.org.apache.spark.sql.catalyst.TableIdentifier(name, jvm.scala.Option.apply(db))


@dataclass(frozen=True)
class CatalogRecord:
    """What Spark's session catalog records of a carbondata table."""

    location: str
    managed: bool


def catalog_record(spark: Any, db: str, name: str) -> CatalogRecord | None:
    """``db.name`` as Spark's session catalog records it when it is a carbondata table there, else None."""
    cat = _session_catalog(spark)
    if cat is None:
        return None
    try:
        ident = _identifier(spark, db, name)
        if not cat.tableExists(ident):
            return None
        meta = cat.getTableMetadata(ident)
    except Exception:  # noqa: BLE001 - an unknown database: no such table
        return None
    provider = meta.provider()
    if not provider.isDefined() or provider.get().lower() != SOURCE:
        return None
    return CatalogRecord(local_path(meta.location().toString()), meta.tableType().name() == "MANAGED")


def catalog_location(spark: Any, db: str, name: str) -> str | None:
    """The folder of ``db.name`` when it is a carbondata table of Spark's session catalog, else None."""
    record = catalog_record(spark, db, name)
    return None if record is None else record.location


def in_spark_catalog(spark: Any) -> bool:
    """Whether carbon_ds.sql's tables go into Spark's session catalog: only with the extension, which lets
    Spark read and write them (without it Spark hands the data source no path)."""
    return extension_active(spark) and _session_catalog(spark) is not None


def spark_only(spark: Any, text: str) -> None:
    """Run ``text`` as Spark's own statement, never as carbon-ds's (the extension's front door would take
    ``CREATE TABLE ... USING carbondata`` and the like for carbon-ds's, which is what calls this)."""
    spark._jvm.carbonds.spark.FrontDoor.sparkSql(spark._jsparkSession, text)


def _ddl(spark: Any, schema: pa.Schema) -> str:
    struct = from_arrow_schema(schema, prefer_timestamp_ntz=False)
    return spark._jvm.org.apache.spark.sql.types.DataType.fromJson(struct.json()).toDDL()


def _partition_properties(handle: TableHandle) -> dict[str, str]:
    """A HASH / RANGE / LIST table's layout as CarbonData's CREATE TABLE TBLPROPERTIES spell it."""
    layout = handle.id_layout
    if layout is None:
        return {}
    if layout.type_name == "HASH":
        return {"partition_type": "HASH", "partition_num": str(layout.num)}
    if layout.type_name == "RANGE":
        return {"partition_type": "RANGE", "range_info": ", ".join(layout.range_text)}
    groups = [g[0] if len(g) == 1 else "(" + ", ".join(g) + ")" for g in layout.list_text]
    return {"partition_type": "LIST", "list_info": ", ".join(groups)}


def catalog_properties(handle: TableHandle) -> dict[str, str]:
    """The table's options as TBLPROPERTIES: what SHOW CREATE TABLE shows and its text creates again."""
    props = {k: str(v) for k, v in handle.properties.items() if k.lower() in TABLE_OPTIONS and str(v) != ""}
    props.update(_partition_properties(handle))
    return props


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def catalog_create(spark: Any, entry: Entry, handle: TableHandle, managed: bool) -> None:
    """Record ``entry`` (whose CarbonData table ``handle`` exists) in Spark's session catalog, MANAGED or
    EXTERNAL, with its columns, partition columns and options. Spark's CREATE TABLE refuses a managed table
    over a folder that holds data, so a managed entry is made with its location and then marked MANAGED."""
    if entry.db != "default":  # as Spark's CREATE DATABASE would: carbon-ds tables may name a new database
        spark_only(spark, f"CREATE DATABASE IF NOT EXISTS {quote(entry.db)}")
    schema = handle.schema
    pcols = list(handle.partition_columns) or [c for c in (handle.partitioning.columns if handle.partitioning
                                                             else ())]
    tail = [f.name.lower() for f in list(schema)[len(schema) - len(pcols):]] if pcols else []
    text = f"CREATE TABLE {quote(entry.db)}.{quote(entry.name)} ({_ddl(spark, schema)}) USING carbondata"
    if pcols and tail == [c.lower() for c in pcols]:  # Spark keeps partition columns last
        text += f" PARTITIONED BY ({', '.join(quote(c) for c in pcols)})"
    text += f" LOCATION {_sql_string(entry.path)}"
    props = catalog_properties(handle)
    if props:
        text += " TBLPROPERTIES (" + ", ".join(f"{_sql_string(k)} = {_sql_string(v)}" for k, v in props.items()) + ")"
    spark_only(spark, text)
    if managed:
        set_managed(spark, entry, True)


def set_managed(spark: Any, entry: Entry, managed: bool) -> None:
    """Record ``entry`` in Spark's catalog as MANAGED (DROP deletes its folder) or EXTERNAL (DROP keeps it)."""
    spark._jvm.carbonds.spark.CatalogEntries.setType(spark._jsparkSession, entry.db, entry.name, managed)


def catalog_sync(spark: Any, entry: Entry) -> None:
    """Spark's catalog entry of ``entry`` brought up to date with its table in place (columns after a schema
    change, options after SET TBLPROPERTIES or a partition change): never dropped and re-created."""
    handle = TableHandle.open(entry.path)
    struct = from_arrow_schema(handle.schema, prefer_timestamp_ntz=False)
    # Spark keeps a catalog table's partition columns last: a column added to a partitioned table goes before them
    parts = [c.name.lower() for c in spark.catalog.listColumns(f"{quote(entry.db)}.{quote(entry.name)}")
             if c.isPartition]
    if parts:
        last = sorted((f for f in struct.fields if f.name.lower() in parts), key=lambda f: parts.index(f.name.lower()))
        struct = StructType([f for f in struct.fields if f.name.lower() not in parts] + last)
    spark._jvm.carbonds.spark.CatalogEntries.replaceSchema(spark._jsparkSession, entry.db, entry.name, struct.json())
    props = catalog_properties(handle)
    name = f"{quote(entry.db)}.{quote(entry.name)}"
    if props:
        spark_only(spark, f"ALTER TABLE {name} SET TBLPROPERTIES (" +
                   ", ".join(f"{_sql_string(k)} = {_sql_string(v)}" for k, v in props.items()) + ")")


def catalog_drop(spark: Any, entry: Entry) -> bool:
    """Remove ``entry`` from Spark's session catalog; Spark deletes a MANAGED table's folder as it does for
    its own tables. False when it is not there."""
    record = catalog_record(spark, entry.db, entry.name)
    if record is None:
        return False
    if record.managed and entry.external:  # CarbonData's _external marker wins over what Spark recorded
        set_managed(spark, entry, False)
    spark_only(spark, f"DROP TABLE {quote(entry.db)}.{quote(entry.name)}")
    return True


def lookup(spark: Any, table: TableName) -> Entry | None:
    """The carbondata table of Spark's catalog (extension on), the registered table (extension off), or a
    CarbonData table in the warehouse folder; None when none exists."""
    db = (table.db or current_db(spark)).lower()
    name = table.name.lower()
    record = catalog_record(spark, db, name)
    if record is not None:
        external = not record.managed or (TableHandle.exists(record.location) and _external(record.location))
        return Entry(db, name, record.location, external)
    raw = None if in_spark_catalog(spark) else spark.conf.get(_key(db, table.name), None)
    if raw:
        info = json.loads(raw)
        return Entry(db, name, info["path"], bool(info.get("external")))
    path = default_location(spark, db, table.name)
    if TableHandle.exists(path):
        return Entry(db, name, path, _external(path), registered=False)
    return None


def _external(path: str) -> bool:
    """CarbonData's marker of a table whose data DROP TABLE keeps (tableProperties ``_external``)."""
    props = TableHandle.open(path).properties
    return str(props.get("_external", "")).strip().lower() == "true"


def real_path(path: str) -> str:
    """The folder ``path`` names with every symbolic link resolved, so two names of one folder compare equal."""
    storage, fs_path = Storage.for_path(local_path(path))
    return storage.real_path(fs_path)


def _registered_entries(spark: Any) -> list[Entry]:
    try:
        conf = spark.conf.getAll
    except Exception:  # noqa: BLE001 - a conf without getAll: the registry cannot be listed
        return []
    out = []
    for key, raw in conf.items():
        parts = key[len(CONF_PREFIX):].split(".") if key.startswith(CONF_PREFIX) else []
        if len(parts) != 2:
            continue
        try:
            info = json.loads(raw)
            out.append(Entry(parts[0], parts[1], info["path"], bool(info.get("external"))))
        except (ValueError, TypeError, KeyError):
            continue  # not one of our entries
    return out


def _warehouse_owner(spark: Any, real: str) -> tuple[str, str] | None:
    """(db, table) whose warehouse location is ``real``, None when it is no warehouse table folder."""
    base = real_path(warehouse_dir(spark))
    parent = dirname(real)
    if parent == base:
        return "default", basename(real)
    if basename(parent).endswith(".db") and dirname(parent) == base:
        return basename(parent)[: -len(".db")], basename(real)
    return None


def owners(spark: Any, path: str, db: str, name: str) -> list[Entry]:
    """Tables other than ``db.name`` whose folder is ``path`` (links resolved): registered in this session
    under another name, or the CarbonData table in the warehouse folder of another name."""
    real = real_path(path)
    me = (db.lower(), name.lower())
    out = [e for e in _registered_entries(spark) if (e.db, e.name) != me and real_path(e.path) == real]
    wh = _warehouse_owner(spark, real)
    if wh is not None and wh != me and all((e.db, e.name) != wh for e in out) and TableHandle.exists(path):
        out.append(Entry(wh[0], wh[1], path, False, registered=False))
    return out


def require(spark: Any, table: TableName) -> Entry:
    entry = lookup(spark, table)
    if entry is not None:
        check_reachable(spark, entry.path, f"the folder of table {entry.db}.{entry.name}")
    if entry is None:
        db = (table.db or current_db(spark)).lower()
        raise CarbonTableError(
            f"table {db}.{table.name} not found: it is not registered in this Spark session and there is no "
            f"CarbonData table at {default_location(spark, db, table.name)} (create it with "
            "CREATE TABLE ... STORED AS carbondata)"
        )
    return entry


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def publish(spark: Any, entry: Entry) -> None:
    """Make ``entry`` queryable by name with its current columns: its entry in Spark's catalog (extension on)
    made or brought up to date in place, otherwise a temporary view."""
    if in_spark_catalog(spark):
        if catalog_record(spark, entry.db, entry.name) is None:
            catalog_create(spark, entry, TableHandle.open(entry.path), managed=not entry.external)
        else:
            catalog_sync(spark, entry)
        return
    path = entry.path.replace("\\", "\\\\").replace("'", "\\'")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {quote(entry.name)} USING carbondata OPTIONS (path '{path}')")


def ensure(spark: Any, table: TableName) -> Entry:
    """Resolve ``table`` and make sure this session knows it by name (catalog entry, or registry and view)."""
    entry = require(spark, table)
    if in_spark_catalog(spark):
        if catalog_record(spark, entry.db, entry.name) is None:  # a warehouse table a new process found
            catalog_create(spark, entry, TableHandle.open(entry.path), managed=not entry.external)
        return entry
    if not entry.registered:
        entry = register(spark, entry.db, entry.name, entry.path, entry.external)
        publish(spark, entry)
    elif not spark.catalog.tableExists(entry.name):
        publish(spark, entry)
    return entry


def _warehouse_tables(spark: Any) -> list[tuple[str, str, str]]:
    """(db, table, folder) of every CarbonData table in the warehouse folder's layout."""
    base = warehouse_dir(spark)
    storage, fs_base = Storage.for_path(base)
    if not storage.is_dir(fs_base):
        return []
    sep = "/" if "://" in base else os.sep
    out = []
    for name in (basename(d) for d in storage.list_dirs(fs_base)):
        db = name[: -len(".db")] if name.endswith(".db") else None
        if db is None:
            out.append(("default", name, f"{base}{sep}{name}"))
        elif _IDENTIFIER.fullmatch(db):
            inner = storage.list_dirs(f"{fs_base}/{name}")
            out += [(db, basename(t), f"{base}{sep}{name}{sep}{basename(t)}") for t in inner]
    return [(db, t, path) for db, t, path in out if _IDENTIFIER.fullmatch(t) and TableHandle.exists(path)]


def adopt_warehouse_tables(spark: Any) -> list[str]:
    """List the warehouse folder's CarbonData tables that Spark's catalog does not know (a new process
    without a persistent metastore) in the catalog, MANAGED as they were made; names the catalog already has
    are left alone. Returns the adopted ``db.table`` names."""
    if not in_spark_catalog(spark):
        return []
    adopted = []
    for db, name, path in _warehouse_tables(spark):
        if _exists(spark, f"{quote(db)}.{quote(name)}"):
            continue
        try:
            handle = TableHandle.open(path)
            catalog_create(spark, Entry(db, name, path, _external(path)), handle, managed=not _external(path))
        except CarbonError:
            continue  # an unreadable table stays unlisted; using it by name reports what is wrong
        adopted.append(f"{db}.{name}")
    return adopted


def drop_view(spark: Any, name: str) -> None:
    spark.catalog.dropTempView(name)  # only a temporary view: never a catalog table of that name


def check_name(table: TableName) -> None:
    """Table and database names become folder names: only letters, digits and ``_`` (CarbonData's rule), so
    no name can point outside the warehouse.

    Raises:
        CarbonTableError: naming the offending name.
    """
    for kind, name, most in (("database", table.db, NAME_MAX - len(".db")), ("table", table.name, NAME_MAX)):
        if name is not None and not _IDENTIFIER.fullmatch(name):
            raise CarbonTableError(f"invalid {kind} name {name!r}: expected letters, digits and '_' only, "
                                   "starting with a letter or '_'")
        if name is not None and len(name) > most:  # ASCII by the rule above: characters are bytes
            raise CarbonTableError(f"{kind} name too long: at most {most} characters (it names the {kind}'s "
                                   f"folder), found {len(name)} ({name[:40]}...)")


def _exists(spark: Any, name: str) -> bool:
    try:
        return bool(spark.catalog.tableExists(name))
    except Exception:  # noqa: BLE001 - an unknown database: nothing of that name exists
        return False


def check_free(spark: Any, table: TableName) -> None:
    """A CREATE must not silently shadow a Spark catalog table or a temporary view of the same name.

    Raises:
        CarbonTableError: the name is taken; the message says by what.
    """
    db = (table.db or current_db(spark)).lower()
    if _exists(spark, f"{quote(db)}.{quote(table.name)}"):
        raise CarbonTableError(f"table {db}.{table.name} already exists in the Spark catalog")
    if table.db is None and _exists(spark, quote(table.name)):
        raise CarbonTableError(f"{table.name} already exists as a temporary view in this Spark session; "
                               "drop it first (DROP VIEW) or choose another name")
