"""Where carbon_ds.sql finds tables: a per-SparkSession registry plus the warehouse folder.

Registry: one runtime-conf key per table, ``carbon_ds.table.<db>.<table>`` = JSON {"path", "external"}.
Runtime conf belongs to the SparkSession, so every statement of that session (and Spark Connect clients
of it) sees it, and another session does not.

Warehouse: a table created without LOCATION lives where Spark puts managed tables:
``<spark.sql.warehouse.dir>/<table>`` in the ``default`` database and ``<warehouse>/<db>.db/<table>``
otherwise. A name the registry does not know is looked up there, so a new Python process finds the
tables earlier ones created.

Owners: a folder (symbolic links resolved) belongs to one managed table: ``owners`` finds the other names
that have it, so CREATE ... LOCATION refuses to take it twice and DROP never deletes it for another name.

Spark's catalog: with the carbon-ds Spark extension on (carbon_ds.configure_spark), every table is also a
table of Spark's session catalog (provider ``carbondata``, its folder as location, EXTERNAL to Spark so that
only carbon_ds.sql's DROP TABLE decides about the data). With a persistent metastore (``enableHiveSupport()``)
a new process finds it by name in plain ``spark.sql`` and ``spark.table``; the extension gives Spark's reads
and writes of it the location (jvm/src CarbonCatalogTables).

Views: without the extension every table is registered as the temporary view ``<table>`` (Spark temporary
views have no database qualifier, so ``db.t`` is reachable as ``t``; the last table registered under a
name wins).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from pyspark.sql.pandas.types import from_arrow_schema

from carbon_ds.ddl.statement_parser import TableName
from carbon_ds.errors import CarbonTableError
from carbon_ds.fs import NAME_MAX, Storage, basename, dirname
from carbon_ds.spark.connect import check_reachable
from carbon_ds.spark.extension import extension_active
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


def catalog_location(spark: Any, db: str, name: str) -> str | None:
    """The folder of ``db.name`` when it is a carbondata table of Spark's session catalog, else None."""
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
    if not provider.isDefined() or provider.get().lower() != "carbondata":
        return None
    return local_path(meta.location().toString())


def in_spark_catalog(spark: Any) -> bool:
    """Whether carbon_ds.sql's tables go into Spark's session catalog: only with the extension, which lets
    Spark read and write them (without it Spark hands the data source no path)."""
    return extension_active(spark) and _session_catalog(spark) is not None


def catalog_register(spark: Any, entry: Entry, schema: Any) -> None:
    """(Re)create ``entry`` as a carbondata table of Spark's session catalog with ``schema`` (a Spark
    StructType). Spark takes a table with a location as EXTERNAL: dropping the entry never touches the data."""
    name = f"{quote(entry.db)}.{quote(entry.name)}"
    if catalog_location(spark, entry.db, entry.name) is not None:
        spark.sql(f"DROP TABLE {name}")
    elif entry.db != "default":  # as Spark's CREATE DATABASE would: carbon-ds tables may name a new database
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(entry.db)}")
    spark.catalog.createTable(f"{entry.db}.{entry.name}", path=entry.path, source="carbondata", schema=schema)


def catalog_drop(spark: Any, entry: Entry) -> bool:
    """Remove ``entry`` from Spark's session catalog (metadata only); False when it is not there."""
    if catalog_location(spark, entry.db, entry.name) is None:
        return False
    spark.sql(f"DROP TABLE {quote(entry.db)}.{quote(entry.name)}")
    return True


def lookup(spark: Any, table: TableName) -> Entry | None:
    """The registered table, a carbondata table of Spark's catalog, or a CarbonData table in the warehouse
    folder; None when none exists."""
    db = (table.db or current_db(spark)).lower()
    raw = spark.conf.get(_key(db, table.name), None)
    if raw:
        info = json.loads(raw)
        return Entry(db, table.name.lower(), info["path"], bool(info.get("external")))
    located = catalog_location(spark, db, table.name)
    if located is not None:
        external = TableHandle.exists(located) and _external(located)
        return Entry(db, table.name.lower(), located, external)
    path = default_location(spark, db, table.name)
    if TableHandle.exists(path):
        return Entry(db, table.name.lower(), path, False, registered=False)
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


def create_view(spark: Any, entry: Entry) -> None:
    """Make ``entry`` queryable by name with its current columns: a table of Spark's catalog (extension on)
    is registered there again, otherwise a temporary view."""
    if in_spark_catalog(spark):
        handle = TableHandle.open(entry.path)
        catalog_register(spark, entry, from_arrow_schema(handle.schema, prefer_timestamp_ntz=False))
        return
    path = entry.path.replace("\\", "\\\\").replace("'", "\\'")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {quote(entry.name)} USING carbondata OPTIONS (path '{path}')")


def ensure(spark: Any, table: TableName) -> Entry:
    """Resolve ``table`` and make sure this session has it registered and viewable."""
    entry = require(spark, table)
    if not entry.registered:
        entry = register(spark, entry.db, entry.name, entry.path, entry.external)
        create_view(spark, entry)
    elif not spark.catalog.tableExists(entry.name) and catalog_location(spark, entry.db, entry.name) is None:
        create_view(spark, entry)
    return entry


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
