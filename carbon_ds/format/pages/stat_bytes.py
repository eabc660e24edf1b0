"""Min/max statistic bytes as CarbonData writes them, and their inverse.

Two families exist, chosen by how a column is stored:

* measures (numeric columns that are not dimensions): SHORT/INT/LONG widened to an 8-byte big-endian
  long, DOUBLE an 8-byte big-endian double, FLOAT a 4-byte big-endian float followed by 4 zero bytes,
  BYTE/BOOLEAN one byte, DECIMAL one scale byte plus the big-endian two's complement unscaled value;
* dimensions: strings and binaries raw bytes, DATE its 4-byte big-endian surrogate key, and primitive
  no-dictionary dimensions (TIMESTAMP, numeric sort columns) big-endian with the sign bit flipped, so
  that unsigned byte order equals numeric order. A BYTE dimension is the one odd case: Java falls back
  to the decimal text of the value.

String statistics are dropped (presence false) when a value is longer than ``MAX_STRING_MINMAX`` bytes.
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal, localcontext

from carbon_ds.format.pages.encoder_meta import decimal_to_bytes
from carbon_ds.format.thrift.structs import DataType

MAX_STRING_MINMAX = 200
DATE_OFFSET = 2147483647 >> 1  # DATE surrogate = days since epoch + this
NULL_DATE_KEY = 1
EPOCH = dt.date(1970, 1, 1)

_XOR_WIDTH = {DataType.SHORT: 2, DataType.INT: 4, DataType.LONG: 8, DataType.TIMESTAMP: 8}


def date_key(days: int) -> int:
    return int(days) + DATE_OFFSET


def _xor_bytes(value: int, width: int) -> bytes:
    bits = 8 * width
    return ((int(value) & ((1 << bits) - 1)) ^ (1 << (bits - 1))).to_bytes(width, "big")


def _from_xor(b: bytes) -> int:
    width = len(b)
    u = int.from_bytes(b, "big") ^ (1 << (8 * width - 1))
    return u - (1 << (8 * width)) if u >= 1 << (8 * width - 1) else u


def measure_bytes(data_type: DataType, value: object, scale: int = 0) -> bytes:
    """Statistic bytes of a measure value (``value`` in Python terms: int, float, bool, Decimal)."""
    if data_type in (DataType.SHORT, DataType.INT, DataType.LONG):
        return struct.pack(">q", int(value))  # type: ignore[arg-type]
    if data_type == DataType.DOUBLE:
        return struct.pack(">d", float(value))  # type: ignore[arg-type]
    if data_type == DataType.FLOAT:
        return struct.pack(">f", float(value)) + b"\x00" * 4  # type: ignore[arg-type]
    if data_type in (DataType.BYTE, DataType.BOOLEAN):
        return struct.pack(">b", int(value))  # type: ignore[arg-type]
    if data_type == DataType.DECIMAL:
        return decimal_to_bytes(Decimal(value), scale)  # type: ignore[arg-type]
    raise ValueError(f"{data_type!r} is not a measure type")


def dimension_bytes(data_type: DataType, value: object) -> bytes:
    """Statistic bytes of a dimension value; DATE takes the surrogate key, TIMESTAMP epoch milliseconds."""
    if data_type in _XOR_WIDTH:
        return _xor_bytes(int(value), _XOR_WIDTH[data_type])  # type: ignore[arg-type]
    if data_type == DataType.DATE:
        return struct.pack(">i", int(value))  # type: ignore[arg-type]
    if data_type == DataType.BOOLEAN:
        return b"\x01" if value else b"\x00"
    if data_type == DataType.BYTE:
        return str(int(value)).encode()  # type: ignore[arg-type]
    if data_type == DataType.DECIMAL:
        return decimal_to_bytes(Decimal(value), max(0, -int(Decimal(value).as_tuple().exponent)))  # type: ignore[arg-type]
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)  # type: ignore[arg-type]


def stat_bytes(data_type: DataType, is_dimension: bool, value: object, scale: int = 0) -> bytes:
    return dimension_bytes(data_type, value) if is_dimension else measure_bytes(data_type, value, scale)


def value_from_bytes(data_type: DataType, is_dimension: bool, b: bytes, scale: int = 0) -> object:
    """The inverse of :func:`stat_bytes`: a Python value to compare literals with.

    DATE returns a ``datetime.date``, TIMESTAMP epoch milliseconds, strings ``str`` (``bytes`` when not
    UTF-8), BINARY ``bytes``. Returns None for empty bytes (no statistic).
    """
    b = bytes(b)
    if not b:
        return None
    if data_type == DataType.DECIMAL:
        unscaled = int.from_bytes(b[1:], "big", signed=True) if len(b) > 1 else 0
        with localcontext() as ctx:  # exact at DECIMAL(38)
            ctx.prec = 100
            return Decimal(unscaled).scaleb(-b[0])
    if is_dimension:
        if data_type in _XOR_WIDTH:
            return _from_xor(b)
        if data_type == DataType.DATE:
            return EPOCH + dt.timedelta(days=struct.unpack(">i", b)[0] - DATE_OFFSET)
        if data_type == DataType.BOOLEAN:
            return b[0] != 0
        if data_type == DataType.BYTE:
            return int(b.decode())
        if data_type == DataType.BINARY:
            return b
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            return b
    if data_type in (DataType.SHORT, DataType.INT, DataType.LONG):
        return struct.unpack(">q", b)[0]
    if data_type == DataType.DOUBLE:
        return struct.unpack(">d", b)[0]
    if data_type == DataType.FLOAT:
        return struct.unpack(">f", b[:4])[0]
    if data_type == DataType.BOOLEAN:
        return b[0] != 0
    if data_type == DataType.BYTE:
        return struct.unpack(">b", b[:1])[0]
    raise ValueError(f"no statistic decoding for {data_type!r}")

