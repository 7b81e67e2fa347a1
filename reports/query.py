"""Named queries (reports/queries/NAME.sql) and the analyst's own SQL, on the published tables.

A named query's header says what it is and which parameters it takes:

    -- One line saying what the query returns.
    -- param month: YYYY-MM
    -- param limit: integer, number of rows, default 20

Parameters are bound by DuckDB (`$month`), never pasted into the SQL text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from bgp_congruency.common.errors import CongruencyError
from bgp_congruency.common.months import parse_month
from bgp_congruency.lake import published

QUERIES_DIR = Path(__file__).parent / "queries"
#: Statement kinds `--sql` accepts: reading only (COPY ... TO, SET, ATTACH, CREATE TEMP ... are refused).
READ_ONLY_KINDS = {"SELECT", "EXPLAIN"}


class QueryError(CongruencyError):
    """A one-line reason a query cannot run (bad name, parameter or SQL)."""


class BadValue(QueryError):
    """A query name or parameter that is wrong, or well formed but names nothing in the data
    (exit 2, as bad input)."""

    exit_code = 2


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # 'month' | 'integer'
    help: str
    default: str | None = None


@dataclass(frozen=True)
class Query:
    name: str
    summary: str
    sql: str
    params: dict[str, Param] = field(default_factory=dict)


def parse(name: str, text: str) -> Query:
    summary, params = [], {}
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        body = line[2:].strip()
        m = re.fullmatch(r"param (\w+):\s*(.*)", body)
        if m:
            pname, rest = m.groups()
            dm = re.search(r"default (\S+)$", rest)
            kind = "month" if rest.startswith("YYYY-MM") else "integer"
            params[pname] = Param(pname, kind, rest, dm.group(1) if dm else None)
        elif not params:
            summary.append(body)
    used = set(re.findall(r"\$(\w+)", text))
    if used != set(params):
        raise QueryError(f"{name}.sql: header declares {sorted(params)} but the SQL uses {sorted(used)}")
    return Query(name, " ".join(summary), text, params)  # the whole header sentence, not its first line


def named() -> dict[str, Query]:
    return {p.stem: parse(p.stem, p.read_text()) for p in sorted(QUERIES_DIR.glob("*.sql"))}


def get(name: str) -> Query:
    qs = named()
    if name not in qs:
        raise BadValue(f"unknown query {name!r} (known: {', '.join(qs)}; see congruency query --list)")
    return qs[name]


def bind(q: Query, given: dict[str, str | None]) -> dict[str, object]:
    """Checked values for q's parameters from `given` (name -> text); unknown or missing ones are errors."""
    given = {k: v for k, v in given.items() if v is not None}
    extra = sorted(set(given) - set(q.params))
    if extra:
        takes = ", ".join(q.params) or "no parameters"
        raise BadValue(f"query {q.name} has no parameter {extra[0]!r} (it takes: {takes})")
    out: dict[str, object] = {}
    for p in q.params.values():
        text = given.get(p.name, p.default)
        if text is None:
            raise BadValue(f"query {q.name} needs --{p.name.replace('_', '-')} ({p.help})"
                             if p.name in ("month", "vp") else f"query {q.name} needs --param {p.name}=... ({p.help})")
        if p.kind == "month":
            try:
                parse_month(text)
            except ValueError:
                raise BadValue(f"{p.name}: expected YYYY-MM, got {text!r}") from None
            out[p.name] = text
        else:
            try:
                out[p.name] = int(text)
            except ValueError:
                raise BadValue(f"{p.name}: expected an integer, got {text!r}") from None
            if out[p.name] < 0:
                raise BadValue(f"{p.name}: expected a non-negative integer, got {text!r}")
    return out


def check_months(q: Query, values: dict[str, object], root) -> None:
    """Every month parameter must be a published month (lake/published.py): NoResults."""
    for k, v in values.items():
        if q.params[k].kind == "month":
            published.require(root, v)


