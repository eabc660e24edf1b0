"""One predicate model for filters from SQL text, Spark and Python objects."""

from carbon_ds.expressions.bind import bind, filter_table, to_arrow
from carbon_ds.expressions.filter_parser import parse
from carbon_ds.expressions.might_match import ColumnStats, might_match
from carbon_ds.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundExpr,
    Compare,
    Expr,
    ExprVisitor,
    In,
    IsNull,
    Not,
    NotIn,
    NotNull,
    Or,
    Predicate,
    StartsWith,
    UnsupportedExpressionError,
    and_,
    between,
    bounded,
    or_,
    push_not,
    visit,
)

__all__ = [
    "AlwaysFalse", "AlwaysTrue", "And", "BoundExpr", "ColumnStats", "Compare", "Expr", "ExprVisitor", "In",
    "IsNull", "Not", "NotIn", "NotNull", "Or", "Predicate", "StartsWith", "UnsupportedExpressionError", "and_", "between",
    "bind", "bounded", "filter_table", "might_match", "or_", "parse", "push_not", "to_arrow", "visit",
]
