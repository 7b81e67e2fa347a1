"""One view per table, under its own name, in a connection's default schema: the catalog's
tables (lake/attach.py) and ingest's two plain-Parquet tables, each column commented with
its documentation (common/table_docs.py; duckdb_columns() shows it).

Ingest's views read its files in place: `routes` and `route_snapshots` each collector's current
generation (a merge in flight writes the next one under another name), `rib_entries` the
routes once per snapshot that saw them, `manifest` every month's file. `month` is a
'YYYY-MM' string everywhere.
"""
from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq

from bgp_congruency.common import layout, routes, s3
from bgp_congruency.common.duck import glob_literal, quote
from bgp_congruency.common.table_docs import DOCS
from bgp_congruency.common.tables import MANIFEST, sql_type
from bgp_congruency.lake.attach import ALIAS, tables
from bgp_congruency.lake.commit import attached_columns

#: The type of `month` in every view and of the ingest tables' partition keys.
MONTH_TYPE = "VARCHAR"


def _ident(s: str) -> str:
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", s):
        raise ValueError(f"unexpected table or column name {s!r}")
    return s


def _files(files) -> str:
    return "[" + ", ".join(quote(glob_literal(f)) for f in files) + "]"  # names, not patterns


def _names(f: str, bucket) -> list[str]:
    """The column names in a Parquet file's footer, local or in the bucket."""
    return pq.read_schema(s3.path(f) if bucket else f, filesystem=bucket and bucket.fs).names


def _column(name: str, typ, have) -> str:
    """A SELECT item: the column, or NULL of its type where the files (`have`) lack it."""
    return _ident(name) if name in have else f"CAST(NULL AS {sql_type(typ, 'duckdb')}) AS {_ident(name)}"


def ingest_bodies(root: Path) -> dict[str, str]:
    """name -> the SELECT of each of ingest's tables that has rows here: `manifest` (its
    files read in place; a column an earlier version did not write reads NULL), `routes`
    and `route_snapshots` (each collector's current generation, common/routes.py; a column
    an earlier version did not write reads NULL) and
    `rib_entries` (the routes once per snapshot: the decoded entries, row for row)."""
    out = {}
    bucket = s3.Bucket(root) if s3.is_s3(root) else None
    manifests, shadowed = [], []  # an earlier version's single file: its rows of collectors with a file of their own
    for m in layout.months_in(root, "manifest"):
        single, per = layout.manifest_parts(root, m)
        manifests += [str(f) for f in per.values()] + ([str(single)] if single else [])
        if single and per:
            shadowed.append(f"(filename = {quote(str(single))} AND collector IN ({', '.join(map(quote, per))}))")
    if manifests:
        have = set().union(*(_names(f, bucket) for f in manifests))
        cols = ", ".join(_column(c, t, have) for c, t in zip(MANIFEST.names, MANIFEST.types))
        out["manifest"] = (f"SELECT {cols} FROM read_parquet({_files(manifests)}, union_by_name = true, filename = true)"
                           + (f" WHERE NOT ({' OR '.join(shadowed)})" if shadowed else ""))
    gens = {(m, c): got for m in layout.months_in(root, "routes")
            for c, got in routes.month_input(layout.routes_dir(root, m), bucket).items()}
    files = [f for fs, _s in gens.values() for f in fs]
    if not files:
        return out
    # A generation's files share a schema (one footer each); an earlier version's lack the
    # later columns (as_path_repeats), which read NULL: one read_parquet per schema, so a
    # query binds without opening every file's footer (union_by_name would).
    by_schema: dict[frozenset, list[str]] = {}
    for fs, _s in gens.values():
        if fs:
            by_schema.setdefault(frozenset(_names(fs[0], bucket)) | {"month", "collector"}, []).extend(fs)
    doc = DOCS["routes"].schema
    out["routes"] = " UNION ALL ".join(
        "SELECT " + ", ".join(routes.origin_sql() + " AS origin_asn" if c == "origin_asn" else _column(c, t, have)
                              for c, t in zip(doc.names, doc.types))
        + f" FROM read_parquet({_files(fs)}, hive_partitioning = true, "
          f"hive_types = {{'month': {MONTH_TYPE}, 'collector': {MONTH_TYPE}}})"
        for have, fs in sorted(by_schema.items(), key=lambda kv: sorted(kv[0])))
    snaps = [(m, c, i, sn) for (m, c), (_f, sns) in sorted(gens.items()) for i, sn in enumerate(sns)]
    values = ", ".join(f"({quote(m)}, {quote(c)}, {i}::SMALLINT, {quote(sn.time.strftime('%Y-%m-%d %H:%M:%S+00'))}"
                       f"::TIMESTAMPTZ, {quote(sn.source_file)}, {quote(sn.project)})" for m, c, i, sn in snaps)
    out["route_snapshots"] = (f"SELECT * FROM (VALUES {values}) s(month, collector, snapshot, snapshot_time, "
                              "source_file, project)")
    w = routes.WORD
    out["rib_entries"] = f"""SELECT r.month, r.collector, s.project, s.snapshot_time, r.peer_asn, r.peer_ip, r.afi,
       r.prefix, r.as_path, r.has_as_set, r.as_path_raw, r.origin_asn, s.source_file, r.vp_bucket
FROM main.routes r JOIN main.route_snapshots s ON s.month = r.month AND s.collector = r.collector
 AND ((CASE WHEN s.snapshot < {w} THEN r.seen ELSE coalesce(r.seen_more[s.snapshot // {w}], 0) END)
      >> (s.snapshot % {w})::INTEGER) & 1 = 1"""
    return out


def statements(root: Path, in_lake: dict[str, set[str]], month: str | None = None) -> tuple[list[str], list[str]]:
    """The SQL that makes every view (the catalog's tables `in_lake` with their columns, attached as `lake`, and
    ingest's files under `root`), with their comments; and the views' names, in
    documentation order. `month`: only that month's rows in every view."""
    made, sql = [], []
    ingest = ingest_bodies(root)
    for name, doc in DOCS.items():  # routes and route_snapshots before rib_entries
        if name in ingest:
            body = ingest[name]
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
