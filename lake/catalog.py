"""The published tables' DuckLake catalog: every reader, the project's and the analyst's, sees
a month's tables through it, all old or all new.

A publish moves the month's staged table folders to their final place under a name of their
own (`<table>/month=M/<publish id>/`: nothing already published is touched), then registers
them in ONE catalog transaction that also drops the month's rows of the tables it replaces
(`DELETE ... WHERE month = M`: DuckLake drops each old file whole, no delete files). Until
the commit no reader sees the new files; from it every new read sees all of them. A reader
holds the snapshot it began in, and the files of every snapshot stay until `vacuum` expires
the snapshot (then DuckLake deletes the files no live snapshot needs). A publish killed before
its commit leaves a folder the catalog never registered: `orphans` finds it and the month's
next run removes it.

The catalog is a SQLite file in the data dir (common/layout.catalog_file), created by the
first publish; or, for a data dir that several hosts publish to or read (a shared file
system), a PostgreSQL database: the config's `catalog`, which the first compare writes to
DATA_DIR/catalog.url so every reader of the data dir finds it. DuckDB 1.5.5 loads the
ducklake, sqlite and postgres extensions from their PyPI wheels (pyproject.toml), since it
cannot download them here. Ingest's rib_entries and manifest stay
plain Parquet: each dump's file is written once under a final name and the manifest says
which are whole (reports: DOCS["manifest"]); no reader needs them in a transaction with
anything else.

The tables are every documented table but those two (common/table_docs.DOCS), created on
first publish with `month VARCHAR` and the schema's columns in its order, partitioned by month.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from bgp_congruency.common import layout
from bgp_congruency.common.duck import glob_literal, quote
from bgp_congruency.common.errors import BadInput, CongruencyError

ALIAS = "lake"
#: Ingest's own files: plain Parquet, not in the catalog (module docstring).
NOT_IN_LAKE = ("manifest", "rib_entries")
#: The extensions a catalog needs, by where it is, as their wheels name them (duckdb_extension_<name>).
EXTENSIONS = {"sqlite": ("ducklake", "sqlite_scanner"), "postgres": ("ducklake", "postgres_scanner")}


class LakeError(CongruencyError):
    """The catalog could not be read or written; the message names it and why."""


class NoCatalog(BadInput):
    """Nothing was ever published in this data dir (exit 2)."""


def tables() -> dict:
    """name -> TableDoc of every published table the catalog holds, in documentation order
    (its ledger, LEDGER, aside)."""
    from bgp_congruency.common.table_docs import DOCS

    return {n: d for n, d in DOCS.items() if n not in NOT_IN_LAKE}


def extension_file(name: str) -> str:
    """The extension binary its PyPI wheel installed for this DuckDB (duckdb_extension_<name>)."""
    import importlib.util

    import duckdb

    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    ver = duckdb.__version__
    f = spec and Path(spec.origin).parent / "extensions" / f"v{ver}" / f"{name}.duckdb_extension"
    if not f or not f.is_file():
        raise LakeError(f"the DuckDB extension {name} for DuckDB {ver} is not installed "
                        f"(pip install duckdb-extension-{name.replace('_', '-')}=={ver})")
    return str(f)


def load(con, root) -> None:
    """Load the extensions `root`'s catalog needs into `con` from their wheels (no download)."""
    for name in extensions(root):
        con.execute(f"LOAD {quote(extension_file(name))}")


def extensions(root) -> tuple[str, ...]:
    kind = location(root).split(":", 1)[0]
    if kind not in EXTENSIONS:
        raise LakeError(f"{layout.catalog_pointer(root)}: names no catalog this project knows ({kind!r}: "
                        "postgres: and a libpq conninfo expected)")
    return EXTENSIONS[kind]


# --- where a data dir's catalog is --------------------------------------------------------

def location(root) -> str:
    """The catalog's DuckLake location (what follows `ducklake:`): `postgres:CONNINFO` from
    DATA_DIR/catalog.url, else `sqlite:DATA_DIR/catalog.sqlite`."""
    p = layout.catalog_pointer(root)
    if p.is_file():
        return p.read_text().strip()
    return f"sqlite:{layout.catalog_file(root)}"


