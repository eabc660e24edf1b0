"""The table's trash folder, and finding a planned file CLEAN FILES has moved there.

CLEAN FILES moves what no current snapshot names (files of deleted and compacted segments, superseded
delete deltas) into ``<table>/.Trash/<epoch ms>/`` and deletes a trash run only once it is older than the
retention (``carbon.trash.retention.days``). A reader that planned against an older snapshot may still
need such a file: it is found here under the same relative path (and opened by table.read.task_reader),
so every file a snapshot names stays readable for at least the retention after that snapshot stopped being current (``force`` excepted).
"""

from __future__ import annotations

from carbon_ds.fs import Storage, basename, norm_path

TRASH_DIR = ".Trash"
SEGMENTS_PREFIX = "Fact/Part0/"  # segment folders sit at Segment_<id>/ directly under a trash run


def trash_dir(table_path: str) -> str:
    return Storage.join(table_path, TRASH_DIR)


def trash_relative(table_path: str, path: str) -> str | None:
    """``path`` relative to the table folder, None when it is outside the table or already in the trash."""
    root = norm_path(table_path).rstrip("/") + "/"
    p = norm_path(path)
    if not p.startswith(root):
        return None
    rel = p[len(root):]
    return None if rel.startswith(TRASH_DIR + "/") else rel


def find_in_trash(storage: Storage, table_path: str, path: str) -> str | None:
    """Where CLEAN FILES put ``path`` (newest trash run first), None when it is in no trash run."""
    rel = trash_relative(table_path, path)
    if rel is None:
        return None
    candidates = [rel]
    if rel.startswith(SEGMENTS_PREFIX):
        candidates.insert(0, rel[len(SEGMENTS_PREFIX):])
    runs = sorted((d for d in storage.list_dirs(trash_dir(table_path)) if basename(d).isdigit()),
                  key=lambda d: int(basename(d)), reverse=True)
    for run in runs:
        for c in candidates:
            moved = Storage.join(run, *c.split("/"))
            if storage.exists(moved):
                return moved
    return None

