"""Splitting a ``;``-separated script into statements for ``carbon_ds.sql``.

A ``;`` ends a statement only outside string literals, quoted identifiers and comments, as the statement
dialect of carbon_ds.expressions.lexer reads them (so 'it’s' is one string). A SQL scripting block
(``BEGIN ... END``, with or without a label) is Spark's one statement and is never split.
"""

from __future__ import annotations

from dataclasses import dataclass

from carbon_ds.expressions.lexer import STATEMENT, Token, scan


@dataclass(frozen=True)
class Statement:
    text: str  # stripped, without its ``;``
    start: int  # character offset of the statement in the script


def split_statements(script: str) -> list[Statement]:
    """The statements of ``script`` in order; empty ones (``;;``, a trailing ``;``, comments only) are
    left out. An unterminated string or comment runs to the end (the statement's parser then says so)."""
    toks = list(scan(script, STATEMENT, strict=False))
    if _is_block(toks):
        return [Statement(script[toks[0].pos:].strip().rstrip(";").strip(), toks[0].pos)]
    out: list[Statement] = []
    first: Token | None = None  # the current statement's first token
    for t in toks:
        if t.kind == "punct" and t.text == ";":
            if first is not None:
                out.append(Statement(script[first.pos:t.pos].strip(), first.pos))
            first = None
        elif first is None:
            first = t
    if first is not None:
        out.append(Statement(script[first.pos:].strip(), first.pos))
    return out


def _is_block(toks: list[Token]) -> bool:
    """``BEGIN`` or ``label: BEGIN`` first."""
    if toks and toks[0].is_kw("BEGIN"):
        return True
    return (len(toks) > 2 and toks[0].kind == "word" and toks[1].kind == "punct" and toks[1].text == ":"
            and toks[2].is_kw("BEGIN"))