def exists(root) -> bool:
    """Whether the data dir has a catalog (anything was ever published in it)."""
    return layout.catalog_pointer(root).is_file() or layout.catalog_file(root).is_file()


def catalog_name(root) -> str:
    """The catalog as messages name it: its file, or its PostgreSQL database (no password)."""
    loc = location(root)
    if loc.startswith("sqlite:"):
        return loc.removeprefix("sqlite:")
    return "catalog " + masked(loc)


def masked(text: str) -> str:
    """`text` with any password of a libpq conninfo or URI in it replaced by ***."""
    import re

    text = re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", text, flags=re.I)
    return re.sub(r"(\w+://[^:/@\s]*:)[^@\s]*@", r"\1***@", text)


def _why(exc: Exception) -> str:
    """A DuckDB error's first line, any password in it masked (postgres names its DSN)."""
    return masked(str(exc).splitlines()[0])


def parse_location(value: str) -> str:
    """The config's `catalog` as a DuckLake location: a PostgreSQL URI (`postgresql://...`)
    or `postgres:` and a libpq conninfo; BadInput otherwise."""
    v = value.strip()
    if v.startswith(("postgresql://", "postgres://")):
        return "postgres:" + v
    if v.startswith("postgres:") and v.removeprefix("postgres:").strip():
        return v
    raise BadInput(f"catalog: {value!r} is not a PostgreSQL catalog (postgresql://USER@HOST:PORT/DB, or "
                   "postgres: and a libpq conninfo); leave it unset for DATA_DIR/catalog.sqlite")


def configure(root, value: str | None) -> None:
    """Make `root`'s catalog the config's `catalog` (None: whatever the data dir has, else
    the SQLite file): written to DATA_DIR/catalog.url before the first publish; a data dir
    whose catalog is elsewhere is BadInput (its tables are there: the config must follow)."""
    if value is None:
        return
    want = parse_location(value)
    root = Path(root)
    ptr = layout.catalog_pointer(root)
    if ptr.is_file():
        if ptr.read_text().strip() == want:
            return
        try:  # a catalog never created there yet (a mistyped one): the config's replaces it
            with opened(root):
                pass
        except NoCatalog:
            pass
        except LakeError as exc:  # not answering is not "never created": nothing is replaced
            raise BadInput(f"catalog: {root} publishes to {catalog_name(root)}, which cannot be read ({exc}); if "
                           f"nothing was ever published there, delete {ptr} and run again") from None
        else:
            raise BadInput(f"catalog: {root} publishes to {catalog_name(root)}, not to the config's; set catalog to "
                           f"that, or use another data dir")
    if layout.catalog_file(root).is_file():
        raise BadInput(f"catalog: {root} already has its catalog in {layout.catalog_file(root)}; unset catalog "
                       "for this data dir, or use another one")
    from bgp_congruency.common import atomic

    root.mkdir(parents=True, exist_ok=True)
    atomic.write_text(ptr, want + "\n", mode=0o600)  # may hold a password


def legacy_months(root) -> dict[str, list[str]]:
    """month -> tables published before the catalog existed (files right in `<table>/month=M/`),
    that no catalog registered yet."""
    out: dict[str, list[str]] = {}
    for name in tables():
        for d in sorted(Path(root, name).glob(f"{layout.MONTH}*")):
            if any(f.is_file() for f in d.glob("[!._]*.parquet")):
                out.setdefault(d.name.removeprefix(layout.MONTH), []).append(name)
    return out


def no_catalog(root) -> str:
    """The one line for a data dir without a catalog: what to run."""
    if legacy_months(root):
        return (f"{root}: its tables were published before the catalog ({layout.CATALOG}); "
                f"run congruency lake migrate --data-dir {root} (registers them in place, no copy)")
    return f"{root}: no published tables (no catalog {layout.CATALOG}; run congruency run for a month first)"