def run_named(con, name: str, given: dict[str, str | None]):
    """Run a named query (its month parameters checked with check_months); returns a pyarrow
    RecordBatchReader."""
    q = get(name)
    values = bind(q, given)
    vp, month = values.get("vp"), values.get("month")
    if vp and month:  # a VP the month does not have would read as "no rows": say which it is
        [(n,)] = con.execute("SELECT count(*) FROM vps WHERE month = ? AND vp_asn = ?", [month, vp]).fetchall()
        if not n:
            raise BadValue(f"vp: AS{vp} is not a vantage point in {month} "
                             f"(congruency query vp_congruency --month {month} lists them)")
    return _run(con, q.sql, values)


def run_sql(con, sql: str):
    """The analyst's own SQL: one statement that only reads; a pyarrow RecordBatchReader."""
    try:
        stmts = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise BadValue(f"--sql: {_first(exc)}") from None
    if not stmts:
        raise BadValue("--sql: no statement given")
    for s in stmts:
        _check_read_only(con, s)
    if len(stmts) > 1:  # one result is the output: `SELECT 1; SELECT 2` showed only the last
        raise BadValue(f"--sql: {len(stmts)} statements given; one --sql runs one statement "
                       "(run each with its own --sql)")
    try:
        return _run(con, stmts[0].query, None)
    except QueryError as exc:  # the analyst's statement cannot run: a bad argument, as every refusal
        raise BadValue(f"--sql: {exc}") from None


_EXPLAIN = re.compile(r"\s*EXPLAIN\s+(?:ANALY[SZ]E\s+)?(?:\([^()]*\)\s*)?(?P<rest>.+)", re.I | re.S)


def _check_read_only(con, s) -> None:
    """Only SELECT, or EXPLAIN [ANALYZE] of one SELECT (EXPLAIN ANALYZE runs its statement)."""
    kind = str(s.type).rsplit(".", 1)[-1]
    if kind == "EXPLAIN":
        m = _EXPLAIN.fullmatch(s.query)
        try:
            inner = con.extract_statements(m.group("rest")) if m else []
        except duckdb.Error:
            inner = []
        kinds = [str(i.type).rsplit(".", 1)[-1] for i in inner]
        if kinds != ["SELECT"]:
            what = f"{kinds[0]} statement" if len(kinds) == 1 else "statement"
            raise BadValue(f"--sql: refused EXPLAIN of {_article(what)} {what}: the tables are read-only "
                             "(SELECT only)")
    elif kind not in READ_ONLY_KINDS:
        first = (s.query.split() or [kind])[0].upper()
        word = first if first.isalpha() and first != kind else kind  # INSTALL parses as a LOAD statement
        raise BadValue(f"--sql: refused {_article(word)} {word} statement: the tables are read-only (SELECT only)")


def _article(word: str) -> str:
    return "an" if word[:1].upper() in "AEIOU" else "a"


#: Rows per Arrow batch of a result: the output is written a batch at a time, so a
#: result of any size (`SELECT * FROM rib_entries`) needs memory for one batch only.
BATCH_ROWS = 65_536


def _run(con, sql: str, params):
    """The result as a pyarrow RecordBatchReader (streamed from DuckDB)."""
    try:
        # A relation streams; con.execute() would hold every row (a DB-API result) first.
        rel = con.sql(sql, params=params) if params else con.sql(sql)
        stream = getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader  # DuckDB 2.x, 1.x
        return stream(BATCH_ROWS)
    except duckdb.IOException:
        raise  # a published file that cannot be read: the command names table, file and snapshot
    except duckdb.PermissionException as exc:  # what the locked connection refuses: a bad argument
        raise BadValue(_first(exc)) from None
    except duckdb.Error as exc:
        raise QueryError(_first(exc)) from None


def _first(exc: Exception) -> str:
    return " ".join(str(exc).split("\n")[0].split())
