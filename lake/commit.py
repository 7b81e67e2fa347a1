"""A publish: a month's tables committed to the DuckLake catalog in one transaction, so every
reader, the project's and the analyst's, sees a month's tables all old or all new.

A publish moves the month's staged table folders to their final place under a name of their
own (`<table>/month=M/<publish id>/`: nothing already published is touched), then registers
them in ONE catalog transaction that also drops the month's rows of the tables it replaces
(`DELETE ... WHERE month = M`: DuckLake drops each old file whole, no delete files). Until
the commit no reader sees the new files; from it every new read sees all of them. A reader
holds the snapshot it began in, and the files of every snapshot stay until `vacuum`
(lake/upkeep.py) expires the snapshot. A publish killed before its commit leaves a folder
the catalog never registered: lake/upkeep.orphans finds it and the month's next run removes it.

The tables are every documented table but ingest's two (lake/attach.tables), created on first
publish with `month VARCHAR` and the schema's columns in its order, partitioned by month.
Their path is `DATA_DIR/<table>/` (the catalog's `main` schema has the empty path), so
DuckLake registers each file relative to the data dir and a copy or mount of the data dir at
another path reads its own files (lake/attach.py). A new catalog is made so before its first
table, and a catalog made before that is upgraded by its next publish (`_relative`).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pyarrow as pa

from bgp_congruency.common import atomic, hooks, layout, s3
from bgp_congruency.common.duck import glob_literal, quote
from bgp_congruency.common.tables import sql_type
from bgp_congruency.lake.attach import (
    ALIAS,
    MISSPELLED,
    LakeError,
    attach,
    catalog_name,
    connection,
    current,
    exists,
    load,
    location,
    misspelled,
    opened,
    tables,
    why,
)

#: The catalog's own ledger: which tables of which month are published, with how many rows
#: (a table with no rows has no file, so the files alone cannot say it was published). In a
#: schema of its own, so its files are under DATA_DIR/_congruency/ (skipped like _staging).
LEDGER_SCHEMA, LEDGER_TABLE = "_congruency", "publishes"
LEDGER = f"{LEDGER_SCHEMA}.{LEDGER_TABLE}"


def attached_columns(con) -> dict[str, set[str]]:
    """table -> its columns in the attached catalog: a catalog created by an earlier version
    lacks the columns documented since, until the next publish adds them (_create_tables)."""
    out: dict[str, set[str]] = {}
    for t, c in con.execute("SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = ? "
                            "AND schema_name = 'main'", [ALIAS]).fetchall():
        out.setdefault(t, set()).add(c)
    return out


def has_ledger(con) -> bool:
    return bool(con.execute("SELECT 1 FROM duckdb_tables() WHERE database_name = ? AND schema_name = ? "
                            "AND table_name = ?", [ALIAS, LEDGER_SCHEMA, LEDGER_TABLE]).fetchall())


def _relative(con, root) -> None:
    """Make the `main` schema's path empty (its tables at DATA_DIR/<table>/) and every file
    registered there by absolute path relative to its table, when the catalog `con` has
    attached is not so yet (new, or made by an earlier version); and repair the paths an
    earlier version registered as the caller spelled a relative data dir (`misspelled`).
    Through a connection of its own to the catalog's database (DuckLake reads the schema's
    path when it attaches), then attached again. Idempotent; one transaction."""
    meta = f"__ducklake_metadata_{ALIAS}"
    got = con.execute(f"SELECT path FROM {meta}.ducklake_schema WHERE schema_name = 'main' AND end_snapshot IS NULL"
                      ).fetchone()
    if (got is None or got[0] == "") and not misspelled(con, meta):
        return
    con.execute(f"DETACH {ALIAS}")
    base = layout.home(root) + "/"
    own = meta_connection(root)
    try:
        own.execute("BEGIN")
        own.execute("UPDATE meta.ducklake_schema SET path = '', path_is_relative = true WHERE schema_name = 'main'")
        for table_id, path in own.execute("SELECT table_id, path FROM meta.ducklake_table WHERE schema_id = "
                                          "(SELECT schema_id FROM meta.ducklake_schema WHERE schema_name = 'main')"
                                          ).fetchall():
            prefix = base + path
            for t in ("ducklake_data_file", "ducklake_delete_file"):
                own.execute(f"UPDATE meta.{t} SET path = path[{len(prefix) + 1}:], path_is_relative = true "
                            "WHERE table_id = ? AND NOT path_is_relative AND starts_with(path, ?)", [table_id, prefix])
        repair(own, "meta")
        own.execute("COMMIT")
    finally:
        own.close()
    attach(con, root, read_only=False)


def meta_connection(root):
    """A connection with the catalog's own database attached as `meta` (its DuckLake tables,
    not the lake): to rewrite paths DuckLake itself does not change."""
    kind, where = location(root).split(":", 1)
    own = connection()
    try:
        load(own, root)
        own.execute(f"ATTACH {quote(where)} AS meta (TYPE {kind})")
    except BaseException:
        own.close()
        raise
    return own


def _table_part(path: str, table_paths: list[str]) -> tuple[str, str] | None:
    """(the table's path, the rest) of a misspelled path: where `<table>/month=` begins it
    or follows a `/` (the last such place), else None."""
    best = None
    for tp in table_paths:
        i = path.rfind(tp + layout.MONTH)
        while i > 0 and path[i - 1] != "/":
            i = path.rfind(tp + layout.MONTH, 0, i)
        if i >= 0 and (best is None or i > best[0]):
            best = (i, tp)
    return None if best is None else (best[1], path[best[0] + len(best[1]):])


def repair(own, meta: str) -> int:
    """Rewrite the misspelled paths of `meta` (attached on `own`, in its transaction) relative
    to their table (data files) or to the data dir (files scheduled for deletion), as every
    other file is; returns how many. A path in which no table's folder is found stays."""
    tables_ = own.execute(f"SELECT t.table_id, t.path FROM {meta}.ducklake_table t JOIN {meta}.ducklake_schema s "
                          "USING (schema_id) WHERE s.path = '' AND t.path_is_relative").fetchall()
    paths = sorted({p for _i, p in tables_}, key=len, reverse=True)
    n = 0
    for fid, tid, path in own.execute(f"SELECT data_file_id, table_id, path FROM {meta}.ducklake_data_file "
                                      f"WHERE {MISSPELLED}").fetchall():
        own_path = dict(tables_).get(tid)
        part = _table_part(path, [own_path] if own_path else [])
        if part:
            own.execute(f"UPDATE {meta}.ducklake_data_file SET path = ?, path_is_relative = true "
                        "WHERE data_file_id = ?", [part[1], fid])
            n += 1
    for fid, path in own.execute(f"SELECT data_file_id, path FROM {meta}.ducklake_files_scheduled_for_deletion "
                                 f"WHERE {MISSPELLED}").fetchall():
        part = _table_part(path, paths)
        if part:
            own.execute(f"UPDATE {meta}.ducklake_files_scheduled_for_deletion SET path = ?, path_is_relative = true "
                        "WHERE data_file_id = ? AND path = ?", [part[0] + part[1], fid, path])
            n += 1
    return n


def repair_in_place(root) -> int:
    """Repair the catalog's misspelled paths (`repair`) in a transaction of its own, when it
    has any (a data dir without a catalog, or on a read-only mount, is left as it is);
    returns how many."""
    if not exists(root) or atomic.read_only(root):
        return 0
    with opened(root, read_only=False) as con:
        if not misspelled(con, f"__ducklake_metadata_{ALIAS}"):
            return 0
    own = meta_connection(root)
    try:
        own.execute("BEGIN")
        n = repair(own, "meta")
        own.execute("COMMIT")
        return n
    finally:
        own.close()


def _create_tables(con, root) -> None:
    """Create every table of the catalog not there yet (from its documented schema) and the
    ledger, and add the documented columns a table created by an earlier version lacks
    (DuckLake's schema evolution: files registered before read NULL there), in one
    transaction (one snapshot)."""
    _relative(con, root)
    have = attached_columns(con)
    todo = [n for n in tables() if n not in have]
    grow = [(n, f) for n in tables() if n in have for f in tables()[n].schema if f.name not in have[n]]
    if not todo and not grow and has_ledger(con):
        return
    con.execute("BEGIN")
    for name, f in grow:
        con.execute(f"ALTER TABLE {ALIAS}.{name} ADD COLUMN {f.name} {sql_type(f.type, 'duckdb')}")
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {ALIAS}.{LEDGER_SCHEMA}")
    for name in todo:
        schema = tables()[name].schema
        fields = [pa.field("month", pa.string())] + [f for f in schema if f.name != "month"]
        con.register("_empty", pa.schema(fields).empty_table())
        con.execute(f"CREATE TABLE {ALIAS}.{name} AS SELECT * FROM _empty")
        con.unregister("_empty")
        con.execute(f"ALTER TABLE {ALIAS}.{name} SET PARTITIONED BY (month)")
    con.execute(f"""CREATE TABLE IF NOT EXISTS {ALIAS}.{LEDGER} (month VARCHAR, table_name VARCHAR,
                    rows BIGINT, files INTEGER, folder VARCHAR, published_at TIMESTAMPTZ)""")
    what = [f"create tables: {', '.join(todo) or LEDGER}"] if todo or not grow else []
    what += [f"add column {n}.{f.name}" for n, f in grow]
    con.execute(f"CALL {ALIAS}.set_commit_message('congruency', ?)", ["; ".join(what)])
    con.execute("COMMIT")


def publish(root, month: str, folders: dict[str, str], *, replace: bool = True, retire: tuple[str, ...] = (),
            message: str = "", expect: list[str] | None = None) -> int:
    """Register each table's Parquet files under `folders[table]` (already at their final
    place, below `<table>/month=M/`) as the month's rows, in one transaction; `replace` drops
    the month's rows the tables had, `retire` those of tables derived from them (no longer
    true of the new rows: unpublished until they are computed again); `expect`: files the
    caller put there (an upload to S3), every one of which must still be there (a vacuum
    with a short grace may have taken a folder no catalog named yet). Returns the snapshot."""
    home = layout.home(root)
    root = layout.root_of(home)
    # Every file by its absolute path under the data dir, whatever folder the caller runs in
    # and however it spelled the data dir: DuckLake then registers it relative to the data
    # dir (a path outside it would be registered as given, right only from the caller's folder).
    folders = {t: layout.home(f) for t, f in folders.items()}
    for t, f in folders.items():
        if not f.startswith(home + "/"):
            raise LakeError(f"{f}: not inside the data dir {root}: {t} of {month} is not published")
    with opened(root, read_only=False) as con:
        try:
            _create_tables(con, root)
            con.execute("BEGIN")
            ledger = []
            listed = {t: data_files(f) for t, f in folders.items()}
            lost = sorted(set(expect or ()) - {f for fs in listed.values() for f in fs})
            if lost:
                raise LakeError(f"{lost[0]}: uploaded, and gone before the commit ({len(lost)} files; a vacuum "
                                f"with a short grace?): {month} is not published; run it again")
            for table, folder in folders.items():
                if replace:
                    con.execute(f"DELETE FROM {ALIAS}.{table} WHERE month = ?", [month])
                files = listed[table]
                rows = con.execute("SELECT coalesce(sum(num_rows), 0) FROM parquet_file_metadata($f)",
                                   {"f": [glob_literal(f) for f in files]}).fetchone()[0] if files else 0
                if rows:  # DuckLake registers no file without rows
                    con.execute("CALL ducklake_add_data_files(?, ?, ?, hive_partitioning => true)",
                                [ALIAS, table, files])
                # the folder relative to the data dir: still right after a relocate
                ledger.append((month, table, rows, len(files) if rows else 0, folder.removeprefix(home + "/")))
            for table in retire:
                con.execute(f"DELETE FROM {ALIAS}.{table} WHERE month = ?", [month])
            gone = (list(folders) if replace else []) + list(retire)
            empty = []  # folders of replaced publishes that registered no file: no snapshot reads them
            if gone:
                empty = [r[0] for r in con.execute(
                    f"SELECT folder FROM {ALIAS}.{LEDGER} WHERE month = ? AND list_contains(?, table_name) AND rows = 0",
                    [month, gone]).fetchall()]
                con.execute(f"DELETE FROM {ALIAS}.{LEDGER} WHERE month = ? AND list_contains(?, table_name)",
                            [month, gone])
            con.executemany(f"INSERT INTO {ALIAS}.{LEDGER} VALUES (?, ?, ?, ?, ?, now())", ledger)
            con.execute(f"CALL {ALIAS}.set_commit_message('congruency', ?)",
                        [message or f"publish {month}: {', '.join(folders)}"])
            hooks.pause("commit")
            con.execute("COMMIT")
        except duckdb.Error as exc:
            raise LakeError(f"{catalog_name(root)}: publishing {month} failed: {why(exc)}") from None
        mine = set(folders.values())
        for rel in empty:  # a publish's own folder (<table>/month=M/<id>), never a migrated month folder
            if len(Path(rel).parts) == 3 and f"{home}/{rel}" not in mine:
                if s3.is_s3(home):  # committed: a failure here leaves a folder `lake vacuum` removes
                    try:
                        s3.Bucket(home).delete(f"{home}/{rel}")
                    except OSError:
                        pass
                else:
                    shutil.rmtree(f"{home}/{rel}", ignore_errors=True)
        return current(con)


def data_files(folder) -> list[str]:
    """The Parquet files of a publish folder the catalog registers, sorted: not Spark's marker
    files (`_SUCCESS`, `.crc`) nor a writer's dot-temp files."""
    if s3.is_s3(folder):
        return sorted(f"{folder.rstrip('/')}/{n}" for n in s3.Bucket(folder).children(folder) if layout.is_data_file(n))
    return sorted(str(p) for p in Path(folder).resolve().glob("[!._]*.parquet"))

