"""Writers of CarbonData files."""

from carbon_ds.writers.carbon_file_writer import CarbonWriter, WriterOptions, WrittenFile, write_files

__all__ = ["CarbonWriter", "WriterOptions", "WrittenFile", "write_files"]
