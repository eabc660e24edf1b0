"""Mixed table read: the carbondata data source reading every segment (Parquet/ORC through pyarrow in
Python workers) vs the Spark-native union (Spark's own Parquet/ORC scans of the external segments unioned
with the data source's read of the carbondata segments), for a full scan, a projection + filter, and count.

    .venv/bin/python benchmarks/mixed_read.py --rows 2000000 --repeat 3
"""

from __future__ import annotations

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import parser, save, spark_session, timed  # noqa: E402


def main() -> None:
    args = parser(__doc__, rows=1_000_000, repeat=3).parse_args()
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.orc as po
    import pyarrow.parquet as pq

    import carbon_ds
    from carbon_ds.table.table import CarbonTable

    spark = spark_session("4g")
    tmp = tempfile.mkdtemp(prefix="mixed_read_")
    n = args.rows // 3

    def part(lo):
        ids = pa.array(range(lo, lo + n), pa.int64())
        return pa.table({"id": ids, "v": pc.multiply(ids, 0.5), "s": pc.cast(pc.divide(ids, 1000), pa.string())})

    carbon_ds.write_table(part(0), f"{tmp}/t")
    os.makedirs(f"{tmp}/pq")
    pq.write_table(part(n), f"{tmp}/pq/a.parquet", row_group_size=100_000)
    os.makedirs(f"{tmp}/orc")
    po.write_table(part(2 * n), f"{tmp}/orc/a.orc", stripe_size=8 << 20)
    t = CarbonTable.open(f"{tmp}/t")
    t.add_segment(f"{tmp}/pq", "parquet")
    t.add_segment(f"{tmp}/orc", "orc")
    flt = f"id >= {n + n // 2} AND id < {n + n // 2 + 1000}"
    results = {}
    try:
        for native in (False, True):
            name = "native_union" if native else "data_source"
            results[name] = {
                "full_scan_s": timed(lambda nat=native: carbon_ds.read(spark, f"{tmp}/t", native=nat)
                                     .selectExpr("sum(id)", "sum(v)", "count(s)").collect(), args.repeat),
                "filter_s": timed(lambda nat=native: carbon_ds.read(spark, f"{tmp}/t", columns=["id", "s"], filter=flt,
                                                                   native=nat).collect(), args.repeat),
                "count_s": timed(lambda nat=native: carbon_ds.read(spark, f"{tmp}/t", native=nat).count(), args.repeat),
            }
            print(name, results[name])
    finally:
        spark.stop()
    print(save(args.out, "mixed_read.json", {"rows": args.rows, "repeat": args.repeat, "results": results}))


if __name__ == "__main__":
    main()
