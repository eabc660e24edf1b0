"""CarbonData tables: schema file, tablestatus, segment files, locks and the write protocol."""

from carbon_ds.table.table import CarbonTable, DataFile, SegmentInfo

__all__ = ["CarbonTable", "DataFile", "SegmentInfo"]