def catalog_url(root) -> str:
    return f"ducklake:{location(root)}"


def attach(con, root, *, read_only: bool = True, snapshot: int | None = None, alias: str = ALIAS) -> None:
    """Attach the data dir's catalog to `con` as `alias` (read-only unless asked; at a past
    snapshot when given). A read-only attach of a data dir with no catalog is NoCatalog."""
    import duckdb

    root = Path(root)
    if read_only and not exists(root):
        raise NoCatalog(no_catalog(root))
    opts = [f"DATA_PATH {quote(str(root.resolve()) + '/')}"]
    if read_only:
        opts.append("READ_ONLY")
    else:
        # No rows in the catalog itself: a DELETE of inlined rows is recorded row by row, and
        # the month's old files would stay live (ducklake_list_files) with their rows deleted.
        # Without inlining, a DELETE of a whole file ends it.
        opts.append("DATA_INLINING_ROW_LIMIT 0")
    if snapshot is not None:
        opts.append(f"SNAPSHOT_VERSION {int(snapshot)}")
    load(con, root)
    try:
        con.execute(f"ATTACH {quote(catalog_url(root))} AS {alias} ({', '.join(opts)})")
    except duckdb.Error as exc:
        import re

        if read_only and "creating a new DuckLake is explicitly disabled" in str(exc):
            raise NoCatalog(no_catalog(root)) from None  # configured (catalog.url), nothing published yet
        home = re.search(r'existing data path in the catalog "([^"]*)"', str(exc))
        if home and home.group(1).rstrip("/") != str(root.resolve()):
            fix = (f"run congruency lake relocate --data-dir {root}" if location(root).startswith("sqlite:") else
                   "a PostgreSQL catalog serves one data dir: give this one its own (catalog, another database), "
                   "or relocate after moving it (congruency lake relocate)")
            raise LakeError(f"{catalog_name(root)}: the catalog of {home.group(1).rstrip('/')}, not of {root.resolve()} "
                            f"(copied or moved?); {fix}") from None
        raise LakeError(f"{catalog_name(root)}: {_why(exc)}") from None


#: The catalog's tables that hold file paths (DuckLake's spec), absolute where a publish
#: registered a file of the data dir.
_PATH_TABLES = ("ducklake_data_file", "ducklake_delete_file", "ducklake_files_scheduled_for_deletion")


def relocate(root) -> dict:
    """Make a copied or moved data dir's catalog its own: every absolute path under the old
    data dir (and the catalog's data_path) rewritten to this one, in one transaction of the
    catalog's database. Run it with no other process using the catalog."""
    import duckdb

    root = Path(root).resolve()
    if not exists(root):
        raise NoCatalog(no_catalog(root))
    kind, where = location(root).split(":", 1)
    new = str(root) + "/"
    con = duckdb.connect()
    try:
        load(con, root)
        con.execute(f"ATTACH {quote(where)} AS meta (TYPE {kind})")
        got = con.execute("SELECT value FROM meta.ducklake_metadata WHERE key = 'data_path' AND scope IS NULL").fetchall()
        if not got:
            raise LakeError(f"{catalog_name(root)}: no data_path in the catalog (not a DuckLake catalog?)")
        old = got[0][0]
        if old == new:
            return {"from": old, "to": new, "paths": 0}
        if kind != "sqlite" and Path(old).is_dir():
            raise LakeError(f"{catalog_name(root)}: still the catalog of {old.rstrip('/')}, which exists: a copy needs a "
                            "catalog of its own (set catalog to another database); relocate only a moved data dir")
        con.execute("BEGIN")
        con.execute("UPDATE meta.ducklake_metadata SET value = ? WHERE key = 'data_path' AND scope IS NULL", [new])
        n = 0
        for t in _PATH_TABLES:
            n += con.execute(f"SELECT count(*) FROM meta.{t} WHERE starts_with(path, ?)", [old]).fetchone()[0]
            con.execute(f"UPDATE meta.{t} SET path = ? || path[{len(old) + 1}:] WHERE starts_with(path, ?)", [new, old])
        con.execute("COMMIT")
    except duckdb.Error as exc:
        raise LakeError(f"{catalog_name(root)}: relocating failed: {_why(exc)}") from None
    finally:
        con.close()
    return {"from": old, "to": new, "paths": n}


