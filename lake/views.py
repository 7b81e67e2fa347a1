"""One view per table, under its own name, in a connection's default schema: the catalog's
tables (lake/attach.py) and ingest's two plain-Parquet tables, each column commented with
its documentation (common/table_docs.py; duckdb_columns() shows it).

Ingest's views read its files in place: `rib_entries` only the snapshots the manifest records
as ingested `ok`, so a month still being ingested shows only its finished files; files being
written are dot-names, which the `[!.]*` in the globs excludes (DuckDB's own `*` matches dot
files). `month` is a 'YYYY-MM' string everywhere.
"""
from __future__ import annotations

import glob
import re
from pathlib import Path

from bgp_congruency.common.duck import glob_literal, quote
from bgp_congruency.common.table_docs import DOCS, TableDoc
from bgp_congruency.common.tables import sql_type
from bgp_congruency.lake.attach import ALIAS, NOT_IN_LAKE, tables
from bgp_congruency.lake.commit import attached_columns

#: The type of `month` in every view and of the ingest tables' partition keys.
MONTH_TYPE = "VARCHAR"


def _ident(s: str) -> str:
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", s):
        raise ValueError(f"unexpected table or column name {s!r}")
    return s


def _glob(root: Path, doc: TableDoc) -> str:
    """The table's layout (`t/month=YYYY-MM/collector=NAME/*.parquet`) as a glob that skips dot files."""
    parts = []
    for seg in doc.layout.split("/"):
        if "=" in seg:
            seg = seg.split("=")[0] + "=*"
        elif seg.startswith("*"):
            seg = "[!.]" + seg
        parts.append(seg)
    return "/".join([glob_literal(root), *parts])


def _literal(glob_prefix: str) -> str:
    """The folder a glob_literal() prefix names (file names DuckDB reports are literal)."""
    return re.sub(r"\[([\[*?])\]", r"\1", glob_prefix)


def ingest_globs(root: Path) -> dict[str, str]:
    """name -> glob of ingest's tables that have at least one file."""
    out = {}
    for name in NOT_IN_LAKE:
        g = _glob(root, DOCS[name])
        if any(Path(p).is_file() for p in glob.iglob(g)):
            out[name] = g
    return out


def ingest_select(name: str, g: str, with_manifest: bool) -> str:
    """The SELECT of one of ingest's tables: month first, then the documented columns."""
    doc = DOCS[name]
    keys = [seg.split("=")[0] for seg in doc.layout.split("/") if "=" in seg]
    hive_types = ", ".join(f"{quote(k)}: {MONTH_TYPE}" for k in keys)
    cols = ["month"] + [c for c in doc.schema.names if c != "month"]
    select = ", ".join(f"e.{_ident(c)}" for c in cols)
    # No union_by_name: it would read every file's footer at each query; the schemas are a contract.
    src = (f"read_parquet({quote(g)}, hive_partitioning = true, hive_types = {{{hive_types}}}"
           f"{', filename = true' if name == 'rib_entries' else ''})")
    where = ""
    if name == "rib_entries" and with_manifest:
        # The file's absolute name rebuilt from the manifest row: an IN on `filename` lets DuckDB
        # skip files before reading them: a few ms per query (bench/warehouse.py; a correlated EXISTS was 3-30x).
        base = quote(_literal(g.split("/month=")[0]) + "/month=")
        where = (f" WHERE e.filename IN (SELECT {base} || m.month || '/collector=' || m.collector || '/' || "
                 "parse_filename(m.output) FROM main.manifest m WHERE m.status = 'ok')")
    return f"SELECT {select} FROM {src} e{where}"


def statements(root: Path, in_lake: dict[str, set[str]], month: str | None = None) -> tuple[list[str], list[str]]:
    """The SQL that makes every view (the catalog's tables `in_lake` with their columns, attached as `lake`, and
    ingest's files under `root`), with their comments; and the views' names, in
    documentation order. `month`: only that month's rows in every view."""
    made, sql = [], []
    ingest = ingest_globs(root)
    for name, doc in DOCS.items():  # manifest before rib_entries
        if name in ingest:
            body = ingest_select(name, ingest[name], "manifest" in ingest)
        elif name in in_lake and name in tables():
            # every documented column: NULL where the catalog (made by an earlier version) has none yet
            cols = ["month"] + [_ident(f.name) if f.name in in_lake[name] else
                                f"CAST(NULL AS {sql_type(f.type, 'duckdb')}) AS {_ident(f.name)}"
                                for f in doc.schema if f.name != "month"]
            extra = ", snapshot_id AS catalog_snapshot" if name == "provenance" else ""
            body = f"SELECT {', '.join(cols)}{extra} FROM {ALIAS}.{name}"
        else:
            continue
        if month is not None:
            body = f"SELECT * FROM ({body}) WHERE month = {quote(month)}"
        sql.append(f"CREATE OR REPLACE VIEW main.{name} AS {body}")
        made.append(name)
        sql.append(f"COMMENT ON VIEW main.{name} IS {quote(doc.about)}")
        for col, c in doc.columns.items():
            sql.append(f"COMMENT ON COLUMN main.{name}.{_ident(col)} IS "
                       f"{quote(f'{c.meaning} [unit: {c.unit}; step: {c.step}]')}")
        if "month" not in doc.columns:
            sql.append(f"COMMENT ON COLUMN main.{name}.month IS "
                       "'calendar month of the RIB snapshots [unit: YYYY-MM]'")
        if name == "provenance":
            sql.append("COMMENT ON COLUMN main.provenance.catalog_snapshot IS "
                       "'the catalog snapshot that published this row: open it with snapshot=N to read the month as published then'")
    return sql, made


def create(con, root: Path) -> list[str]:
    """Create every view `con` can have (the catalog attached as `lake`, ingest's files under
    `root`); returns their names, in documentation order."""
    sql, made = statements(root, attached_columns(con) if _has_lake(con) else {})
    for s in sql:
        con.execute(s)
    return made


def _has_lake(con) -> bool:
    return bool(con.execute("SELECT 1 FROM duckdb_databases() WHERE database_name = ?", [ALIAS]).fetchall())


def names(con) -> set[str]:
    """The views `con` has in its default schema."""
    return {r[0] for r in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' "
        "AND database_name = current_database()").fetchall()}
