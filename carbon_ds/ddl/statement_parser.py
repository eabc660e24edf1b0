"""A small parser for the CarbonData statements carbon_ds.sql handles itself.

Keywords are case-insensitive. String literals take straight or typographic quotes (‘...’, “...”, and
mixes such as ‘...' that pasting from documents produces). Identifiers may be `back-quoted`.
Anything that is not one of these statements yields None and goes to spark.sql unchanged.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from carbon_ds.ddl.materialized_views import parse_statement as parse_view_statement
from carbon_ds.errors import CarbonOptionError
from carbon_ds.expressions.lexer import STATEMENT, LexError, Token, scan, tokens


def tokenize(text: str) -> list[Token]:
    try:
        return tokens(text, STATEMENT)
    except LexError as e:
        raise CarbonOptionError(f"{e} in {text[:60]!r}") from None


# ------------------------------------------------------------------------------------------ statements
@dataclass(frozen=True)
class TableName:
    db: str | None
    name: str

    def __str__(self) -> str:
        return f"{self.db}.{self.name}" if self.db else self.name


@dataclass
class CreateTable:
    table: TableName
    columns: list[tuple[str, str]]  # (name, type text)
    partition_columns: list[tuple[str, str]] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    location: str | None = None
    if_not_exists: bool = False
    external: bool = False


@dataclass
class DropTable:
    table: TableName
    if_exists: bool = False


@dataclass
class AddSegment:
    table: TableName
    options: dict[str, str]


@dataclass
class ShowSegments:
    table: TableName
    limit: int | None = None


@dataclass
class DeleteSegments:
    table: TableName
    ids: list[str] | None = None
    before: str | None = None


@dataclass
class CleanFiles:
    table: TableName
    options: dict[str, str] = field(default_factory=dict)


@dataclass
class Insert:
    table: TableName
    overwrite: bool
    span: tuple[int, int]  # where the table name sits in the statement text, to point it at the view
    partition: dict[str, str | None] | None = None  # PARTITION (c = v, ...): static values (None: dynamic col)
    query_start: int | None = None  # with a PARTITION clause: where the SELECT begins


@dataclass
class ShowPartitions:
    table: TableName


@dataclass
class AlterPartition:
    table: TableName
    action: str  # "drop" or "add"
    spec: dict[str, str | None]
    if_exists: bool = False
    location: str | None = None  # ADD PARTITION ... LOCATION '<folder>'


@dataclass
class Compact:
    """ALTER TABLE t COMPACT 'MINOR' | 'MAJOR' | 'CUSTOM' WHERE SEGMENT.ID IN (1, 2, 5)
    [OPTIONS('include_external'='true')]."""

    table: TableName
    kind: str  # minor | major | custom
    segments: list[str] | None = None
    include_external: bool = False


_COMPACT = re.compile(
    r"^\s*ALTER\s+TABLE\s+(?P<name>\S+)\s+COMPACT\s+(?P<q>['\"])(?P<kind>[A-Za-z_]+)(?P=q)\s*"
    r"(?:WHERE\s+SEGMENT\.ID\s+IN\s*\((?P<ids>[^)]*)\))?\s*"
    r"(?:OPTIONS\s*\(\s*(?P<oq>['\"])include_external(?P=oq)\s*=\s*(?P<vq>['\"])(?P<ext>true|false)(?P=vq)\s*\))?"
    r"\s*$", re.IGNORECASE)


def _compact(text: str) -> Compact:
    m = _COMPACT.match(text)
    if m is None:
        raise CarbonOptionError("ALTER TABLE ... COMPACT: expected COMPACT 'MINOR', 'MAJOR' or 'CUSTOM' WHERE "
                                f"SEGMENT.ID IN (1, 2), found {text!r}")
    kind = m.group("kind").lower()
    ids = [i.strip().strip("'\"") for i in m.group("ids").split(",") if i.strip()] if m.group("ids") else None
    if kind not in ("minor", "major", "custom"):
        raise CarbonOptionError(f"ALTER TABLE ... COMPACT: kind must be 'MINOR', 'MAJOR' or 'CUSTOM', found "
                                f"{m.group('kind')!r}")
    if (kind == "custom") != bool(ids):
        raise CarbonOptionError("ALTER TABLE ... COMPACT: 'CUSTOM' needs WHERE SEGMENT.ID IN (...), and only "
                                f"'CUSTOM' takes it; found {text!r}")
    bad = [i for i in ids or [] if not all(p.isdigit() for p in i.split("."))]
    if bad:
        raise CarbonOptionError(f"ALTER TABLE ... COMPACT: segment ids must be numbers like 3 or 0.1, found "
                                f"{', '.join(map(repr, bad))}")
    ext = (m.group("ext") or "false").lower() == "true"
    if ext and kind != "custom":
        raise CarbonOptionError("ALTER TABLE ... COMPACT: OPTIONS('include_external'='true') is only for 'CUSTOM' "
                                f"WHERE SEGMENT.ID IN (...), found {text!r}")
    return Compact(table_name(m.group("name")), kind, ids, ext)


@dataclass
class AlterCarbonPartition:
    """ADD PARTITION('v', ...), SPLIT PARTITION(id) INTO('a', ...), DROP PARTITION(id) [WITH DATA] of a
    HASH/RANGE/LIST table (values as written, a parenthesised group kept as one text)."""

    table: TableName
    action: str  # "add", "split" or "drop"
    partition_id: int | None = None
    values: list[str] = field(default_factory=list)
    with_data: bool = False


_QUOTED_LIST = r"\(\s*(?P<{0}>(?:'[^']*'|\"[^\"]*\")(?:\s*,\s*(?:'[^']*'|\"[^\"]*\"))*)\s*\)"
_CARBON_ADD = re.compile(r"^\s*ALTER\s+TABLE\s+(?P<name>\S+)\s+ADD\s+PARTITION\s*" + _QUOTED_LIST.format("vals")
                         + r"\s*$", re.IGNORECASE | re.S)
_CARBON_SPLIT = re.compile(r"^\s*ALTER\s+TABLE\s+(?P<name>\S+)\s+SPLIT\s+PARTITION\s*\(\s*(?P<id>\d+)\s*\)\s*"
                           r"INTO\s*" + _QUOTED_LIST.format("vals") + r"\s*$", re.IGNORECASE | re.S)
_CARBON_DROP = re.compile(r"^\s*ALTER\s+TABLE\s+(?P<name>\S+)\s+DROP\s+PARTITION\s*\(\s*(?P<id>\d+)\s*\)"
                          r"(?P<data>\s+WITH\s+DATA)?\s*$", re.IGNORECASE | re.S)


def _quoted_values(text: str) -> list[str]:
    return [m[1:-1] for m in re.findall(r"'[^']*'|\"[^\"]*\"", text)]


def carbon_partition_alter(text: str) -> AlterCarbonPartition | None:
    """The HASH/RANGE/LIST forms of ALTER TABLE ... PARTITION, or None (Hive's forms or not ALTER)."""
    m = _CARBON_ADD.match(text)
    if m:
        return AlterCarbonPartition(table_name(m.group("name")), "add", None, _quoted_values(m.group("vals")))
    m = _CARBON_SPLIT.match(text)
    if m:
        return AlterCarbonPartition(table_name(m.group("name")), "split", int(m.group("id")),
                                    _quoted_values(m.group("vals")))
    m = _CARBON_DROP.match(text)
    if m:
        return AlterCarbonPartition(table_name(m.group("name")), "drop", int(m.group("id")), [],
                                    bool(m.group("data")))
    if re.match(r"^\s*ALTER\s+TABLE\s+\S+\s+SPLIT\s+PARTITION\b", text, re.IGNORECASE):
        raise CarbonOptionError(f"SPLIT PARTITION: expected ALTER TABLE <table> SPLIT PARTITION(<id>) "
                                f"INTO('<value>', ...), found {text!r}")
    return None


@dataclass
class Unsupported:
    """A CarbonData statement carbon-ds does not run yet (on a carbondata table it is refused clearly)."""

    table: TableName
    what: str  # e.g. "COMPACT", "ADD COLUMNS"


@dataclass
class AlterSchema:
    """ALTER TABLE ADD COLUMNS / DROP COLUMNS / CHANGE / SET TBLPROPERTIES / UNSET TBLPROPERTIES."""

    table: TableName
    action: str  # "add", "drop", "change", "set", "unset"
    columns: list[tuple[str, str]] = field(default_factory=list)  # ADD: (name, type text)
    names: list[str] = field(default_factory=list)  # DROP / UNSET: column or property names
    properties: dict[str, str] = field(default_factory=dict)  # ADD's TBLPROPERTIES, SET's properties
    new_name: str | None = None  # CHANGE
    type_text: str | None = None  # CHANGE


_NAME = r"(?:`[^`]+`|[A-Za-z_]\w*)"
_RENAME_COLUMN = re.compile(rf"^\s*ALTER\s+TABLE\s+(?P<name>\S+)\s+RENAME\s+COLUMN\s+(?P<old>{_NAME})\s+TO\s+"
                            rf"(?P<new>{_NAME})\s*;?\s*$", re.IGNORECASE)
_ALTER_TYPE = re.compile(rf"^\s*ALTER\s+TABLE\s+(?P<name>\S+)\s+(?:ALTER|CHANGE)\s+(?:COLUMN\s+)?(?P<col>{_NAME})\s+"
                         r"TYPE\s+(?P<type>.+?)\s*;?\s*$", re.IGNORECASE | re.S)
# any other ALTER TABLE form (REPLACE COLUMNS, ALTER COLUMN ... COMMENT, SET LOCATION, SET SERDEPROPERTIES, ...)
_OTHER_ALTER = re.compile(r"^\s*ALTER\s+TABLE\s+(?P<name>\S+)\s+(?P<what>[A-Za-z]+(?:\s+[A-Za-z]+)?)", re.IGNORECASE)
_SCHEMA_ALTER = re.compile(
    r"^\s*ALTER\s+TABLE\s+\S+\s+(ADD\s+COLUMNS?|DROP\s+COLUMNS|CHANGE|SET\s+TBLPROPERTIES|UNSET\s+TBLPROPERTIES)\b",
    re.IGNORECASE)


class _Parser:
    def __init__(self, text: str, tokens: list[Token], statement: str):
        self.text = text
        self.toks = tokens
        self.i = 0
        self.statement = statement

    # -- helpers
    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def fail(self, expected: str) -> CarbonOptionError:
        tok = self.peek()
        found = f"{tok.text!r} at position {tok.pos}" if tok else "end of statement"
        return CarbonOptionError(f"{self.statement}: expected {expected}, found {found}; statement: {self.text.strip()!r}")

    def accept_kw(self, *words: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.is_kw(*words):
            self.i += 1
            return True
        return False

    def expect_kw(self, *words: str) -> None:
        if not self.accept_kw(*words):
            raise self.fail(" ".join(words) if len(words) == 1 else " or ".join(words))

    def accept_punct(self, p: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.kind == "punct" and tok.text == p:
            self.i += 1
            return True
        return False

    def expect_punct(self, p: str) -> None:
        if not self.accept_punct(p):
            raise self.fail(f"'{p}'")

    def ident(self, what: str = "a name") -> str:
        tok = self.peek()
        if tok is None or tok.kind not in ("word", "ident"):
            raise self.fail(what)
        self.i += 1
        return tok.text

    def string(self, what: str = "a quoted string") -> str:
        tok = self.peek()
        if tok is None or tok.kind != "string":
            raise self.fail(what)
        self.i += 1
        return tok.text

    def table_name(self) -> TableName:
        first = self.ident("a table name ([db.]table)")
        if not self.accept_punct("."):
            return TableName(None, first)
        second = self.ident("a table name after 'db.'")
        if not self.accept_punct("."):
            return TableName(first, second)
        if first.lower() != SESSION_CATALOG:  # SHOW CREATE TABLE names spark_catalog.db.t
            raise CarbonOptionError(f"{self.statement}: carbondata tables live in Spark's session catalog "
                                    f"'{SESSION_CATALOG}', found catalog {first!r}")
        return TableName(second, self.ident("a table name after 'catalog.db.'"))

    def end(self) -> None:
        self.accept_punct(";")
        if self.peek() is not None:
            raise self.fail("end of statement")

    def options(self) -> dict[str, str]:
        """('key'='value', ...) — keys lower-cased; values kept as written."""
        self.expect_punct("(")
        out: dict[str, str] = {}
        if self.accept_punct(")"):
            return out
        while True:
            tok = self.peek()
            if tok is None or tok.kind not in ("string", "word", "ident"):
                raise self.fail("an option name such as 'path'")
            self.i += 1
            key = tok.text.strip().lower()
            self.expect_punct("=")
            val = self.peek()
            if val is None or val.kind not in ("string", "number", "word"):
                raise self.fail(f"a value for option {key!r}")
            self.i += 1
            if key in out:
                raise CarbonOptionError(f"{self.statement}: option {key!r} given twice")
            out[key] = val.text
            if self.accept_punct(")"):
                return out
            self.expect_punct(",")

    def type_text(self) -> str:
        """The text of a column type up to the next top-level ',' or ')', e.g. DECIMAL(10,2), ARRAY<INT>."""
        start = self.peek()
        if start is None:
            raise self.fail("a column type")
        depth = 0
        j = self.i
        while j < len(self.toks):
            t = self.toks[j]
            if t.kind == "punct" and t.text in "(<":
                depth += 1
            elif t.kind == "punct" and t.text in ")>":
                if depth == 0:
                    break
                depth -= 1
            elif t.kind == "punct" and t.text == "," and depth == 0:
                break
            elif depth == 0 and t.is_kw("COMMENT", "COLLATE", "NOT"):
                break
            j += 1
        if j == self.i:
            raise self.fail("a column type")
        end = self.toks[j - 1].end
        text = self.text[start.pos : end]
        self.i = j
        if self.accept_kw("COLLATE"):  # Spark's default collation is the only one a carbondata string has
            collation = self.ident("a collation name")
            if collation.upper() != "UTF8_BINARY":
                raise CarbonOptionError(f"{self.statement}: carbondata strings compare as UTF8_BINARY, found "
                                        f"COLLATE {collation}")
        if self.accept_kw("NOT"):
            self.expect_kw("NULL")  # every carbondata column may hold nulls: accepted as a declaration only
        if self.accept_kw("COMMENT"):
            self.string("a comment string")
        return " ".join(text.split())

    def name_list(self, what: str) -> list[str]:
        """(a, b, ...) of names or quoted strings."""
        self.expect_punct("(")
        out: list[str] = []
        while True:
            tok = self.peek()
            if tok is None or tok.kind not in ("word", "ident", "string"):
                raise self.fail(what)
            self.i += 1
            out.append(tok.text)
            if self.accept_punct(")"):
                return out
            self.expect_punct(",")

    def alter_schema(self) -> AlterSchema:
        self.expect_kw("ALTER")
        self.expect_kw("TABLE")
        name = self.table_name()
        if self.accept_kw("ADD"):
            if not self.accept_kw("COLUMN"):  # Spark takes ADD COLUMN as well as ADD COLUMNS
                self.expect_kw("COLUMNS")
            stmt = AlterSchema(name, "add", columns=self.column_list())
            if self.accept_kw("TBLPROPERTIES"):
                stmt.properties = self.options()
        elif self.accept_kw("DROP"):
            self.expect_kw("COLUMNS")
            stmt = AlterSchema(name, "drop", names=self.name_list("a column name"))
        elif self.accept_kw("CHANGE"):
            self.accept_kw("COLUMN")
            old = self.ident("the column to change")
            new = self.ident("the new column name")
            stmt = AlterSchema(name, "change", names=[old], new_name=new, type_text=self.type_text())
        elif self.accept_kw("SET"):
            self.expect_kw("TBLPROPERTIES")
            stmt = AlterSchema(name, "set", properties=self.options())
        else:
            self.expect_kw("UNSET")
            self.expect_kw("TBLPROPERTIES")
            stmt = AlterSchema(name, "unset", names=self.name_list("a property name"))
        self.end()
        return stmt

    def column_list(self) -> list[tuple[str, str]]:
        self.expect_punct("(")
        cols: list[tuple[str, str]] = []
        while True:
            if self.accept_punct(")"):  # also tolerates a trailing comma, as in the design's example
                break
            name = self.ident("a column name")
            cols.append((name, self.type_text()))
            if self.accept_punct(")"):
                break
            self.expect_punct(",")
        if not cols:
            raise CarbonOptionError(f"{self.statement}: expected at least one column, found '()'")
        return cols

    # -- statements
    def create(self) -> CreateTable:
        self.expect_kw("CREATE")
        external = self.accept_kw("EXTERNAL")
        self.expect_kw("TABLE")
        if_not = False
        if self.accept_kw("IF"):
            self.expect_kw("NOT")
            self.expect_kw("EXISTS")
            if_not = True
        stmt = CreateTable(self.table_name(), [], if_not_exists=if_not, external=external)
        if self.peek() is not None and self.peek().kind == "punct" and self.peek().text == "(":
            stmt.columns = self.column_list()
        stored = False
        partition_names: list[str] = []
        while self.peek() is not None and not (self.peek().kind == "punct" and self.peek().text == ";"):
            if self.accept_kw("STORED"):
                self.expect_kw("AS", "BY")
                fmt = self.peek()
                if fmt is None or fmt.kind not in ("word", "string") or fmt.text.lower() not in ("carbondata", "carbon"):
                    raise self.fail("carbondata after STORED AS")
                self.i += 1
                stored = True
            elif self.accept_kw("USING"):
                fmt = self.ident("carbondata after USING")
                if fmt.lower() not in ("carbondata", "carbon"):
                    raise CarbonOptionError(f"CREATE TABLE: expected USING carbondata, found USING {fmt}")
                stored = True
            elif self.accept_kw("PARTITIONED"):
                self.expect_kw("BY")
                self.partition_clause(stmt, partition_names)
            elif self.accept_kw("TBLPROPERTIES"):
                stmt.properties = self.options()
            elif self.accept_kw("LOCATION"):
                stmt.location = self.string("a quoted path after LOCATION")
            elif self.accept_kw("COMMENT"):
                self.string("a comment string")
            elif self.peek().is_kw("AS"):
                raise _SparksStatement()  # CREATE TABLE ... AS SELECT: Spark writes it (jvm/src CarbonCatalogTables)
            else:
                raise self.fail("STORED AS carbondata, PARTITIONED BY, TBLPROPERTIES, LOCATION or end of statement")
        if not stored:
            raise CarbonOptionError("CREATE TABLE: expected STORED AS carbondata")
        self.end()
        if partition_names:  # Spark's form: PARTITIONED BY (c, ...) names columns of the list
            by_lower = {n.lower(): (n, t) for n, t in stmt.columns}
            missing = [n for n in partition_names if n.lower() not in by_lower]
            if missing:
                raise CarbonOptionError(f"CREATE TABLE: PARTITIONED BY names {', '.join(missing)}, which the "
                                        "column list does not declare; declare it there, or give its type in "
                                        "PARTITIONED BY (CarbonData's form)")
            chosen = {n.lower() for n in partition_names}
            stmt.partition_columns += [by_lower[n.lower()] for n in partition_names]
            stmt.columns = [c for c in stmt.columns if c[0].lower() not in chosen]
        if not stmt.columns and not stmt.location:
            raise CarbonOptionError("CREATE TABLE: expected a column list, or LOCATION of an existing CarbonData "
                                    "table whose columns it takes")
        return stmt

    def partition_clause(self, stmt: CreateTable, names: list[str]) -> None:
        """PARTITIONED BY (c TYPE, ...) declares new columns (CarbonData's form); (c, ...) names columns of the
        list (Spark's)."""
        self.expect_punct("(")
        while True:
            name = self.ident("a partition column")
            tok = self.peek()
            if tok is not None and tok.kind == "punct" and tok.text in ",)":
                names.append(name)
            else:
                stmt.partition_columns.append((name, self.type_text()))
            if self.accept_punct(")"):
                return
            self.expect_punct(",")

    def drop(self) -> DropTable:
        self.expect_kw("DROP")
        self.expect_kw("TABLE")
        if_exists = False
        if self.accept_kw("IF"):
            self.expect_kw("EXISTS")
            if_exists = True
        stmt = DropTable(self.table_name(), if_exists)
        self.end()
        return stmt

    def add_segment(self) -> AddSegment:
        self.expect_kw("ALTER")
        self.expect_kw("TABLE")
        table = self.table_name()
        self.expect_kw("ADD")
        self.expect_kw("SEGMENT")
        self.expect_kw("OPTIONS")
        opts = self.options()
        self.end()
        return AddSegment(table, opts)

    def show_segments(self) -> ShowSegments:
        self.expect_kw("SHOW")
        self.expect_kw("SEGMENTS")
        self.expect_kw("FOR")
        self.expect_kw("TABLE")
        stmt = ShowSegments(self.table_name())
        if self.accept_kw("LIMIT"):
            tok = self.peek()
            if tok is None or tok.kind != "number" or not tok.text.isdigit():
                raise self.fail("a whole number after LIMIT")
            self.i += 1
            stmt.limit = int(tok.text)
        self.end()
        return stmt

    def delete_segments(self) -> DeleteSegments:
        self.expect_kw("DELETE")
        self.expect_kw("FROM")
        self.expect_kw("TABLE")
        table = self.table_name()
        self.expect_kw("WHERE")
        self.expect_kw("SEGMENT")
        self.expect_punct(".")
        if self.accept_kw("ID"):
            self.expect_kw("IN")
            self.expect_punct("(")
            ids = []
            while True:
                tok = self.peek()
                if tok is None or tok.kind not in ("number", "string"):
                    raise self.fail("a segment id such as 0 or '1.1'")
                self.i += 1
                ids.append(tok.text.strip())
                if self.accept_punct(")"):
                    break
                self.expect_punct(",")
            self.end()
            return DeleteSegments(table, ids=ids)
        if self.accept_kw("STARTTIME"):
            self.expect_kw("BEFORE")
            when = self.string("a quoted time 'yyyy-MM-dd HH:mm:ss'")
            self.end()
            return DeleteSegments(table, before=when)
        raise self.fail("SEGMENT.ID IN (...) or SEGMENT.STARTTIME BEFORE '...'")

    def clean_files(self) -> CleanFiles:
        self.expect_kw("CLEAN")
        self.expect_kw("FILES")
        self.expect_kw("FOR")
        self.expect_kw("TABLE")
        stmt = CleanFiles(self.table_name())
        if self.accept_kw("OPTIONS"):
            stmt.options = self.options()
        self.end()
        return stmt


_INSERT = re.compile(
    r"^\s*INSERT\s+(?P<kind>INTO|OVERWRITE)\s+(?:TABLE\s+)?"
    r"(?P<name>(?:`[^`]+`|[A-Za-z_][\w$]*)(?:\s*\.\s*(?:`[^`]+`|[A-Za-z_][\w$]*))?)",
    re.IGNORECASE,
)


_PARTITION_CLAUSE = re.compile(r"\s*PARTITION\s*\((?P<body>(?:'[^']*'|\"[^\"]*\"|[^()'\"])*)\)", re.IGNORECASE)
_SPEC_ITEM = re.compile(
    r"\s*(?P<col>`[^`]+`|[A-Za-z_][\w$]*)\s*(?:=\s*(?P<val>'(?:[^']|'')*'|\"[^\"]*\"|[^,\s]+))?\s*(?:,|$)")


def partition_spec(body: str, statement: str) -> dict[str, str | None]:
    """``day = 1, hour = '02'`` as {column: value text}; a column without ``= value`` maps to ... (dynamic)."""
    out: dict[str, str | None] = {}
    pos = 0
    body = body.strip()
    while pos < len(body):
        m = _SPEC_ITEM.match(body, pos)
        if m is None or m.end() == pos:
            raise CarbonOptionError(f"{statement}: cannot parse partition spec ({body}) near {body[pos:pos + 20]!r}")
        col = m.group("col").strip("`")
        val = m.group("val")
        if val is None:
            out[col] = ...  # type: ignore[assignment]
        elif val.upper() == "NULL":
            out[col] = None
        elif val[0] in "'\"":
            out[col] = val[1:-1].replace("''", "'")
        else:
            out[col] = val
        pos = m.end()
    return out


def _leading_words(text: str, n: int) -> list[str]:
    return [w.upper() for w in re.findall(r"[A-Za-z_]+", text[:200])[:n]]


_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`")
_CTAS = re.compile(r"\bAS\s*(?:\(|SELECT\b|WITH\b|FROM\b|VALUES\b|TABLE\b)", re.IGNORECASE)


class _SparksStatement(Exception):
    """The statement is Spark's after all (found while parsing it)."""


SESSION_CATALOG = "spark_catalog"


def parse(text: str):
    """The statement object for one of our statements, or None for anything spark.sql should run."""
    try:
        return _parse(text)
    except _SparksStatement:
        return None


def _parse(text: str):
    words = _leading_words(text, 4)
    if not words:
        return None
    head = words[0]
    view = parse_view_statement(text)  # CarbonData's CREATE / REFRESH / SHOW / DROP MATERIALIZED VIEW
    if view is not None:
        return view
    if head == "CREATE":
        # only CREATE [EXTERNAL] TABLE is ours: CREATE [OR REPLACE] [GLOBAL] TEMPORARY VIEW ... USING
        # carbondata, CREATE VIEW, CREATE TEMPORARY TABLE and the rest are Spark's statements
        if words[1:2] != ["TABLE"] and words[1:3] != ["EXTERNAL", "TABLE"]:
            return None
        if not re.search(r"\b(STORED\s+(AS|BY)|USING)\s+[`'\"‘“]?carbon(data)?\b", text, re.IGNORECASE):
            return None
        if _CTAS.search(_QUOTED.sub("''", text)):
            return None  # CREATE TABLE ... AS SELECT: Spark writes it (jvm/src CarbonCatalogTables)
        return _Parser(text, tokenize(text), "CREATE TABLE").create()
    if head == "DROP" and words[1:2] == ["TABLE"]:
        return _Parser(text, tokenize(text), "DROP TABLE").drop()
    if head == "ALTER" and re.search(r"\bADD\s+SEGMENT\b", text, re.IGNORECASE):
        return _Parser(text, tokenize(text), "ALTER TABLE ... ADD SEGMENT").add_segment()
    if words[:2] == ["SHOW", "SEGMENTS"]:
        return _Parser(text, tokenize(text), "SHOW SEGMENTS").show_segments()
    if words[:3] == ["DELETE", "FROM", "TABLE"]:
        return _Parser(text, tokenize(text), "DELETE FROM TABLE ... WHERE SEGMENT").delete_segments()
    if words[:2] == ["MERGE", "INTO"]:
        return parse_merge(text)
    if words[:2] == ["DELETE", "FROM"] or head == "UPDATE":
        return parse_row_dml(text)  # row DELETE / UPDATE through delete deltas
    if words[:2] == ["SHOW", "PARTITIONS"]:
        m = re.match(r"^\s*SHOW\s+PARTITIONS\s+(?P<name>\S+)\s*$", text, re.IGNORECASE)
        if m is None:
            raise CarbonOptionError(f"SHOW PARTITIONS: expected SHOW PARTITIONS <table>, found {text!r}")
        return ShowPartitions(table_name(m.group("name")))
    if head == "ALTER":
        carbon = carbon_partition_alter(text)
        if carbon is not None:
            return carbon
        m = re.match(r"^\s*ALTER\s+TABLE\s+(?P<name>\S+)\s+(?P<act>DROP|ADD)\s+(?P<ie>IF\s+(?:NOT\s+)?EXISTS\s+)?"
                     r"(?=PARTITION)", text, re.IGNORECASE)
        if m is not None:
            clause = _PARTITION_CLAUSE.match(text, m.end())
            rest = text[clause.end():].strip() if clause is not None else ""
            # ADD PARTITION may name the folder holding the partition's data (Hive's LOCATION)
            loc = re.fullmatch(r"LOCATION\s+(?P<q>['\"])(?P<path>.*)(?P=q)", rest, re.IGNORECASE | re.S)
            if clause is None or (rest and (loc is None or m.group("act").upper() != "ADD")):
                after = ("[LOCATION '<folder>'] and nothing after" if m.group("act").upper() == "ADD"
                    else "and nothing after")
                raise CarbonOptionError(f"ALTER TABLE ... {m.group('act').upper()} PARTITION: expected "
                                        f"PARTITION (col = value, ...) {after}, found {text[m.end():]!r}")
            spec = partition_spec(clause.group("body"), "ALTER TABLE ... PARTITION")
            return AlterPartition(table_name(m.group("name")), m.group("act").lower(), spec, bool(m.group("ie")),
                                  loc.group("path") if loc else None)
        if re.match(r"^\s*ALTER\s+TABLE\s+\S+\s+COMPACT\b", text, re.IGNORECASE):
            return _compact(text)
        if _SCHEMA_ALTER.match(text):
            return _Parser(text, tokenize(text), "ALTER TABLE").alter_schema()
        m = _RENAME_COLUMN.match(text)
        if m is not None:  # Spark's RENAME COLUMN a TO b: CarbonData's CHANGE a b keeping the type
            return AlterSchema(table_name(m.group("name")), "change", names=[m.group("old").strip("`")],
                               new_name=m.group("new").strip("`"))
        m = _ALTER_TYPE.match(text)
        if m is not None:  # Spark's ALTER COLUMN c TYPE t: CarbonData's CHANGE c c t
            return AlterSchema(table_name(m.group("name")), "change", names=[m.group("col").strip("`")],
                               type_text=" ".join(m.group("type").split()))
        m = _OTHER_ALTER.match(text)
        if m is not None:  # on a carbondata table refused by name; on other tables Spark's statement
            return Unsupported(table_name(m.group("name")), " ".join(m.group("what").upper().split()))
    if words[:2] == ["CLEAN", "FILES"]:
        return _Parser(text, tokenize(text), "CLEAN FILES").clean_files()
    if head == "INSERT":
        m = _INSERT.match(text)
        if m is None:
            return None
        name = table_name(m.group("name"))
        clause = _PARTITION_CLAUSE.match(text, m.end())
        if clause is not None:
            spec = partition_spec(clause.group("body"), "INSERT ... PARTITION")
            return Insert(name, m.group("kind").upper() == "OVERWRITE", m.span("name"), spec, clause.end())
        return Insert(name, m.group("kind").upper() == "OVERWRITE", m.span("name"))
    return None


# The first words of CarbonData's statements, for "did you mean" (suggest)
_HEADS = {
    ("SHOW", "SEGMENTS"): "SHOW SEGMENTS FOR TABLE <table> [LIMIT n]",
    ("CLEAN", "FILES"): "CLEAN FILES FOR TABLE <table> [OPTIONS (...)]",
    ("DELETE", "FROM", "TABLE"): "DELETE FROM TABLE <table> WHERE SEGMENT.ID IN (...)",
    ("SHOW", "PARTITIONS"): "SHOW PARTITIONS <table>",
    ("MERGE", "INTO"): "MERGE INTO <table> USING <source> ON ... WHEN ...",
    ("CREATE", "TABLE"): "CREATE TABLE <table> (...) STORED AS carbondata",
}


def suggest(text: str) -> str | None:
    """"did you mean ..." for a statement that starts like one of CarbonData's with a misspelt word, or None."""
    words = _leading_words(text, 3)
    for head, form in _HEADS.items():
        got = words[: len(head)]
        if len(got) < len(head) or tuple(got) == head:
            continue
        wrong = [(g, h) for g, h in zip(got, head, strict=True) if g != h]
        if len(wrong) == 1 and difflib.SequenceMatcher(None, *wrong[0]).ratio() >= 0.75:
            return (f"carbon_ds.errors.CarbonOptionError: {wrong[0][0]!r} is not a word of CarbonData's "
                    f"statement; did you mean {wrong[0][1]}? ({form})")
    return None


def table_name(text: str) -> TableName:
    """``db.t`` / ``t`` / backquoted parts as a TableName."""
    parts = [p.strip().strip("`") for p in re.split(r"\.(?=(?:[^`]*`[^`]*`)*[^`]*$)", text)]
    return TableName(parts[0], parts[1]) if len(parts) == 2 else TableName(None, parts[0])


@dataclass(frozen=True)
class DeleteRows:
    table: TableName
    where: str | None


@dataclass(frozen=True)
class UpdateRows:
    table: TableName
    sets: tuple[tuple[str, str], ...]  # (column, SQL expression text)
    where: str | None


_DELETE = re.compile(r"^\s*DELETE\s+FROM\s+(?P<name>[^\s;]+)\s*(?:WHERE\s+(?P<where>.+))?$", re.I | re.S)


_UPDATE = re.compile(r"^\s*UPDATE\s+(?P<name>[^\s;]+)\s+SET\s+(?P<sets>.+?)(?:\s+WHERE\s+(?P<where>.+))?$",
                     re.I | re.S)


def _split_top(text: str) -> list[str]:
    """Split at commas outside quotes and parentheses."""
    out, depth, start = [], 0, 0
    for t in scan(text, STATEMENT, strict=False):
        if t.kind == "punct" and t.text in "()":
            depth += 1 if t.text == "(" else -1
        elif t.kind == "punct" and t.text == "," and depth == 0:
            out.append(text[start:t.pos])
            start = t.end
    out.append(text[start:])
    return [p.strip() for p in out]


def parse_row_dml(text: str) -> DeleteRows | UpdateRows:
    """``DELETE FROM t [WHERE p]`` / ``UPDATE t SET c = e [, ...] [WHERE p]`` (also ``SET (a, b) = (x, y)``)."""
    m = _DELETE.match(text)
    if text.lstrip()[:6].upper() == "DELETE":
        if m is None:
            raise CarbonOptionError(f"DELETE: expected DELETE FROM <table> [WHERE <predicate>], found {text!r}")
        return DeleteRows(table_name(m.group("name")), m.group("where"))
    m = _UPDATE.match(text)
    if m is None:
        raise CarbonOptionError(f"UPDATE: expected UPDATE <table> SET col = expr [, ...] [WHERE <predicate>], "
                                f"found {text!r}")
    body = m.group("sets").strip()
    tuple_form = re.match(r"^\((?P<cols>[^)]*)\)\s*=\s*\((?P<vals>.*)\)$", body, re.S)
    if tuple_form:
        cols = _split_top(tuple_form.group("cols"))
        vals = _split_top(tuple_form.group("vals"))
        if len(cols) != len(vals):
            raise CarbonOptionError(f"UPDATE: SET lists {len(cols)} columns but {len(vals)} values in {body!r}")
        pairs = list(zip(cols, vals, strict=True))
    else:
        pairs = []
        for part in _split_top(body):
            col, eq, val = part.partition("=")
            if not eq or not col.strip() or not val.strip():
                raise CarbonOptionError(f"UPDATE: expected column = expression in SET, found {part!r}")
            pairs.append((col, val))
    return UpdateRows(table_name(m.group("name")),
                      tuple((c.strip().strip("`"), v.strip()) for c, v in pairs), m.group("where"))


@dataclass(frozen=True)
class MergeClause:
    """``WHEN [NOT] MATCHED [AND cond] THEN UPDATE SET ... | DELETE | INSERT ...``; ``sets`` None means
    ``UPDATE SET *`` / ``INSERT *``, else (column, SQL expression) pairs."""

    matched: bool
    action: str  # "update" | "delete" | "insert"
    condition: str | None
    sets: tuple[tuple[str, str], ...] | None


@dataclass(frozen=True)
class MergeInto:
    table: TableName
    target_alias: str
    source: str  # a table name, or a query when ``source_is_query``
    source_is_query: bool
    source_alias: str
    on: str
    clauses: tuple[MergeClause, ...]


_MERGE_HEAD = re.compile(r"^\s*MERGE\s+INTO\s+(?P<name>[^\s;()]+)(?:\s+(?:AS\s+)?(?P<alias>(?!USING\b)[A-Za-z_]\w*))?"
                         r"\s+USING\s+", re.I | re.S)
_ALIAS = re.compile(r"\s*(?:AS\s+)?(?P<alias>(?!ON\b)[A-Za-z_]\w*)?\s*ON\s+", re.I | re.S)
_WHEN = re.compile(r"^WHEN\s+(?P<not>NOT\s+)?MATCHED(?:\s+BY\s+TARGET)?(?:\s+AND\s+(?P<cond>.+?))?\s+THEN\s+"
                   r"(?P<action>.+)$", re.I | re.S)


def _top_words(text: str, word: str) -> list[int]:
    """Offsets of ``word`` (a keyword, any case) outside quotes, parentheses and CASE ... END."""
    out, depth, cases, prev = [], 0, 0, None
    for t in scan(text, STATEMENT, strict=False):
        if t.kind == "punct" and t.text in "()":
            depth += 1 if t.text == "(" else -1
        elif t.kind == "word" and depth == 0 and not (prev is not None and prev.text == "." and prev.end == t.pos):
            # CASE WHEN ... END inside a condition or a SET value is not a clause boundary
            if t.is_kw("CASE"):
                cases += 1
            elif t.is_kw("END"):
                cases -= 1
            elif cases == 0 and t.is_kw(word.upper()):
                out.append(t.pos)
        prev = t
    return out


def _merge_action(text: str, matched: bool, condition: str | None, clause: str) -> MergeClause:
    act = text.strip().rstrip(";").strip()
    up = act.upper()
    if matched and up == "DELETE":
        return MergeClause(True, "delete", condition, None)
    if matched and up.startswith("UPDATE"):
        m = re.match(r"^UPDATE\s+SET\s+(?P<sets>.+)$", act, re.I | re.S)
        if m is None:
            raise CarbonOptionError(f"MERGE: expected UPDATE SET * or UPDATE SET col = expr [, ...] in {clause!r}")
        body = m.group("sets").strip()
        if body == "*":
            return MergeClause(True, "update", condition, None)
        pairs = []
        for part in _split_top(body):
            col, eq, val = part.partition("=")
            if not eq or not col.strip() or not val.strip():
                raise CarbonOptionError(f"MERGE: expected column = expression in UPDATE SET, found {part!r}")
            pairs.append((_bare(col), val.strip()))
        return MergeClause(True, "update", condition, tuple(pairs))
    if not matched and up.startswith("INSERT"):
        if re.match(r"^INSERT\s*\*$", act, re.I):
            return MergeClause(False, "insert", condition, None)
        m = re.match(r"^INSERT\s*\((?P<cols>[^)]*)\)\s*VALUES\s*\((?P<vals>.*)\)$", act, re.I | re.S)
        if m is None:
            raise CarbonOptionError(f"MERGE: expected INSERT * or INSERT (cols) VALUES (exprs) in {clause!r}")
        cols, vals = _split_top(m.group("cols")), _split_top(m.group("vals"))
        if len(cols) != len(vals):
            raise CarbonOptionError(f"MERGE: INSERT lists {len(cols)} columns but {len(vals)} values in {clause!r}")
        return MergeClause(False, "insert", condition, tuple((_bare(c), v) for c, v in zip(cols, vals, strict=True)))
    allowed = "UPDATE SET ... or DELETE" if matched else "INSERT"
    raise CarbonOptionError(f"MERGE: WHEN {'' if matched else 'NOT '}MATCHED expects THEN {allowed}, found {act!r}")


def _bare(col: str) -> str:
    """``t.c`` / `c` -> c (SET and INSERT name target columns)."""
    return col.strip().rsplit(".", 1)[-1].strip("`")


def parse_merge(text: str) -> MergeInto:
    """``MERGE INTO t [[AS] a] USING (s | (query)) [[AS] b] ON cond WHEN ...`` (CarbonData 2.2 / Spark)."""
    body = text.strip().rstrip(";")
    m = _MERGE_HEAD.match(body)
    if m is None:
        raise CarbonOptionError(f"MERGE: expected MERGE INTO <table> [AS alias] USING <source> ON <condition> "
                                f"WHEN ..., found {text[:120]!r}")
    rest = body[m.end():]
    if rest.startswith("("):
        depth = close = 0
        while close < len(rest):
            depth += (rest[close] == "(") - (rest[close] == ")")
            if depth == 0:
                break
            close += 1
        source, is_query, rest = rest[1:close].strip(), True, rest[close + 1:]
    else:
        sm = re.match(r"(?P<src>[^\s;()]+)", rest)
        if sm is None:
            raise CarbonOptionError(f"MERGE: expected a source table or (query) after USING in {text[:120]!r}")
        source, is_query, rest = sm.group("src"), False, rest[sm.end():]
    am = _ALIAS.match(rest)
    if am is None:
        raise CarbonOptionError(f"MERGE: expected [AS alias] ON <condition> after the source, found {rest[:60]!r}")
    rest = rest[am.end():]
    whens = _top_words(rest, "WHEN")
    if not whens:
        raise CarbonOptionError("MERGE: expected at least one WHEN [NOT] MATCHED ... THEN ... clause")
    on = rest[:whens[0]].strip()
    clauses = []
    for a, b in zip(whens, whens[1:] + [len(rest)], strict=True):
        part = rest[a:b].strip()
        w = _WHEN.match(part)
        if w is None:
            raise CarbonOptionError(f"MERGE: expected WHEN [NOT] MATCHED [AND <condition>] THEN <action>, "
                                    f"found {part[:80]!r}")
        clauses.append(_merge_action(w.group("action"), not w.group("not"), w.group("cond"), part))
    for kind in (True, False):
        same = [c for c in clauses if c.matched is kind]
        if any(c.condition is None for c in same[:-1]):
            raise CarbonOptionError(f"MERGE: only the last WHEN {'' if kind else 'NOT '}MATCHED clause may omit "
                                    "its AND condition (a later one could never act)")
    name = table_name(m.group("name"))
    source_alias = am.group("alias") or (None if is_query else table_name(source).name)
    if source_alias is None:
        raise CarbonOptionError("MERGE: a USING (query) needs an alias: USING (SELECT ...) AS s")
    return MergeInto(name, m.group("alias") or name.name, source, is_query, source_alias, on, tuple(clauses))
