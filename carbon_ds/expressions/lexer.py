"""The one SQL lexer: filter strings, UPDATE's SET values, the statements carbon_ds.sql parses itself and
the split of a script into statements all read their text through ``scan``.

What differs between those languages is data (a ``Dialect``): which quotes open strings and quoted
identifiers, how a quote is escaped, what a word, a number, an operator and a punctuation mark are. What
they share is the scan itself: comments (``--`` to the end of the line, ``/* */`` nested as Spark nests
them) are skipped, a string or quoted identifier is one token with its escapes resolved, and every token
knows where it starts and ends in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from carbon_ds.errors import CarbonOptionError


class LexError(CarbonOptionError):
    """Text no token of the dialect starts with; ``pos`` is its offset."""

    def __init__(self, message: str, pos: int):
        super().__init__(message)
        self.pos = pos


@dataclass(frozen=True)
class Token:
    kind: str  # "word", "number", "string", "ident" (quoted identifier), "op", "punct", "other"
    text: str  # a string's or quoted identifier's content with escapes resolved; else as written
    pos: int
    end: int

    def is_kw(self, *words: str) -> bool:
        return self.kind == "word" and self.text.upper() in words


@dataclass(frozen=True)
class Dialect:
    strings: Mapping[str, str]  # opening quote -> the characters that close it
    identifiers: Mapping[str, str]
    backslash_escapes: bool  # \x in a string is x; otherwise a doubled closing quote is one quote
    word: re.Pattern
    number: re.Pattern
    operators: tuple[str, ...]  # longest first
    punct: str


# Word processors turn quotes typographic, and also make an opening quote a closing one (”orc”), so those
# open strings too. A string opened with a straight quote ends only at the same straight quote: 'it’s'.
_TYPOGRAPHIC = {"'": "'", "‘": "’'", "’": "’'", '"': '"', "“": '”"', "”": '”"'}

# Spark SQL's spelling for filters: 'strings' ('' is a quote), `names` and "names", 1L / 2.5D / 1e3 numbers;
# a sign is an operator (``id-1`` is a subtraction), which the parser folds into a number literal
FILTER = Dialect(
    strings={"'": "'"}, identifiers={"`": "`", '"': '"'}, backslash_escapes=False,
    word=re.compile(r"[A-Za-z_][A-Za-z0-9_.]*"),
    number=re.compile(r"(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[LlDd]?"),
    operators=("<=>", "<=", ">=", "<>", "!=", "==", "||", "=", "<", ">", "+", "-", "*", "/", "%"), punct="(),",
)
# UPDATE ... SET values: arithmetic, so a sign is an operator
SET_VALUE = Dialect(
    strings={"'": "'"}, identifiers={"`": "`"}, backslash_escapes=False,
    word=re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?"),  # alias.col in MERGE
    number=re.compile(r"\d+\.\d*|\.\d+|\d+"),
    operators=("+", "-", "*", "/"), punct="()",
)
# CarbonData's statements as its documents write them: typographic quotes, backslash escapes
STATEMENT = Dialect(
    strings=_TYPOGRAPHIC, identifiers={"`": "`"}, backslash_escapes=True,
    word=re.compile(r"[^\W\d][\w$]*"), number=re.compile(r"-?\d+(?:\.\d+)?"),
    operators=(), punct="(),=.;<>:",
)


def scan(text: str, dialect: Dialect, strict: bool = True) -> Iterator[Token]:
    """The tokens of ``text``. ``strict``: an unterminated string or identifier, or a character no token
    starts with, is a LexError; otherwise the string runs to the end and the character is an "other" token
    (splitting a script must not fail on what only Spark's parser understands)."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            i = comment_end(text, i)
        elif c in dialect.strings or c in dialect.identifiers:
            tok = _quoted(text, i, dialect, strict)
            i = tok.end
            yield tok
        else:
            tok = _plain(text, i, dialect)
            if tok is None:
                if strict:
                    raise LexError(f"unexpected {text[i:i + 10]!r} at position {i}", i)
                tok = Token("other", c, i, i + 1)
            i = tok.end
            yield tok


def tokens(text: str, dialect: Dialect) -> list[Token]:
    return list(scan(text, dialect))


def _quoted(text: str, i: int, dialect: Dialect, strict: bool) -> Token:
    string = text[i] in dialect.strings
    closers = dialect.strings[text[i]] if string else dialect.identifiers[text[i]]
    buf: list[str] = []
    j, n = i + 1, len(text)
    while j < n:
        ch = text[j]
        if string and dialect.backslash_escapes and ch == "\\" and j + 1 < n:
            buf.append(text[j + 1])
            j += 2
        elif ch in closers:
            if not dialect.backslash_escapes and text.startswith(ch, j + 1):  # '' inside '...'
                buf.append(ch)
                j += 2
            else:
                return Token("string" if string else "ident", "".join(buf), i, j + 1)
        else:
            buf.append(ch)
            j += 1
    if strict:
        what = "string" if string else "quoted identifier"
        raise LexError(f"unterminated {what} starting at character {i}: {text[i:i + 40]!r}; expected a closing "
                       "quote", i)
    return Token("string" if string else "ident", "".join(buf), i, n)


def _plain(text: str, i: int, dialect: Dialect) -> Token | None:
    for kind, pattern in (("number", dialect.number), ("word", dialect.word)):
        m = pattern.match(text, i)
        if m and m.end() > i:
            return Token(kind, m.group(), i, m.end())
    for op in dialect.operators:
        if text.startswith(op, i):
            return Token("op", op, i, i + len(op))
    if text[i] in dialect.punct:
        return Token("punct", text[i], i, i + 1)
    return None


def comment_end(text: str, i: int) -> int:
    """The offset after the ``/* ... */`` comment starting at ``i`` (nested ones included); the end of the
    text when it is unterminated."""
    depth, j, n = 0, i, len(text)
    while j < n:
        if text.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif text.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return j
        else:
            j += 1
    return n
