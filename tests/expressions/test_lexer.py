"""The one SQL lexer (carbon_ds.expressions.lexer): each dialect's quoting, comments and positions."""

import pytest

from carbon_ds.errors import CarbonOptionError
from carbon_ds.expressions.lexer import FILTER, SET_VALUE, STATEMENT, scan, tokens


def kinds(text, dialect):
    return [(t.kind, t.text) for t in tokens(text, dialect)]


def test_filter_dialect_is_spark_sql_spelling():
    assert kinds("a.b >= -1.5e3 AND `x``y` <=> 'it''s' -- trailing", FILTER) == [
        ("word", "a.b"), ("op", ">="), ("op", "-"), ("number", "1.5e3"), ("word", "AND"), ("ident", "x`y"),
        ("op", "<=>"), ("string", "it's")]
    assert kinds('"col" IN (1L, 2D)', FILTER) == [
        ("ident", "col"), ("word", "IN"), ("punct", "("), ("number", "1L"), ("punct", ","), ("number", "2D"),
        ("punct", ")")]


def test_set_values_keep_the_sign_an_operator():
    assert kinds("c -1", SET_VALUE) == [("word", "c"), ("op", "-"), ("number", "1")]


def test_statement_dialect_takes_typographic_quotes_and_backslashes():
    assert kinds("OPTIONS(‘path’=“/a b”, 'k'='it’s', 'e'='a\\'b') /* x /* y */ z */ ;", STATEMENT) == [
        ("word", "OPTIONS"), ("punct", "("), ("string", "path"), ("punct", "="), ("string", "/a b"),
        ("punct", ","), ("string", "k"), ("punct", "="), ("string", "it’s"), ("punct", ","),
        ("string", "e"), ("punct", "="), ("string", "a'b"), ("punct", ")"), ("punct", ";")]
    assert kinds("decimal(10,2) array<int>", STATEMENT)[-3:] == [("punct", "<"), ("word", "int"), ("punct", ">")]


def test_positions_cover_the_source_text():
    text = "  x = 'a''b'"
    toks = tokens(text, FILTER)
    assert [(t.pos, t.end) for t in toks] == [(2, 3), (4, 5), (6, 12)]
    assert text[toks[2].pos:toks[2].end] == "'a''b'"


def test_strict_errors_name_the_position_and_lenient_scan_goes_on():
    with pytest.raises(CarbonOptionError, match=r"unterminated string starting at character 4"):
        tokens("x = 'open", FILTER)
    with pytest.raises(CarbonOptionError, match=r"unexpected '~ 1' at position 2"):
        tokens("i ~ 1", FILTER)
    lenient = list(scan("SELECT a ~ b; 'open", STATEMENT, strict=False))
    assert [(t.kind, t.text) for t in lenient] == [
        ("word", "SELECT"), ("word", "a"), ("other", "~"), ("word", "b"), ("punct", ";"), ("string", "open")]
