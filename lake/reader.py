"""What `lake.connect` hands an analyst: a DuckDB connection whose SQL writes nothing under the
data dir, however it is asked.

The catalog is attached READ_ONLY, so no statement changes a published table; two things
still reached the data dir through a plain connection (issue 58): a refused `CREATE TABLE
lake.x` left an empty `x/` folder (DuckLake makes the table's folder before the read-only
check refuses), and `COPY ... TO` wrote any file, inside the data dir too. `Reader` screens
each statement before DuckDB runs it: a COPY or EXPORT whose target is inside the data dir,
and a CREATE, ALTER, DROP or INSERT that names the `lake` catalog, are refused with a one-line
error. Everything else is the analyst's: `COPY ... TO 'elsewhere.csv'`, temporary tables,
`.to_arrow_table()`. A relation's own writers (`rel.write_csv(path)`) write where they are told;
the data dir is not theirs to write either, and that is the one thing not screened.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from bgp_congruency.common import layout

#: Statement kinds that may write a file or the catalog: screened by `Reader`.
_WRITES = {"COPY", "EXPORT", "CREATE", "ALTER", "DROP", "INSERT", "UPDATE", "DELETE", "CREATE_FUNC"}
_TARGET = re.compile(r"\bTO\s+'((?:[^']|'')*)'", re.I)
_EXPORT = re.compile(r"^\s*EXPORT\s+DATABASE\s+(?:\w+\s+TO\s+)?'((?:[^']|'')*)'", re.I)
_LAKE = re.compile(r"\blake\s*\.", re.I)
_TEMP = re.compile(r"\bTEMP(ORARY)?\b|\b(temp|memory)\s*\.", re.I)


class ReadOnlyError(duckdb.PermissionException):
    """A statement of a read-only `lake.connect` connection that would write under the data dir."""


class Reader:
    """A DuckDB connection (every attribute is the connection's) whose `execute`, `sql`, `query`
    and `executemany` refuse what would write under `root` (module docstring)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, root: Path):
        object.__setattr__(self, "_con", con)
        object.__setattr__(self, "_root", layout.home(root))

    def __getattr__(self, name):
        return getattr(self._con, name)

    def __setattr__(self, name, value):
        setattr(self._con, name, value)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._con.close()
        return False

    def __repr__(self) -> str:
        return f"<lake.connect of {self._root} (read-only)>"

    def _screen(self, sql) -> None:
        if not isinstance(sql, str):
            return
        try:
            stmts = self._con.extract_statements(sql)
        except duckdb.Error:
            return  # DuckDB says what is wrong with it
        for s in stmts:
            kind = str(s.type).rsplit(".", 1)[-1]
            if kind not in _WRITES:
                continue
            text = s.query
            m = _EXPORT.match(text) if kind == "EXPORT" else _TARGET.search(text) if kind == "COPY" else None
            if m:
                raw = m.group(1).replace("''", "'")
                # s3:// (and httpfs's other spellings of it): the data dir's own URL
                target = re.sub(r"^s3[an]://", "s3://", raw.rstrip("/")) if "://" in raw else os.path.abspath(raw)
                if target == self._root or target.startswith(self._root + "/"):
                    raise ReadOnlyError(f"{kind} TO {m.group(1)}: inside the data dir {self._root}, which this "
                                        "connection only reads (lake.connect); write it elsewhere")
            elif kind not in ("COPY", "EXPORT") and (_LAKE.search(text) or self._in_lake() and not _TEMP.search(text)):
                raise ReadOnlyError(f"{kind} on lake: the published tables are read-only (lake.connect); a table "
                                    "of your own: CREATE TEMP TABLE name AS ...")

    def _in_lake(self) -> bool:
        """Whether unqualified names are the catalog's (after `USE lake`)."""
        return self._con.execute("SELECT current_database()").fetchone()[0] == "lake"

    def execute(self, query, *args, **kw):
        self._screen(query)
        self._con.execute(query, *args, **kw)
        return self

    def executemany(self, query, *args, **kw):
        self._screen(query)
        self._con.executemany(query, *args, **kw)
        return self

    def sql(self, query, *args, **kw):
        self._screen(query)
        return self._con.sql(query, *args, **kw)

    query = sql

    def cursor(self) -> Reader:
        return Reader(self._con.cursor(), layout.root_of(self._root))
