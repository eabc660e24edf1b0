"""A small Thrift TCompactProtocol codec driven by declarative struct specs.

Why our own codec rather than thriftpy2: CarbonData metadata is a handful of structs decoded once per
file or column chunk, and a hostile file must never drive an allocation or a hang. Owning the ~300 lines
lets every length be checked against the bytes actually present, recursion be bounded, unknown fields be
skipped, and errors carry the file and offset. No IDL file or generated code is needed.

A struct is a subclass of :class:`Struct` with ``FIELDS = {field_id: (name, type, required)}`` where a
type is one of the names in ``_SCALARS``, ``("list", elem)`` or ``("list", elem, Limit(n, what))`` (a
list of at most n elements), ``("map", key, value)``, ``("enum",)`` (an i32), or a Struct subclass.

Hostile input does bounded work: a list, map or byte string may not declare more elements than the bytes
left could hold (a struct element takes at least one byte per required field and its stop byte), a text
string is at most ``MAX_STRING_BYTES``, and a limited list is refused from its header, before any of its
elements is read.
"""

from __future__ import annotations

import struct as _struct
from collections.abc import Iterator
from typing import Any, ClassVar, NamedTuple

from carbon_ds.errors import CarbonFormatError, CarbonSchemaError

# compact protocol wire types
STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)

_SCALARS = {
    "bool": TRUE,
    "byte": BYTE,
    "i16": I16,
    "i32": I32,
    "i64": I64,
    "double": DOUBLE,
    "string": BINARY,
    "binary": BINARY,
}
_MAX_DEPTH = 64
_DOUBLE = _struct.Struct("<d")
MAX_STRING_BYTES = 1 << 20  # a text field (name, id, property); binaries are bounded by the data only


class Limit(NamedTuple):
    """The most elements a list field may hold, and what they are (for the error message)."""

    count: int
    what: str


def _min_bytes(t: Any) -> int:
    """The fewest bytes one value of type ``t`` takes on the wire: a struct needs its stop byte and at
    least a header and a value byte per required field (a bool field only its header byte)."""
    if isinstance(t, type) and issubclass(t, Struct):
        return 1 + sum(1 if ft == "bool" else 2 for _n, ft, r in t.FIELDS.values() if r)
    return 1


def _wire_type(t: Any) -> int:
    if isinstance(t, str):
        return _SCALARS[t]
    if isinstance(t, tuple):
        return {"list": LIST, "map": MAP, "enum": I32, "set": SET}[t[0]]
    return STRUCT


# per struct class: {field id: (name, type, wire type)}, the names of all fields, the required ones
_Compiled = tuple[dict[int, tuple[str, Any, int]], tuple[str, ...], tuple[str, ...]]
_COMPILED: dict[type, _Compiled] = {}


def _compiled(cls: type) -> _Compiled:
    c = _COMPILED.get(cls)
    if c is None:
        fields = cls.FIELDS  # type: ignore[attr-defined]
        c = (
            {fid: (name, t, _wire_type(t)) for fid, (name, t, _r) in fields.items()},
            tuple(name for name, _t, _r in fields.values()),
            tuple(name for name, _t, r in fields.values() if r),
        )
        _COMPILED[cls] = c
    return c


class Struct:
    """Base of all thrift structs: attributes named after fields, ``None`` when absent."""

    FIELDS: ClassVar[dict[int, tuple[str, Any, bool]]] = {}

    def __init__(self, **kwargs: Any):
        for name, _t, _r in self.FIELDS.values():
            setattr(self, name, kwargs.pop(name, None))
        if kwargs:
            raise TypeError(f"{type(self).__name__} has no fields {sorted(kwargs)}")

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and all(
            getattr(self, n) == getattr(other, n) for n, _t, _r in self.FIELDS.values()
        )

    def __repr__(self) -> str:
        parts = [
            f"{n}={getattr(self, n)!r}" for n, _t, _r in self.FIELDS.values() if getattr(self, n) is not None
        ]
        return f"{type(self).__name__}({', '.join(parts)})"

    def to_bytes(self) -> bytes:
        w = CompactWriter()
        w.write_struct(self)
        return bytes(w.buf)

    @classmethod
    def from_bytes(cls, data: bytes | memoryview, path: str | None = None, base_offset: int = 0):
        """Decode one struct from the start of ``data``; returns (struct, bytes consumed)."""
        r = CompactReader(data, path, base_offset)
        obj = r.read_struct(cls)
        return obj, r.pos


