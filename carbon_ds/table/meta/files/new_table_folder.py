"""Where a new table may be created: a folder that is absent, empty, or already a CarbonData table.

A write that creates a table (``write_table``, ``CarbonTable.create``, the Spark writer and streaming sink,
CREATE TABLE) must not turn someone else's dataset into a mix: CarbonData's ``Metadata/``, ``Fact/`` and
``LockFiles/`` beside a Hive-partitioned Parquet folder's ``day=1/`` break every other reader of it. The
rule, checked before any lock file is made:

- the folder does not exist, or holds nothing but hidden files (names starting with ``.``, such as
  ``.DS_Store``; hidden folders such as ``.Trash`` are not ignored);
- besides those, ``LockFiles/`` holding only lock files and an empty ``Metadata/`` (or one holding only
  hidden temporary files) are accepted: that is what a creation under way, or one that died before
  writing the schema, leaves;
- anything else (data files, sub-folders, Spark's ``_SUCCESS`` marker, a ``Metadata/`` holding a
  tablestatus but no schema) refuses the write with ``CarbonTableError`` naming what the folder holds.
"""

from __future__ import annotations

import pyarrow.fs as pafs

from carbon_ds.errors import CarbonTableError
from carbon_ds.fs import Storage, basename

EXPECTED = "expected an empty folder or a CarbonData table (Metadata/schema)"
_LOCK_SUFFIXES = (".lock", ".intent")
_SHOWN = 8  # entries named in an error; the rest are counted


def _entries(storage: Storage, folder: str) -> list[tuple[str, bool]]:
    """(name, is a folder) of what ``folder`` holds directly, sorted; empty when it does not exist."""
    sel = pafs.FileSelector(folder, allow_not_found=True)
    try:
        infos = storage.fs.get_file_info(sel)
    except NotADirectoryError:
        return []  # a regular file: the caller's own check names that
    return sorted((basename(i.path), i.type == pafs.FileType.Directory) for i in infos
                  if i.type != pafs.FileType.NotFound)


def _shown(entries: list[tuple[str, bool]]) -> str:
    names = [n + ("/" if is_dir else "") for n, is_dir in entries]
    more = f", ... ({len(names) - _SHOWN} more)" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def _hidden_file(name: str, is_dir: bool) -> bool:
    return name.startswith(".") and not is_dir


def check_new_table_folder(storage: Storage, path: str) -> None:
    """Refuse to create a table at ``path`` unless the folder is free for it (see the module docstring).

    Raises:
        CarbonTableError: ``path`` holds something that is not part of a CarbonData table, or a partial
            table (``Metadata/`` without ``schema``); nothing is written.
    """
    entries = _entries(storage, path)
    foreign = []
    for name, is_dir in entries:
        if _hidden_file(name, is_dir):
            continue
        if is_dir and name == "LockFiles":
            inner = _entries(storage, Storage.join(path, name))
            if all(not d and n.endswith(_LOCK_SUFFIXES) for n, d in inner):
                continue
        if is_dir and name == "Metadata":
            inner = [(n, d) for n, d in _entries(storage, Storage.join(path, name)) if not _hidden_file(n, d)]
            if ("schema", False) in inner:
                # a table now: another first writer created it since the caller looked; the caller opens it
                return
            if not inner:
                continue
            raise CarbonTableError(
                f"{storage.uri(path)} is part of a CarbonData table without its schema: Metadata/ holds "
                f"{_shown(inner)} but no schema file; {EXPECTED}. Restore Metadata/schema from a copy of the "
                "table, or write to another folder; nothing was written"
            )
        foreign.append((name, is_dir))
    if foreign:  # named without the hidden files, which are never in the way
        count = f"{len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'}"
        raise CarbonTableError(
            f"cannot create a CarbonData table in {storage.uri(path)}: the folder holds {count}: "
            f"{_shown(foreign)}; {EXPECTED}. It looks like another dataset: write to a new folder "
            "(a table's files would sit beside its own and break its readers); nothing was written"
        )
