"""The ``encoder_meta`` blob of a page (Java ``ColumnPageEncoderMeta``, DataOutput big-endian).

Layout: writeUTF(column name), byte schema type id, byte column type, int scale, int precision,
byte stored type id, int decimal count, byte data-type-selected, then max, min and a zero value whose
width follows the schema type, then writeUTF(compressor name).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from decimal import Decimal, localcontext
from enum import IntEnum

from carbon_ds.errors import CarbonFormatError


class MetaType(IntEnum):
    """CarbonData's internal DataType ids, as written in encoder meta."""

    STRING = 0
    DATE = 1
    TIMESTAMP = 2
    BOOLEAN = 3
    SHORT = 4
    INT = 5
    FLOAT = 6
    LONG = 7
    DOUBLE = 8
    NULL = 9
    DECIMAL = 10
    ARRAY = 11
    STRUCT = 12
    MAP = 13
    BYTE = 14
    BYTE_ARRAY = 15
    SHORT_INT = 16
    LEGACY_LONG = 17
    VARCHAR = 18
    BINARY = 19


class ColumnType(IntEnum):
    GLOBAL_DICTIONARY = 0
    DIRECT_DICTIONARY = 1
    PLAIN_VALUE = 2
    COMPLEX = 3
    MEASURE = 4
    COMPLEX_STRUCT = 5
    COMPLEX_ARRAY = 6
    COMPLEX_PRIMITIVE = 7
    PLAIN_LONG_VALUE = 8


# width in bytes of each stored integral type
STORE_WIDTH = {MetaType.BYTE: 1, MetaType.SHORT: 2, MetaType.SHORT_INT: 3, MetaType.INT: 4, MetaType.LONG: 8}


@dataclass
class EncoderMeta:
    column_name: str
    schema_type: int
    column_type: int
    scale: int = -1
    precision: int = -1
    store_type: int = MetaType.LONG
    decimal_count: int = 0
    data_type_selected: int = 0
    max: object = None
    min: object = None
    compressor: str = "snappy"


class _In:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise CarbonFormatError(f"encoder meta truncated: need {n} bytes at {self.pos} of {len(self.data)}")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def unpack(self, fmt: str):
        s = struct.Struct(">" + fmt)
        return s.unpack(self.take(s.size))

    def utf(self) -> str:
        (n,) = self.unpack("H")
        return self.take(n).decode("utf-8", errors="replace")


def _decimal_from_bytes(b: bytes) -> Decimal:
    if not b:
        return Decimal(0)
    scale = b[0]
    unscaled = int.from_bytes(b[1:], "big", signed=True) if len(b) > 1 else 0
    with localcontext() as ctx:
        ctx.prec = 100
        return Decimal(unscaled).scaleb(-scale)


