"""The data source's read options as Spark hands them over: the store's settings (``storage.<name>``), the
table's own options, row positions, and whether Spark's pushed filters may drive pruning on this PySpark."""

from __future__ import annotations

from carbon_ds.fs import resolve
from carbon_ds.names import ROW_POSITIONS_OPTION
from carbon_ds.table.meta.options import parse_bool

PUSHDOWN_SAFE_FROM = (5, 0)  # first PySpark expected to keep pushed read state per scan
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


# Options naming the store's settings (carbon_ds.fs.resolve's storage_options): storage.<name>
STORAGE_PREFIX = "storage."


def storage_options(options) -> dict[str, str] | None:
    """The options ``storage.<name>`` (``storage.endpoint_url``, ``storage.access_key``, ...) as the
    ``storage_options`` of carbon_ds.fs.resolve, or None when there are none."""
    found = {k[len(STORAGE_PREFIX):].lower(): str(v) for k, v in options.items()
             if k.lower().startswith(STORAGE_PREFIX) and v is not None}
    return found or None


def table_options(options) -> dict[str, str]:
    """The options without ``storage.*`` (those are the file system's, not the table's or the read's)."""
    return {k: v for k, v in options.items() if not k.lower().startswith(STORAGE_PREFIX)}


def resolved_path(path: str, settings: dict[str, str] | None) -> str:
    """``path`` after handing the store's settings to the file-system layer of *this* process: Spark runs
    the source's planning, tasks and commit in different Python workers, so each of them calls this."""
    return resolve(path, settings) if settings else path


def positions_option(options) -> bool:
    """Option with_row_positions: append dml.POSITION_FIELDS (file, blocklet, page, row in page) to every
    row, for DELETE/UPDATE evaluated by Spark (carbon_ds.spark.statements.dml.spark_delete)."""
    return parse_bool(options.get(ROW_POSITIONS_OPTION), f"option {ROW_POSITIONS_OPTION}", False)


def pushdown_is_safe(version: str) -> bool:
    """Whether Spark's pushed filters may drive pruning on this PySpark.

    PySpark 4.1-4.3 cache the pushed reader and its partitions on the relation and reuse them for a later
    query on the same DataFrame or temporary view that pushes nothing (measured: 10 rows, then 5). Any
    pruning driven by ``pushFilters`` would then lose rows, and returning the filters to Spark does not
    help. The fix (per-scan read info) is targeted at Spark 5.0.
    """
    nums = []
    for part in version.split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit())
        nums.append(int(digits) if digits else 0)
    return tuple(nums) >= PUSHDOWN_SAFE_FROM
