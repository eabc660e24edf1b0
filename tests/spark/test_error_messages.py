"""Errors raised inside Spark's Python workers reach the user with our message first."""

import pytest

from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.spark.messages import ours, surface


def test_spark_error_text_carries_our_error_and_type():
    text = ("[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: Traceback (most recent "
            "call last):\n  File \"x.py\", line 3, in call\ncarbon_ds.errors.CarbonTableError: table /t is "
            "locked\n SQLSTATE: 38000")
    found = ours(RuntimeError(text))
    assert isinstance(found, CarbonTableError) and str(found) == "table /t is locked"
    assert ours(RuntimeError("no carbon error here")) is None
    assert ours(RuntimeError("carbon_ds.errors.NotOurs: x")) is None


def test_missing_table_through_spark_has_a_short_traceback(spark, tmp_path):
    missing = str(tmp_path / "nothing")
    with pytest.raises(Exception) as info:
        spark.read.format("carbondata").load(missing).collect()
    text = str(info.value)
    assert "does not exist" in text and missing in text
    # one frame of ours (the entry point), not the whole call chain
    assert text.count('File "') <= 2, text


def test_surface_raises_our_error_with_spark_error_as_cause():
    spark_error = RuntimeError("[PYTHON_DATA_SOURCE_ERROR] Failed: Traceback (most recent call last):\n"
                               "carbon_ds.errors.CarbonOptionError: option filter='a >': cannot parse\n"
                               " SQLSTATE: 38000")
    with pytest.raises(CarbonOptionError) as info, surface():
        raise spark_error
    assert str(info.value) == "option filter='a >': cannot parse"
    assert info.value.__cause__ is spark_error
    with pytest.raises(KeyError), surface():
        raise KeyError("not ours")
