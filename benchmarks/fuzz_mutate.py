"""Seeded damage to one file of a table, for benchmarks/fuzz.py: byte-level (bit flips, set bytes, random
runs, truncation) and structural (one edited field of a JSON file or of a Thrift struct, the file written
back well-formed, so that the damage reaches the checks past the parsers).

Structural edits set numbers to neighbours and extremes (0, -1, +-1, x2, 2**31 - 1, 2**63 - 1, 2**63 in JSON),
duplicate, drop, swap or repeat list elements (up to 200,000 times: the allocation bombs), set text to
another value, a path traversal or an absolute path, and remove keys or set them to null. ``mutate`` returns
the new bytes and a short label of the edit (``thrift footer.blocklet_info_list3: repeat x200000``).
"""

from __future__ import annotations

import json
import random
from typing import Any

from carbon_ds.format.index import index_bytes, merge_index_bytes, parse_index, read_merge_index
from carbon_ds.format.thrift.codec import Struct
from carbon_ds.format.thrift.structs import (
    DataChunk3,
    FileFooter3,
    FileHeader,
    MergedBlockIndex,
    MergedBlockIndexHeader,
    TableInfo,
)

HOSTILE_TEXT = ("", "0", "1", "..", "../../outside", "0/../../../../outside/victim_seg", "/tmp/outside",
                "Fact/../../x", "\u0000", "9223372036854775808")
INT_RANGE = {"byte": 7, "i16": 15, "i32": 31, "i64": 63, ("enum",): 31}


# ------------------------------------------------------------------ bytes
def mutate_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    b = bytearray(data)
    if not b:
        return b"\x00", "bytes: empty file given one byte"
    kind = rng.random()
    if kind < 0.15:
        cut = rng.randrange(len(b))
        return bytes(b[:cut]), f"bytes: truncated to {cut} of {len(b)}"
    n = rng.randint(1, 4)
    for _ in range(n):
        pos = rng.randrange(len(b))
        if kind < 0.6:
            b[pos] ^= 1 << rng.randrange(8)
        elif kind < 0.8:
            b[pos] = rng.choice([0x00, 0xFF, 0x7F, 0x80, rng.randrange(256)])
        else:
            k = rng.randint(1, 8)
            b[pos : pos + k] = rng.randbytes(k)
    what = "bit flips" if kind < 0.6 else "set bytes" if kind < 0.8 else "random runs"
    return bytes(b), f"bytes: {n} {what}"


# ------------------------------------------------------------------ numbers, text, lists
def _number(rng: random.Random, v: int, bits: int) -> int:
    lo, hi = -(1 << bits), (1 << bits) - 1
    choice = rng.choice([0, -1, v + 1, v - 1, v * 2, v // 2, v + rng.randint(2, 1000), hi, lo,
                         rng.randint(lo, hi), v * 1000, v - rng.randint(2, 50)])
    return max(lo, min(hi, choice))


def _repeat_count(rng: random.Random) -> int:
    return rng.choice([2, 3, 10, 1000, 200_000])


def _edit_list(rng: random.Random, items: list) -> str:
    if not items:
        return "empty list left"
    op = rng.choice(["dup", "drop", "swap", "repeat"])
    i = rng.randrange(len(items))
    if op == "dup":
        items.insert(i, items[i])
        return f"element {i} duplicated"
    if op == "drop":
        del items[i]
        return f"element {i} dropped"
    if op == "swap" and len(items) > 1:
        j = rng.randrange(len(items))
        items[i], items[j] = items[j], items[i]
        return f"elements {i} and {j} swapped"
    k = _repeat_count(rng)
    items[i:i + 1] = [items[i]] * k
    return f"element {i} repeated x{k}"


# ------------------------------------------------------------------ thrift
def _thrift_slots(obj: Any, path: str, out: list) -> None:
    """Every editable place of a struct: (label, getter, setter, type)."""
    if isinstance(obj, Struct):
        for name, typ, required in obj.FIELDS.values():
            value = getattr(obj, name)
            if value is None:
                continue
            here = f"{path}.{name}"
            if not (required and isinstance(value, Struct)):  # a required struct is edited inside, not removed
                out.append((here, obj, name, typ))
            _thrift_slots(value, here, out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:50]):  # enough places; a long list is edited as a list
            if isinstance(v, Struct):
                _thrift_slots(v, f"{path}[{i}]", out)


