"""One predicate model for filters from SQL text, Spark and Python objects."""

from carbon_ds.expressions.bind import bind, filter_table, to_arrow
from carbon_ds.expressions.minmax import ColumnStats, might_match
from carbon_ds.expressions.parser import parse
from carbon_ds.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Compare,
    Expr,
    In,
    IsNull,
    Not,
    NotIn,
    NotNull,
    Or,
    StartsWith,
    and_,
    between,
    or_,
    push_not,
)

__all__ = [
    "AlwaysFalse", "AlwaysTrue", "And", "ColumnStats", "Compare", "Expr", "In", "IsNull", "Not", "NotIn",
    "NotNull", "Or", "StartsWith", "and_", "between", "bind", "filter_table", "might_match", "or_", "parse",
    "push_not", "to_arrow",
]