def decimal_to_bytes(value: Decimal | int, scale: int) -> bytes:
    """CarbonData's decimal bytes: one scale byte, then the big-endian two's complement unscaled value."""
    if isinstance(value, int):
        unscaled = value
    else:
        with localcontext() as ctx:  # the default 28 digits would round DECIMAL(38) values
            ctx.prec = 100
            unscaled = int(Decimal(value).scaleb(scale).to_integral_value())
    n = max(1, (unscaled.bit_length() + 8) // 8)
    return bytes([scale & 0xFF]) + unscaled.to_bytes(n, "big", signed=True)


def _decimal_meta_bytes(v: object) -> bytes:
    d = Decimal(v)  # type: ignore[arg-type]
    return decimal_to_bytes(d, max(0, -int(d.as_tuple().exponent)))


_HEAD = struct.Struct(">bbiibib")
_H = struct.Struct(">H")
# schema type -> layout of (max, min, zero) for the fixed-width types a page meta usually carries
_FIXED_VALUES = {
    MetaType.BYTE: struct.Struct(">bbq"),
    MetaType.BOOLEAN: struct.Struct(">bbq"),
    MetaType.SHORT: struct.Struct(">hhq"),
    MetaType.INT: struct.Struct(">iiq"),
    MetaType.LONG: struct.Struct(">qqq"),
    MetaType.TIMESTAMP: struct.Struct(">qqq"),
    MetaType.LEGACY_LONG: struct.Struct(">qqq"),
    MetaType.DOUBLE: struct.Struct(">ddd"),
    MetaType.FLOAT: struct.Struct(">fff"),
}


def parse(data: bytes) -> EncoderMeta:
    """The meta these bytes hold; shared between pages with the same bytes, so callers must not change it."""
    return _parse_bytes(bytes(data))


@functools.lru_cache(maxsize=8192)  # every page carries one, and a column's pages often carry the same
def _parse_bytes(data: bytes) -> EncoderMeta:
    fast = _parse_fixed(data)
    return fast if fast is not None else _parse(data)


def _parse_fixed(data: bytes) -> EncoderMeta | None:
    """The common metas (fixed-width max/min, a compressor name after them) in a few unpacks, since every
    page carries one; None sends anything else, and every error, to the general parser."""
    try:
        (n,) = _H.unpack_from(data, 0)
        pos = 2 + n
        schema_type, column_type, scale, precision, store, decimal_count, selected = _HEAD.unpack_from(data, pos)
        values = _FIXED_VALUES.get(schema_type)  # type: ignore[call-overload]
        if values is None:
            return None
        pos += _HEAD.size
        vmax, vmin, _ = values.unpack_from(data, pos)
        pos += values.size
        (c,) = _H.unpack_from(data, pos)
        if pos + 2 + c != len(data):
            return None
        return EncoderMeta(
            data[2 : 2 + n].decode("utf-8", errors="replace"),
            schema_type,
            column_type,
            scale,
            precision,
            store,
            decimal_count,
            selected,
            vmax,
            vmin,
            data[pos + 2 :].decode("utf-8", errors="replace"),
        )
    except struct.error:
        return None


def _parse(data: bytes) -> EncoderMeta:
    r = _In(data)
    name = r.utf()
    schema_type, column_type = r.unpack("bb")
    scale, precision = r.unpack("ii")
    (store,) = r.unpack("b")
    (decimal_count,) = r.unpack("i")
    (selected,) = r.unpack("b")
    m = EncoderMeta(name, schema_type, column_type, scale, precision, store, decimal_count, selected)
    st = schema_type
    if st in (MetaType.BYTE, MetaType.BOOLEAN):
        m.max, m.min, _ = r.unpack("bbq")
    elif st == MetaType.SHORT:
        m.max, m.min, _ = r.unpack("hhq")
    elif st == MetaType.INT:
        m.max, m.min, _ = r.unpack("iiq")
    elif st in (MetaType.LONG, MetaType.TIMESTAMP, MetaType.LEGACY_LONG):
        m.max, m.min, _ = r.unpack("qqq")
    elif st == MetaType.DOUBLE:
        m.max, m.min, _ = r.unpack("ddd")
    elif st == MetaType.FLOAT:
        m.max, m.min, _ = r.unpack("fff")
    elif st == MetaType.DECIMAL:
        vals = []
        for _ in range(3):
            (n,) = r.unpack("h")
            vals.append(_decimal_from_bytes(r.take(n)))
        m.max, m.min = vals[0], vals[1]
        m.scale, m.precision = r.unpack("ii")
    if r.pos < len(r.data):
        m.compressor = r.utf()
    return m


def serialize(m: EncoderMeta) -> bytes:
    name = m.column_name.encode("utf-8")
    out = bytearray(struct.pack(">H", len(name)) + name)
    out += struct.pack(">bbiibib", m.schema_type, m.column_type, m.scale, m.precision, m.store_type,
                       m.decimal_count, m.data_type_selected)
    st = m.schema_type
    if st in (MetaType.BYTE, MetaType.BOOLEAN):
        out += struct.pack(">bbq", int(m.max), int(m.min), 0)
    elif st == MetaType.SHORT:
        out += struct.pack(">hhq", int(m.max), int(m.min), 0)
    elif st == MetaType.INT:
        out += struct.pack(">iiq", int(m.max), int(m.min), 0)
    elif st in (MetaType.LONG, MetaType.TIMESTAMP, MetaType.LEGACY_LONG):
        out += struct.pack(">qqq", int(m.max), int(m.min), 0)
    elif st == MetaType.DOUBLE:
        out += struct.pack(">ddd", float(m.max), float(m.min), 0.0)
    elif st == MetaType.FLOAT:
        out += struct.pack(">fff", float(m.max), float(m.min), 0.0)
    elif st == MetaType.DECIMAL:
        for b in (_decimal_meta_bytes(m.max), _decimal_meta_bytes(m.min), b"\x00\x00"):
            out += struct.pack(">h", len(b)) + b
        out += struct.pack(">ii", m.scale, m.precision)
    comp = m.compressor.encode("utf-8")
    out += struct.pack(">H", len(comp)) + comp
    return bytes(out)
