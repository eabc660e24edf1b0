"""Readers of CarbonData data files."""

from carbon_ds.readers.carbon_file import CarbonDataFile, read_folder

__all__ = ["CarbonDataFile", "read_folder"]