class CompactReader:
    def __init__(self, data: bytes | memoryview, path: str | None = None, base_offset: int = 0):
        self.data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        self.pos = 0
        self.path = path
        self.base = base_offset
        self.depth = 0

    def _fail(self, msg: str) -> CarbonFormatError:
        return CarbonFormatError(f"corrupt thrift metadata: {msg}", self.path, self.base + self.pos)

    def _need(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise self._fail(f"need {n} bytes, {len(self.data) - self.pos} left")

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self._fail("unexpected end of data")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        data = self.data
        pos = self.pos
        end = len(data)
        result = shift = 0
        # the bytes walked here, not through byte(): footers hold lists of page row counts (3-byte numbers)
        while pos < end:
            b = data[pos]
            pos += 1
            if b < 0x80:
                self.pos = pos
                return result | (b << shift)
            result |= (b & 0x7F) << shift
            shift += 7
            if shift > 63:
                self.pos = pos
                raise self._fail("varint longer than 10 bytes")
        self.pos = pos
        raise self._fail("unexpected end of data")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def _zigzags(self, n: int) -> list[int]:
        """``n`` zigzag varints in one loop (a footer's page row counts, a header's page offsets)."""
        data = self.data
        pos = self.pos
        end = len(data)
        out = []
        append = out.append
        for _ in range(n):
            if pos < end and data[pos] < 0x80:  # one byte: no call
                v = data[pos]
                pos += 1
            else:
                self.pos = pos
                v = self.varint()
                pos = self.pos
            append((v >> 1) ^ -(v & 1))
        self.pos = pos
        return out

    def raw(self, n: int) -> bytes:
        self._need(n)
        out = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return out

    def binary(self) -> bytes:
        """A length-prefixed byte string."""
        n = self.varint()
        pos = self.pos
        end = pos + n
        if end > len(self.data):
            raise self._fail(f"binary of {n} elements exceeds the {len(self.data) - pos} bytes left")
        self.pos = end
        return bytes(self.data[pos:end])

    def _size(self, what: str, min_elem_bytes: int = 1) -> int:
        n = self.varint()
        # every element takes at least one byte, so a larger count than bytes left is corrupt
        if n * min_elem_bytes > len(self.data) - self.pos:
            raise self._fail(f"{what} of {n} elements exceeds the {len(self.data) - self.pos} bytes left")
        return n

    def read_value(self, wire: int, t: Any) -> Any:
        if wire in (TRUE, FALSE):
            return self.byte() == TRUE
        if wire == BYTE:
            v = self.byte()
            return v - 256 if v > 127 else v
        if wire in (I16, I32, I64):
            return self.zigzag()
        if wire == DOUBLE:
            return _DOUBLE.unpack(self.raw(8))[0]
        if wire == BINARY:
            b = self.binary()
            if t == "string":
                if len(b) > MAX_STRING_BYTES:
                    raise self._fail(f"string of {len(b)} bytes exceeds the limit of {MAX_STRING_BYTES}")
                try:
                    return b.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise self._fail(f"invalid UTF-8 in string: {e}") from None
            return b
        if wire in (LIST, SET):
            head = self.byte()
            n, ew = head >> 4, head & 0x0F
            et = t[1] if isinstance(t, tuple) and t[0] in ("list", "set") else None
            if n == 15:
                n = self.varint()
            if isinstance(t, tuple) and len(t) > 2 and n > t[2].count:
                raise self._fail(f"list of {n} {t[2].what} exceeds the limit of {t[2].count} {t[2].what}")
            if n * _min_bytes(et) > len(self.data) - self.pos:
                raise self._fail(f"list of {n} elements exceeds the {len(self.data) - self.pos} bytes left")
            self._check_wire(ew, et)
            if ew in (I16, I32, I64):
                return self._zigzags(n)
            if ew == BINARY and et != "string":
                binary = self.binary
                return [binary() for _ in range(n)]
            return [self.read_value(ew, et) for _ in range(n)]
        if wire == MAP:
            n = self._size("map", 2)
            if n == 0:
                return {}
            kv = self.byte()
            kw, vw = kv >> 4, kv & 0x0F
            kt = t[1] if isinstance(t, tuple) and t[0] == "map" else None
            vt = t[2] if isinstance(t, tuple) and t[0] == "map" else None
            self._check_wire(kw, kt)
            self._check_wire(vw, vt)
            out = {}
            for _ in range(n):
                k = self.read_value(kw, kt)
                out[k] = self.read_value(vw, vt)
            return out
        if wire == STRUCT:
            if isinstance(t, type) and issubclass(t, Struct):
                return self.read_struct(t)
            self.skip_struct()
            return None
        raise self._fail(f"unknown wire type {wire}")

    def _check_wire(self, wire: int, t: Any) -> None:
        if t is None:
            if wire not in range(1, 13):
                raise self._fail(f"unknown wire type {wire}")
            return
        expect = _wire_type(t)
        if expect == TRUE:
            if wire not in (TRUE, FALSE):
                raise self._fail(f"expected bool, found wire type {wire}")
        elif wire != expect and not (expect == LIST and wire == SET):
            raise self._fail(f"expected wire type {expect}, found {wire}")

    def _fields(self) -> Iterator[tuple[int, int]]:
        """The field headers of the struct being read, as (field id, wire type); the caller reads or skips
        (``_skip``) each value before asking for the next header. The struct's STOP ends the iteration."""
        last = 0
        while True:
            head = self.byte()
            wire = head & 0x0F
            if wire == STOP:
                return
            delta = head >> 4
            last = last + delta if delta else self.zigzag()
            yield last, wire

    def _skip(self, wire: int) -> None:
        if wire not in (TRUE, FALSE):  # a bool field's value is its wire type
            self._check_wire(wire, None)
            self.read_value(wire, None)

    def skip_struct(self) -> None:
        self._enter()
        for _, wire in self._fields():
            self._skip(wire)
        self.depth -= 1

    def declared_length(self, field_id: int) -> int | None:
        """The element count a struct's list field ``field_id`` declares, read from its header alone: the
        fields before it are skipped, the list is not read (None when the struct has no such list). Lets a
        caller refuse a list by its size before a single element becomes an object."""
        for fid, wire in self._fields():
            if fid == field_id and wire == LIST:
                n = self.byte() >> 4
                return self.varint() if n == 15 else n
            self._skip(wire)
        return None

    def field_span(self, field_id: int) -> tuple[int, int] | None:
        """Where a struct's field ``field_id`` lies: (start, end) of its value's bytes, the fields before it
        skipped (None when the struct has no such field). Two structs whose field has the same bytes there
        hold equal values in it (a field given twice has no one span: None)."""
        span = None
        for fid, wire in self._fields():
            start = self.pos
            self._skip(wire)
            if fid == field_id:
                if span is not None:
                    return None
                # a bool's value is in its header byte
                span = (start - 1, self.pos) if wire in (TRUE, FALSE) else (start, self.pos)
        return span

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self._fail(f"structs nested deeper than {_MAX_DEPTH}")

    def read_struct(self, cls: type[Struct]) -> Struct:
        self._enter()
        obj = cls.__new__(cls)
        specs, names, required = _compiled(cls)
        attrs = obj.__dict__
        for name in names:
            attrs[name] = None
        data = self.data
        last = 0
        while True:
            pos = self.pos
            if pos >= len(data):
                raise self._fail("unexpected end of data")
            head = data[pos]
            self.pos = pos + 1
            wire = head & 0x0F
            if wire == STOP:
                break
            delta = head >> 4
            fid = last + delta if delta else self.zigzag()
            last = fid
            spec = specs.get(fid)
            if wire == TRUE or wire == FALSE:
                value: Any = wire == TRUE
                if spec is not None and spec[1] != "bool":
                    raise self._fail(f"{cls.__name__}.{spec[0]}: expected {spec[1]}, found bool")
            elif spec is None:
                self._check_wire(wire, None)
                self.read_value(wire, None)
                continue
            else:
                name, t, expect = spec
                if wire != expect:
                    self._check_wire(wire, t)
                if wire == I32 or wire == I64 or wire == I16:
                    value = self.zigzag()
                elif wire == STRUCT and expect == STRUCT:
                    value = self.read_struct(t)
                elif wire == BINARY and t == "binary":
                    value = self.binary()
                else:
                    value = self.read_value(wire, t)
            if spec is not None:
                attrs[spec[0]] = value
        for name in required:
            if attrs[name] is None:
                raise self._fail(f"{cls.__name__} is missing required field {name!r}")
        self.depth -= 1
        return obj


class CompactWriter:
    def __init__(self) -> None:
        self.buf = bytearray()

    def varint(self, n: int) -> None:
        n &= 0xFFFFFFFFFFFFFFFF
        while n > 0x7F:
            self.buf.append((n & 0x7F) | 0x80)
            n >>= 7
        self.buf.append(n)

    def zigzag(self, n: int, bits: int = 64) -> None:
        self.varint((n << 1) ^ (n >> (bits - 1)))

    def write_value(self, t: Any, v: Any) -> None:
        if isinstance(t, str):
            if t == "bool":
                self.buf.append(TRUE if v else FALSE)
            elif t == "byte":
                self.buf.append(v & 0xFF)
            elif t in ("i16", "i32", "i64"):
                self.zigzag(int(v), 64 if t == "i64" else 32)
            elif t == "double":
                self.buf += _DOUBLE.pack(v)
            else:
                b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
                self.varint(len(b))
                self.buf += b
        elif isinstance(t, tuple):
            kind = t[0]
            if kind == "enum":
                self.zigzag(int(v), 32)
            elif kind in ("list", "set"):
                ew = _wire_type(t[1])
                n = len(v)
                if len(t) > 2 and n > t[2].count:  # a file no reader (ours or Java's) would take
                    raise CarbonSchemaError(f"{n} {t[2].what} exceed the limit of {t[2].count} {t[2].what}")
                if n < 15:
                    self.buf.append((n << 4) | ew)
                else:
                    self.buf.append(0xF0 | ew)
                    self.varint(n)
                for e in v:
                    self.write_value(t[1], e)
            else:  # map
                self.varint(len(v))
                if v:
                    self.buf.append((_wire_type(t[1]) << 4) | _wire_type(t[2]))
                    for k, e in v.items():
                        self.write_value(t[1], k)
                        self.write_value(t[2], e)
        else:
            self.write_struct(v)

    def write_struct(self, obj: Struct) -> None:
        last = 0
        cls = type(obj)
        for fid in sorted(cls.FIELDS):
            name, t, required = cls.FIELDS[fid]
            v = getattr(obj, name)
            if v is None:
                if required:
                    raise ValueError(f"{cls.__name__}.{name} is required")
                continue
            wire = _wire_type(t)
            if t == "bool":
                wire = TRUE if v else FALSE
            delta = fid - last
            if 0 < delta <= 15:
                self.buf.append((delta << 4) | wire)
            else:
                self.buf.append(wire)
                self.zigzag(fid, 16)
            last = fid
            if t != "bool":
                self.write_value(t, v)
        self.buf.append(STOP)