#: data dir -> the snapshot this process reads it at (`pinned`).
_pins: dict[str, int] = {}


@contextmanager
def pinned(root, snapshot: int | None = None):
    """Every read-only opening of `root`'s catalog in this process, during the block, reads
    one snapshot: `snapshot`, or the one current when the block began; so a command that
    reads in several queries (a report, the hints and their export) sees one version of every
    month. Re-entrant (an inner block with its own `snapshot` reads that one meanwhile); a
    data dir with no catalog yet is not pinned."""
    key = str(Path(root).resolve())
    before = _pins.get(key)
    if snapshot is None and (before is not None or not exists(root)):
        yield
        return
    if snapshot is None:
        with opened(root) as con:
            snapshot = current(con)
    _pins[key] = snapshot
    try:
        yield
    finally:
        if before is None:
            _pins.pop(key, None)
        else:
            _pins[key] = before


def pin_of(root) -> int | None:
    return _pins.get(str(Path(root).resolve()))


@contextmanager
def opened(root, *, read_only: bool = True, snapshot: int | None = None):
    """An in-memory DuckDB with the catalog attached as `lake` (read-only: at the snapshot
    given, or the one `pinned` holds, else the current one), closed after the block."""
    import duckdb

    con = duckdb.connect()
    try:
        if read_only and snapshot is None:
            snapshot = pin_of(root)
        attach(con, root, read_only=read_only, snapshot=snapshot)
        try:
            yield con
        except duckdb.Error as exc:  # e.g. the catalog locked by a writer, or its file damaged
            raise LakeError(f"{catalog_name(root)}: {_why(exc)}") from None
    finally:
        con.close()


def _create_tables(con) -> None:
    """Create every table of the catalog not there yet (from its documented schema) and the
    ledger, and add the documented columns a table created by an earlier version lacks
    (DuckLake's schema evolution: files registered before read NULL there), in one
    transaction (one snapshot)."""
    import pyarrow as pa

    from bgp_congruency.pipeline.steps import sql_type

    have = attached_columns(con)
    todo = [n for n in tables() if n not in have]
    grow = [(n, f) for n in tables() if n in have for f in tables()[n].schema if f.name not in have[n]]
    if not todo and not grow and _has_ledger(con):
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


#: The catalog's own ledger: which tables of which month are published, with how many rows
#: (a table with no rows has no file, so the files alone cannot say it was published). In a
#: schema of its own, so its files are under DATA_DIR/_congruency/ (skipped like _staging).
LEDGER_SCHEMA, LEDGER_TABLE = "_congruency", "publishes"
LEDGER = f"{LEDGER_SCHEMA}.{LEDGER_TABLE}"