def edit_struct(rng: random.Random, root: Struct, name: str) -> str:
    slots: list = []
    _thrift_slots(root, name, slots)
    label, owner, attr, typ = rng.choice(slots)
    value = getattr(owner, attr)
    if isinstance(value, bool):
        setattr(owner, attr, not value)
        return f"{label}: flipped"
    if isinstance(value, int):
        bits = INT_RANGE.get(typ if isinstance(typ, str) else ("enum",), 31)
        setattr(owner, attr, _number(rng, value, bits))
        return f"{label}: {value} -> {getattr(owner, attr)}"
    if isinstance(value, bytes):
        if not value:
            return f"{label}: empty bytes left"
        b = bytearray(value)
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        setattr(owner, attr, bytes(b))
        return f"{label}: a bit flipped"
    if isinstance(value, str):
        setattr(owner, attr, rng.choice(HOSTILE_TEXT) if rng.random() < 0.5 else value[::-1])
        return f"{label}: {value[:30]!r} -> {getattr(owner, attr)[:40]!r}"
    if isinstance(value, list):
        elem = typ[1] if isinstance(typ, tuple) else None
        if value and not isinstance(value[0], Struct) and rng.random() < 0.5 and elem in INT_RANGE:
            i = rng.randrange(len(value))
            old = value[i]
            value[i] = _number(rng, old, INT_RANGE[elem])
            return f"{label}[{i}]: {old} -> {value[i]}"
        return f"{label}: {_edit_list(rng, value)}"
    if isinstance(value, dict):
        if value:
            k = rng.choice(sorted(value))
            del value[k]
            return f"{label}: key {k!r} removed"
        return f"{label}: empty map left"
    setattr(owner, attr, None)
    return f"{label}: removed"


