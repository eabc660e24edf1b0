"""The ``carbon-ds`` command line."""

from carbon_ds.cli.main import main

__all__ = ["main"]
