"""Generated vehicle-telemetry data (the production case of the partitioning talk): VIN id, timestamp,
~20 dimension and ~10 measure columns. Used by the demo and the benchmarks; deterministic per seed."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

TS_START_MS = 1_636_934_400_000  # 2021-11-15 00:00:00 UTC

_DIMENSIONS = {
    "brand": ["BYD", "NIO", "XPeng", "Li", "Geely", "SAIC", "GAC", "Changan"],
    "model": [f"M{i:02d}" for i in range(40)],
    "province": ["Guangdong", "Zhejiang", "Jiangsu", "Shanghai", "Beijing", "Sichuan", "Hubei", "Shandong"],
    "city": [f"city_{i:03d}" for i in range(120)],
    "charge_state": ["parking", "driving", "charging", "charged", "idle"],
    "gear": ["P", "R", "N", "D", "S"],
    "run_mode": ["EV", "PHEV", "FV"],
    "dcdc_state": ["on", "off"],
    "vehicle_state": ["started", "stopped", "other"],
    "alarm_level": ["0", "1", "2", "3"],
    "fault_code": [f"F{i:04d}" for i in range(300)],
    "firmware": [f"v{a}.{b}" for a in range(1, 4) for b in range(10)],
    "battery_type": ["LFP", "NCM", "NCA"],
    "motor_state": ["consuming", "generating", "off", "ready"],
    "engine_state": ["on", "off"],
    "location_valid": ["valid", "invalid"],
    "network": ["4G", "5G", "3G"],
    "operator": ["CMCC", "CU", "CT"],
    "platform": ["gb32960", "private"],
}


def schema() -> pa.Schema:
    fields = [pa.field("vin", pa.string()), pa.field("ts", pa.timestamp("us", tz="UTC"))]
    fields += [pa.field(name, pa.string()) for name in _DIMENSIONS]
    fields += [pa.field("day", pa.date32())]
    fields += [
        pa.field("speed", pa.float64()),
        pa.field("mileage", pa.int64()),
        pa.field("voltage", pa.float64()),
        pa.field("current", pa.float64()),
        pa.field("soc", pa.int32()),
        pa.field("insulation", pa.int32()),
        pa.field("accel_pedal", pa.int16()),
        pa.field("brake_pedal", pa.int16()),
        pa.field("longitude", pa.float64()),
        pa.field("latitude", pa.float64()),
    ]
    return pa.schema(fields)


def batch(rows: int, seed: int = 0, vins: int = 10_000, start_ms: int = TS_START_MS) -> pa.RecordBatch:
    rng = np.random.default_rng(seed)
    vin_ids = rng.integers(0, vins, rows)
    vin = pa.array(np.char.add("LSVAU2180N2", np.char.zfill(vin_ids.astype(str), 6)).astype(object), pa.string())
    ts_ms = start_ms + np.sort(rng.integers(0, 14 * 86_400_000, rows))
    cols: list[pa.Array] = [vin, pa.array(ts_ms * 1000, pa.timestamp("us", tz="UTC"))]
    for values in _DIMENSIONS.values():
        idx = rng.integers(0, len(values), rows).astype(np.int32)
        cols.append(pa.DictionaryArray.from_arrays(pa.array(idx), pa.array(values)).cast(pa.string()))
    cols.append(pa.array((ts_ms // 86_400_000).astype(np.int32), pa.date32()))
    speed = np.round(rng.uniform(0, 160, rows), 1)
    cols += [
        pa.array(speed, mask=rng.random(rows) < 0.01),
        pa.array(vin_ids.astype(np.int64) * 7 + rng.integers(0, 200_000, rows)),
        pa.array(np.round(rng.uniform(300, 420, rows), 1)),
        pa.array(np.round(rng.normal(0, 50, rows), 1)),
        pa.array(rng.integers(0, 101, rows).astype(np.int32)),
        pa.array(rng.integers(0, 60_000, rows).astype(np.int32)),
        pa.array(rng.integers(0, 101, rows).astype(np.int16)),
        pa.array(rng.integers(0, 101, rows).astype(np.int16)),
        pa.array(np.round(rng.uniform(73, 135, rows), 6)),
        pa.array(np.round(rng.uniform(18, 53, rows), 6)),
    ]
    return pa.RecordBatch.from_arrays(cols, schema=schema())


def batches(rows: int, seed: int = 0, chunk: int = 500_000) -> Iterator[pa.RecordBatch]:
    done = 0
    part = 0
    while done < rows:
        n = min(chunk, rows - done)
        yield batch(n, seed=seed * 1000 + part)
        done += n
        part += 1


def table(rows: int, seed: int = 0) -> pa.Table:
    return pa.Table.from_batches(list(batches(rows, seed)), schema=schema())