def edit_carbondata(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """One edited field of the footer, the file header or a column chunk's header, offsets fixed up so
    the file is still laid out as written."""
    footer_at = int.from_bytes(data[-8:], "big")
    footer, _ = FileFooter3.from_bytes(data[footer_at:-8])
    infos = footer.blocklet_info_list3 or []
    starts = [o for b in infos for o in b.column_data_chunks_offsets]
    where = rng.choice(["footer", "footer", "header", "chunk", "chunk"])
    if where == "footer" or not starts:
        label = edit_struct(rng, footer, "footer")
        return data[:footer_at] + footer.to_bytes() + footer_at.to_bytes(8, "big"), label
    if where == "header":
        start, hlen = 0, min(starts)
        struct: Struct = FileHeader.from_bytes(data[:hlen])[0]
    else:
        b = rng.randrange(len(infos))
        c = rng.randrange(len(infos[b].column_data_chunks_offsets))
        start, hlen = infos[b].column_data_chunks_offsets[c], infos[b].column_data_chunks_length[c]
        struct = DataChunk3.from_bytes(data[start:start + hlen])[0]
    label = edit_struct(rng, struct, where if where == "header" else f"chunk[{b}][{c}]")
    new = struct.to_bytes()
    delta = len(new) - hlen
    for info in infos:
        offs = info.column_data_chunks_offsets
        for k, o in enumerate(offs):
            if o > start:
                offs[k] = o + delta
            elif o == start and where == "chunk":
                info.column_data_chunks_length[k] = len(new)
    body = data[:start] + new + data[start + hlen:footer_at]
    return body + footer.to_bytes() + (footer_at + delta).to_bytes(8, "big"), label


def edit_index(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    header, entries = parse_index(data)
    if rng.random() < 0.3:
        return index_bytes(header, entries), "index header: " + edit_struct(rng, header, "header")
    if rng.random() < 0.3:
        return index_bytes(header, entries), f"index entries: {_edit_list(rng, entries)}"
    i = rng.randrange(len(entries))
    return index_bytes(header, entries), edit_struct(rng, entries[i], f"entry[{i}]")


def edit_merge_index(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    parts = read_merge_index(data)
    names = [name for name, _h, _e in parts]
    blobs = [index_bytes(h, e) for _n, h, e in parts]
    if rng.random() < 0.25:
        if rng.random() < 0.5:
            label = _edit_list(rng, names)
        else:
            names[0], label = rng.choice(HOSTILE_TEXT), "name 0 changed"
        head = MergedBlockIndexHeader(file_names=names).to_bytes()
        return head + MergedBlockIndex(fileData=blobs).to_bytes(), f"merge index names: {label}"
    i = rng.randrange(len(blobs))
    blobs[i], label = edit_index(rng, blobs[i])
    return merge_index_bytes(list(zip(names, blobs, strict=True))), f"merged index {i}: {label}"


def edit_schema(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    info, _ = TableInfo.from_bytes(data)
    label = edit_struct(rng, info, "schema")
    return info.to_bytes(), label


# ------------------------------------------------------------------ JSON
def _json_slots(doc: Any, path: str, out: list) -> None:
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append((f"{path}.{k}", doc, k))
            _json_slots(v, f"{path}.{k}", out)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append((f"{path}[{i}]", doc, i))
            _json_slots(v, f"{path}[{i}]", out)


def _json_value(rng: random.Random, v: Any) -> Any:
    if isinstance(v, bool) or v is None:
        return rng.choice([None, 0, "x", not v])
    if isinstance(v, int):
        return rng.choice([None, 0, -1, v + 1, v - 1, v * 1000, 1 << 31, 1 << 63, -(1 << 63), str(v)])
    if isinstance(v, float):
        return rng.choice([None, 0, -v, v * 2])
    if isinstance(v, str):
        if v.lstrip("-").isdigit():
            n = int(v)
            return str(rng.choice([0, -1, n + 1, n - 1, n * 2, 1 << 63, n + rng.randint(2, 500)]))
        return rng.choice([None, *HOSTILE_TEXT, v[:-1], v + "0", v.upper()])
    if isinstance(v, list):
        v = list(v)
        _edit_list(rng, v) if rng.random() < 0.8 else v.append(None)
        return v
    if isinstance(v, dict):
        return rng.choice([None, {}, [], "x"])
    return None


def edit_json(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    doc = json.loads(data.decode("utf-8"))
    if rng.random() < 0.04:
        whole = rng.choice(["[]", "{}", "null", "[null]", "1"])
        return whole.encode(), f"json: the whole file replaced by {whole}"
    slots: list = []
    _json_slots(doc, "$", slots)
    if not slots:
        return json.dumps([None]).encode(), "json: empty document given a null"
    label, owner, key = rng.choice(slots)
    old = owner[key]
    if isinstance(owner, dict) and rng.random() < 0.15:
        del owner[key]
        return json.dumps(doc).encode(), f"json {label}: removed"
    owner[key] = _json_value(rng, old)
    shown = json.dumps(owner[key])
    return json.dumps(doc).encode(), f"json {label}: {json.dumps(old)[:40]} -> {shown[:60]}"


STRUCTURAL = {
    ".carbondata": edit_carbondata,
    ".carbonindex": edit_index,
    ".carbonindexmerge": edit_merge_index,
    "schema": edit_schema,
    ".segment": edit_json,
    "tablestatus": edit_json,
    "tableupdatestatus": edit_json,
    ".deletedelta": edit_json,
}


def mutate(rng: random.Random, kind: str, data: bytes) -> tuple[bytes, str]:
    """Damage ``data`` (a file of ``kind``): byte-level or, more often, one structural edit."""
    edit = STRUCTURAL.get(kind)
    if edit is not None and rng.random() < 0.6:
        try:
            return edit(rng, data)
        except Exception as e:  # noqa: BLE001 - a file the editor cannot parse (a corpus variant) gets bytes
            out, label = mutate_bytes(rng, data)
            return out, f"{label} (structural edit impossible: {type(e).__name__})"
    return mutate_bytes(rng, data)
