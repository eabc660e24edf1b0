"""Splitting a ``;``-separated script into statements for ``carbon_ds.sql``.

A ``;`` ends a statement only outside string literals (straight quotes with backslash escapes, the
typographic quotes carbon_ds.ddl.statement_parser accepts), back-quoted identifiers and comments (``--`` to the end
of the line, ``/* ... */`` nested as Spark nests them). A SQL scripting block (``BEGIN ... END``, with or
without a label) is Spark's one statement and is never split.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# opening quote -> the characters that close it (as carbon_ds.ddl.statement_parser: 'it’s' is one string)
_QUOTES = {"'": "'", '"': '"', "`": "`", "‘": "’'", "’": "’'", "“": '”"', "”": '”"'}
_BLOCK = re.compile(r"^\s*(?:[A-Za-z_]\w*\s*:\s*)?BEGIN\b", re.IGNORECASE)


@dataclass(frozen=True)
class Statement:
    text: str  # stripped, without its ``;``
    start: int  # character offset of the statement in the script


def split_statements(script: str) -> list[Statement]:
    """The statements of ``script`` in order; empty ones (``;;``, a trailing ``;``, comments only) are
    left out. An unterminated string or comment runs to the end (the statement's parser then says so)."""
    if _BLOCK.match(_without_leading_comments(script)):
        return [Statement(script.strip().rstrip(";").strip(), 0)] if script.strip() else []
    out: list[Statement] = []
    start, i, n, content = 0, 0, len(script), False
    while i < n:
        c = script[i]
        if script.startswith("--", i):
            j = script.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if script.startswith("/*", i):
            i = _comment_end(script, i)
            continue
        if c in _QUOTES:
            i, content = _string_end(script, i), True
            continue
        if c == ";":
            _add(out, script, start, i, content)
            start, content = i + 1, False
        elif not c.isspace():
            content = True
        i += 1
    _add(out, script, start, n, content)
    return out


def _add(out: list[Statement], script: str, start: int, end: int, content: bool) -> None:
    if not content:
        return
    piece = script[start:end]
    rest = _without_leading_comments(piece)  # the statement's first word must lead its text
    out.append(Statement(rest.strip(), start + len(piece) - len(rest)))


def _string_end(script: str, i: int) -> int:
    closers, j, n = _QUOTES[script[i]], i + 1, len(script)
    while j < n and script[j] not in closers:
        j += 2 if script[j] == "\\" and script[i] != "`" else 1
    return min(j + 1, n)


def _comment_end(script: str, i: int) -> int:
    depth, j, n = 0, i, len(script)
    while j < n:
        if script.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif script.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return j
        else:
            j += 1
    return n


def _without_leading_comments(text: str) -> str:
    while True:
        text = text.lstrip()
        if text.startswith("--"):
            j = text.find("\n")
            text = "" if j < 0 else text[j + 1 :]
        elif text.startswith("/*"):
            text = text[_comment_end(text, 0) :]
        else:
            return text