def publish(root, month: str, folders: dict[str, str], *, replace: bool = True, retire: tuple[str, ...] = (),
            message: str = "") -> int:
    """Register each table's Parquet files under `folders[table]` (already at their final
    place, below `<table>/month=M/`) as the month's rows, in one transaction; `replace` drops
    the month's rows the tables had, `retire` those of tables derived from them (no longer
    true of the new rows: unpublished until they are computed again). Returns the snapshot."""
    import duckdb

    with opened(root, read_only=False) as con:
        try:
            _create_tables(con)
            con.execute("BEGIN")
            ledger = []
            for table, folder in folders.items():
                if replace:
                    con.execute(f"DELETE FROM {ALIAS}.{table} WHERE month = ?", [month])
                files = data_files(folder)
                rows = con.execute("SELECT coalesce(sum(num_rows), 0) FROM parquet_file_metadata($f)",
                                   {"f": [glob_literal(f) for f in files]}).fetchone()[0] if files else 0
                if rows:  # DuckLake registers no file without rows
                    con.execute("CALL ducklake_add_data_files(?, ?, ?, hive_partitioning => true)",
                                [ALIAS, table, files])
                # the folder relative to the data dir: still right after a relocate
                ledger.append((month, table, rows, len(files) if rows else 0,
                               os.path.relpath(Path(folder).resolve(), Path(root).resolve())))
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
            from bgp_congruency.common import hooks

            hooks.pause("commit")
            con.execute("COMMIT")
        except duckdb.Error as exc:
            raise LakeError(f"{catalog_name(root)}: publishing {month} failed: {_why(exc)}") from None
        import shutil

        base = Path(root).resolve()
        mine = {Path(f).resolve() for f in folders.values()}
        for rel in empty:  # a publish's own folder (<table>/month=M/<id>), never a migrated month folder
            if len(Path(rel).parts) == 3 and (base / rel) not in mine:
                shutil.rmtree(base / rel, ignore_errors=True)
        return current(con)


def data_files(folder) -> list[str]:
    """The Parquet files of a publish folder the catalog registers, sorted: not Spark's marker
    files (`_SUCCESS`, `.crc`) nor a writer's dot-temp files."""
    return sorted(str(p) for p in Path(folder).glob("[!._]*.parquet"))


def files(con, table: str, month: str | None = None) -> list[str]:
    """The Parquet files of `table` (of `month`) in the snapshot `con` reads, sorted."""
    if table not in attached_tables(con):
        return []
    where = f" WHERE data_file LIKE {quote('%/month=' + month + '/%')}" if month else ""
    rows = con.execute(f"SELECT data_file, delete_file FROM ducklake_list_files({quote(ALIAS)}, {quote(table)}){where}").fetchall()
    partial = [f for f, d in rows if d is not None]
    if partial:  # a publish replaces whole files; rows deleted otherwise (by hand?) cannot be read as files
        raise LakeError(f"{table}: {partial[0]} has rows deleted in the catalog (a delete file); read the table "
                        "through SQL (lake.connect), or re-publish the month")
    return sorted(f for f, _d in rows)


def _has_ledger(con) -> bool:
    return bool(con.execute("SELECT 1 FROM duckdb_tables() WHERE database_name = ? AND schema_name = ? "
                            "AND table_name = ?", [ALIAS, LEDGER_SCHEMA, LEDGER_TABLE]).fetchall())


def months(con, table: str = "month_summary") -> list[str]:
    """Months whose `table` is published in the snapshot `con` reads (rows or not), oldest first."""
    if not _has_ledger(con):
        return []
    return [r[0] for r in con.execute(
        f"SELECT DISTINCT month FROM {ALIAS}.{LEDGER} WHERE table_name = ? ORDER BY 1", [table]).fetchall()]


