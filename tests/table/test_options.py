"""One parser for every boolean option, table property and setting: the same answers and the same error
(naming the setting and the value found) wherever a boolean is read."""

from __future__ import annotations

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.errors import CarbonOptionError
from carbon_ds.table.meta.options import parse_bool
from carbon_ds.table.meta.schema.properties import TableProperties
from carbon_ds.table.ops.compaction.selection import Settings
from carbon_ds.table.table import CarbonTable


@pytest.mark.parametrize("text,want", [("true", True), (" TRUE ", True), ("False", False), ("false\n", False)])
def test_parse_bool_accepts_any_case_and_spacing(text, want):
    assert parse_bool(text, "option x") is want


@pytest.mark.parametrize("text", ["yes", "1", "ture", "t"])
def test_parse_bool_names_the_setting_and_value(text):
    with pytest.raises(CarbonOptionError, match=f"option x must be true or false, found {text!r}"):
        parse_bool(text, "option x")


def test_empty_takes_the_default_only_when_there_is_one():
    assert parse_bool("", "x", True) is True and parse_bool(None, "x", False) is False
    with pytest.raises(CarbonOptionError, match="x must be true or false"):
        parse_bool("", "x")


def test_write_option_table_property_and_setting_share_the_rule(tmp_path):
    with pytest.raises(CarbonOptionError, match="option 'local_dictionary_enable' must be true or false, found 'yes'"):
        carbon_ds.write_table(pa.table({"a": [1]}), tmp_path / "t", local_dictionary_enable="yes")
    props = TableProperties({"local_dictionary_enable": "maybe"}, "table t")
    with pytest.raises(CarbonOptionError, match="table property local_dictionary_enable of table t must be true"):
        props.as_bool("local_dictionary_enable", True)
    carbon_ds.write_table(pa.table({"a": [1]}), tmp_path / "u")
    t = CarbonTable.open(tmp_path / "u")
    with pytest.raises(CarbonOptionError, match="must be true or false, found 'on'"):
        Settings(t, {"carbon.enable.auto.load.merge": "on"}).auto_load_merge()
    assert Settings(t, {"carbon.enable.auto.load.merge": " TRUE"}).auto_load_merge() is True
