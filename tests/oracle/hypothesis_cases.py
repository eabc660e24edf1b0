"""Cases drawn by hypothesis, beside the seeded ones (oracle_cases.py): the same Case shape, values from
hypothesis's own strategies (its integer, float, text and date edges), a few dozen cases drawn once with a fixed
seed so that every run checks the same ones. They go through the same JVM batch and checks as the seeded cases.

Values keep to what CarbonData's CSV load and CarbonReader hold exactly (see oracle_cases.py): dates and
timestamps from 1600 on, timestamps to the millisecond, no load control characters or null marker in text,
printable binaries, string leaves in complex values.
"""

from __future__ import annotations

import datetime as dt
import pickle
import string
import subprocess
import sys
from decimal import Context, Decimal
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from oracle_cases import (
    COMPLEX,
    COMPRESSORS,
    DAY_MAX,
    DAY_MIN,
    EPOCH,
    MS_MAX,
    MS_MIN,
    PRIMITIVES,
    ROW_ID,
    SORTABLE,
    Case,
    Column,
    random_filters,
)

FIRST_ID = 100_000  # hypothesis cases' ids (Case.seed), apart from the seeded ones
SEED = 45  # the same cases on every run
# the load's complex delimiters \\001-\\003, and surrogates; "\\N" and "@NU#LL$!" are kept out below
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02\x03"), max_size=20).filter(
    lambda s: s not in ("\\N", "@NU#LL$!"))
BITS = {"smallint": 16, "int": 32, "bigint": 64}


def _values(kind: str, arrow: pa.DataType) -> st.SearchStrategy:
    if kind in BITS:
        bits = BITS[kind]
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if kind == "float":
        return st.floats(width=32)
    if kind == "double":
        return st.floats()
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        return TEXT
    if kind == "date":
        return st.integers(DAY_MIN, DAY_MAX).map(lambda d: EPOCH + dt.timedelta(days=d))
    if kind == "timestamp":
        return st.integers(MS_MIN, MS_MAX).map(lambda ms: dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms))
    if kind == "binary":
        return st.binary(max_size=30).map(lambda b: "".join(string.ascii_letters[c % 52] for c in b).encode())
    if kind == "decimal":
        limit = 10**arrow.precision - 1
        exact = Context(prec=60)  # the default context rounds to 28 digits
        return st.integers(-limit, limit).map(lambda u: Decimal(u).scaleb(-arrow.scale, exact))
    if kind == "array":
        return st.lists(TEXT, min_size=1, max_size=4)
    if kind == "struct":
        return st.fixed_dictionaries({"a": TEXT, "b": TEXT})
    if kind == "map":
        return st.lists(TEXT, min_size=1, max_size=3).map(lambda vs: [(f"k{i}", v) for i, v in enumerate(vs)])
    raise AssertionError(kind)


def _arrow(kind: str, draw) -> pa.DataType:
    if kind == "decimal":
        precision = draw(st.integers(1, 38))
        return pa.decimal128(precision, draw(st.integers(0, precision)))
    return {"int": pa.int32(), "smallint": pa.int16(), "bigint": pa.int64(), "float": pa.float32(),
            "double": pa.float64(), "boolean": pa.bool_(), "string": pa.string(), "date": pa.date32(),
            "timestamp": pa.timestamp("ms"), "binary": pa.binary(), "array": pa.list_(pa.string()),
            "struct": pa.struct([("a", pa.string()), ("b", pa.string())]),
            "map": pa.map_(pa.string(), pa.string())}[kind]


@st.composite
def cases(draw) -> Case:
    kinds = draw(st.lists(st.sampled_from(PRIMITIVES + COMPLEX), min_size=1, max_size=5))
    rows = draw(st.integers(1, 60))
    columns = [Column(ROW_ID, "int", pa.int32(), list(range(rows)))]
    for n, kind in enumerate(kinds):
        arrow = _arrow(kind, draw)
        values = draw(st.lists(st.none() | _values(kind, arrow), min_size=rows, max_size=rows))
        columns.append(Column(f"c{n}_{kind}", kind, arrow, values))
    case = Case(0, columns)
    options: dict = {}
    sortable = [c.name for c in columns[1:] if c.kind in SORTABLE]
    if sortable and draw(st.booleans()):
        options["sort_columns"] = draw(st.lists(st.sampled_from(sortable), min_size=1, max_size=2, unique=True))
        options["sort_scope"] = draw(st.sampled_from(["local_sort", "no_sort"]))
    dictionary = draw(st.none() | st.booleans())
    if dictionary is not None:
        options["local_dictionary_enable"] = dictionary
        if dictionary:
            options["local_dictionary_threshold"] = draw(st.sampled_from([1, 2, 10, 1000]))
    options["compressor"] = draw(st.sampled_from(COMPRESSORS))
    case.options = options
    cuts = sorted(draw(st.sets(st.integers(1, rows - 1), max_size=2))) if rows > 1 else []
    bounds = [0, *cuts, rows]
    case.files = list(zip(bounds, bounds[1:], strict=False))
    case.filters = random_filters(case, draw(st.integers(0, 2**32)), 3)
    return case


def hypothesis_cases(count: int) -> list[Case]:
    """``count`` cases, the same ones on every run, ids from FIRST_ID.

    Drawn in a child process: besides its seed, Hypothesis draws on the literals of the local modules a process
    has loaded (hypothesis.internal.conjecture.providers), so the same seed in a process that has imported more
    of the project draws other cases."""
    if count <= 0:
        return []
    done = subprocess.run([sys.executable, str(Path(__file__)), str(count)], cwd=Path(__file__).parent,
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"drawing the hypothesis cases failed: {done.stderr.decode(errors='replace')[-3000:]}")
    return pickle.loads(done.stdout)


def _draw(count: int) -> list[Case]:
    drawn: list[Case] = []

    @seed(SEED)
    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(cases())
    def collect(case: Case) -> None:
        drawn.append(case)

    collect()
    for n, case in enumerate(drawn[:count]):
        case.seed = FIRST_ID + n
    return drawn[:count]


if __name__ == "__main__":
    sys.stdout.buffer.write(pickle.dumps(_draw(int(sys.argv[1]))))