def attached_tables(con) -> set[str]:
    """The published tables of the attached catalog (its `main` schema)."""
    return {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main'", [ALIAS]).fetchall()}


def attached_columns(con) -> dict[str, set[str]]:
    """table -> its columns in the attached catalog: a catalog created by an earlier version
    lacks the columns documented since, until the next publish adds them (_create_tables)."""
    out: dict[str, set[str]] = {}
    for t, c in con.execute("SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = ? "
                            "AND schema_name = 'main'", [ALIAS]).fetchall():
        out.setdefault(t, set()).add(c)
    return out


def current(con) -> int:
    """The snapshot `con` reads."""
    return con.execute(f"SELECT id FROM {ALIAS}.current_snapshot()").fetchone()[0]


def registered_folders(root) -> set[str]:
    """Every folder holding a file some snapshot registered that is still there (live, or
    let go and not yet deleted by vacuum), and every folder the ledger names as a table's
    current publish (a table without rows has no registered file, and its folder is no orphan)."""
    import duckdb

    base = str(Path(root).resolve())
    try:
        with opened(root) as con:  # the catalog's own tables (DuckLake's spec): every snapshot's files
            rows = con.execute(
                f"SELECT path, path_is_relative FROM __ducklake_metadata_{ALIAS}.ducklake_data_file UNION ALL "
                f"SELECT path, path_is_relative FROM __ducklake_metadata_{ALIAS}.ducklake_files_scheduled_for_deletion"
            ).fetchall()
            ledger = {os.path.join(base, r[0]) for r in con.execute(f"SELECT folder FROM {ALIAS}.{LEDGER}").fetchall()} \
                if _has_ledger(con) else set()
    except NoCatalog:
        return set()
    except duckdb.Error as exc:
        raise LakeError(f"{catalog_name(root)}: {_why(exc)}") from None
    full = [p if not rel else os.path.join(base, p) for p, rel in rows]
    # A file scheduled for deletion that vacuum already deleted protects no folder.
    return {os.path.dirname(f) for f in full if os.path.exists(f)} | ledger


def migrate(root) -> dict[str, list[str]]:
    """Register the tables a data dir published before the catalog, in place (no copy): each
    month's tables in one transaction, months the catalog already has skipped. Returns
    month -> tables registered."""
    root = Path(root).resolve()
    have = set()
    if exists(root):
        try:
            with opened(root) as con:
                have = set(months(con))
        except NoCatalog:
            pass
    done = {}
    for month, names in legacy_months(root).items():
        if month in have:
            continue
        publish(root, month, {t: str(layout.month_dir(root, t, month)) for t in names},
                message=f"migrate {month}: {', '.join(names)}")
        done[month] = names
    return done


def orphans(root, month: str | None = None) -> list[Path]:
    """Publish folders (of `month`, or all) no snapshot registered: left by a publish killed
    before its commit, emptied by vacuum, or holding only files without rows (never
    registered, never read). A publish in flight has such a folder too: delete one only
    under its month's lock (common/locks.py; every publish holds it)."""
    root = Path(root).resolve()
    known = registered_folders(root)
    out = []
    for name in tables():
        for d in Path(root, name).glob(f"{layout.month_part(month) if month else layout.MONTH + '*'}/*"):
            if d.is_dir() and str(d) not in known:
                out.append(d)
    return sorted(out)


def vacuum(root, keep: int, grace_s: float) -> dict:
    """Expire every snapshot but the newest `keep` (the current one always stays), then
    delete the files no remaining snapshot needs that were let go over `grace_s` seconds ago
    (a reader that began before the expiry may still be reading them), and the publish
    folders left empty or never committed, a month at a time under its lock (a month being
    run elsewhere is skipped: its next vacuum does it). Returns counts."""
    import shutil

    import duckdb

    from bgp_congruency.common.locks import LockBusy, month_lock

    if keep < 1:
        raise BadInput(f"keep: {keep}: at least the current snapshot is kept (1 or more)")
    with opened(root, read_only=False) as con:
        try:
            ids = [r[0] for r in con.execute(f"SELECT snapshot_id FROM {ALIAS}.snapshots() ORDER BY 1").fetchall()]
            old = ids[:-keep]
            if old:
                con.execute(f"CALL ducklake_expire_snapshots({quote(ALIAS)}, versions => ?)", [old])
            gone = len(con.execute(
                f"CALL ducklake_cleanup_old_files({quote(ALIAS)}, "
                f"older_than => now() - to_microseconds(?::BIGINT))", [int(grace_s * 1e6)]).fetchall())
        except duckdb.Error as exc:
            raise LakeError(f"{catalog_name(root)}: vacuum failed: {_why(exc)}") from None
    removed, busy = 0, []
    for month in sorted({d.parent.name.removeprefix(layout.MONTH) for d in orphans(root)}):
        try:
            with month_lock(root, month):  # no publish of it in flight meanwhile
                for d in orphans(root, month):
                    shutil.rmtree(d)
                    removed += 1
        except LockBusy:
            busy.append(month)
    return {"snapshots_expired": len(old), "snapshots_kept": len(ids) - len(old), "files_deleted": gone,
            "folders_removed": removed, "months_busy": busy}
