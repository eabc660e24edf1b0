"""Null arrays, maps and structs as CarbonData stores and reads them.

CarbonData has no null bit for a complex value. Its load (``ArrayDataType`` / ``StructDataType``
``.writeByteArray``) stores a null array or map as one null element and a null struct as a struct whose every
field is null; its readers (``ArrayQueryType.fillData``, ``StructQueryType.getDataBasedOnDataType``) turn
exactly those shapes back into null, innermost first. A parent page with null bits set cannot be read by
CarbonData at all (the row has no bytes to decode: ``BufferUnderflowException``).

carbon-ds writes CarbonData's shapes and says so in the footer (``COMPLEX_NULLS_KEY``); it reads them the way
CarbonData does, in CarbonData's files and in its own. Files of older carbon-ds versions kept null bits in the
parent pages and are read by those bits alone. Like CarbonData, the shapes are lossy: an array holding only
one null, or a struct of nothing but null fields, reads back as null.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

COMPLEX_NULLS_KEY = "complex_nulls"  # footer extra_info key; value "carbondata" as written by carbon-ds


def null_as_one_null_element(arr: pa.Array) -> pa.Array:
    """A list array whose null rows hold one null element instead, and no null row."""
    if arr.null_count == 0:
        return arr
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    lengths = np.asarray(pc.list_value_length(arr).fill_null(0).to_numpy(zero_copy_only=False), np.int64)
    flat = arr.flatten()  # the elements of the valid rows, in order
    counts = np.where(valid, lengths, 1)
    offsets = np.zeros(len(arr) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    first = np.cumsum(lengths) - lengths  # where a valid row's elements start in ``flat``
    base = np.where(valid, first, len(flat))  # a null row takes the one null appended to ``flat``
    within = np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1], counts)
    take = np.repeat(base, counts) + within
    values = pa.concat_arrays([flat, pa.nulls(1, flat.type)]).take(pa.array(take))
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values, type=arr.type)


def one_null_element_rows(counts: np.ndarray, child: pa.Array) -> np.ndarray:
    """Rows of an array page (element ``counts``, decoded ``child`` elements) that CarbonData reads as null:
    one element, and that element null."""
    starts = np.cumsum(counts) - counts
    single = np.flatnonzero(counts == 1)
    out = np.zeros(len(counts), dtype=bool)
    if single.size and child.null_count:
        child_null = np.asarray(child.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        out[single] = child_null[starts[single]]
    return out


def drop_rows(counts: np.ndarray, child: pa.Array, rows: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    """``counts`` and ``child`` without the elements of ``rows`` (a mask): a null row keeps no element."""
    if not rows.any():
        return counts, child
    keep = np.repeat(~rows, counts)
    return np.where(rows, 0, counts), child.filter(pa.array(keep))


def all_fields_null(fields: list[pa.Array]) -> np.ndarray | None:
    """Rows of a struct whose every field is null (CarbonData reads them as null); None when there is none."""
    if not fields or any(f.null_count == 0 for f in fields):
        return None
    rows = np.ones(len(fields[0]), dtype=bool)
    for f in fields:
        rows &= np.asarray(f.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    return rows if rows.any() else None
