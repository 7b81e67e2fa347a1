"""DATA_DIR/warehouse.duckdb: one DuckDB view per published table, over the Parquet in place.

No data is copied: each view is a `read_parquet` glob over the table's published files,
resolved when a query runs, so a month published after the refresh shows up at once.
The globs see only what is published: the compare job swaps a month's folder in by
rename (its `_staging/` tree is outside every table's folder) and files being written are
dot-names (`.x.parquet.tmp`), which the `[!.]*` in every glob excludes (DuckDB's own `*`
matches dot files). `rib_entries` rows are further limited to the snapshots the manifest
records as ingested `ok`, so a month still being ingested shows only its finished files
once its manifest says so.

Paths in the views are absolute, so the file works from any working directory; after
moving DATA_DIR, refresh. The file is written in storage version STORAGE_VERSION so the
`duckdb` command-line client (PyPI `duckdb-cli`, which lags the Python package) opens it.
"""
from __future__ import annotations

import re
from pathlib import Path

from bgp_congruency.common import atomic, duck, hooks, layout
from bgp_congruency.common.duck import glob_literal, quote
from bgp_congruency.common.errors import CongruencyError
from bgp_congruency.common.table_docs import DOCS, TableDoc

#: Oldest DuckDB release that can open the file: duckdb-cli >= 1.4 and Python duckdb 2.x both do.
STORAGE_VERSION = "v1.4.0"
#: `month` is a 'YYYY-MM' string everywhere: in the files, the partition keys and the views.
MONTH_TYPE = "VARCHAR"


class WarehouseError(CongruencyError):
    """A one-line reason the warehouse could not be built or opened."""


def data_root(cfg) -> Path:
    """The local data dir (DuckDB reads the Parquet in place)."""
    return layout.local(cfg.data_dir, "the warehouse").resolve()


def path(cfg) -> Path:
    return layout.warehouse_file(data_root(cfg))


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


def _keys(doc: TableDoc) -> list[str]:
    return [seg.split("=")[0] for seg in doc.layout.split("/") if "=" in seg]


def published(root: Path) -> dict[str, str]:
    """name -> glob for every documented table with at least one published file."""
    import glob

    out = {}
    for name, doc in DOCS.items():
        g = _glob(root, doc)
        if any(Path(p).is_file() for p in glob.iglob(g)):
            out[name] = g
    return out


def _ident(s: str) -> str:
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", s):
        raise WarehouseError(f"unexpected table or column name {s!r}")
    return s


def view_sql(schema: str, name: str, glob: str, with_manifest: bool) -> str:
    """CREATE VIEW for one table: month first, then the documented columns in schema order."""
    doc = DOCS[name]
    keys = _keys(doc)
    hive_types = ", ".join(f"{quote(k)}: {MONTH_TYPE}" for k in keys)
    cols = ["month"] + [c for c in doc.schema.names if c != "month"]
    select = ", ".join(f"e.{_ident(c)}" for c in cols)
    # No union_by_name: it would read every file's footer at each query; the schemas are a contract.
    src = (f"read_parquet({quote(glob)}, hive_partitioning = true, hive_types = {{{hive_types}}}"
           f"{', filename = true' if name == 'rib_entries' else ''})")
    where = ""
    if name == "rib_entries" and with_manifest:
        # The file's absolute name rebuilt from the manifest row: an IN on `filename` lets DuckDB
        # skip files before reading them: a few ms per query (bench/warehouse.py; a correlated EXISTS was 3-30x).
        base = quote(_literal(glob.split("/month=")[0]) + "/month=")
        where = (f" WHERE e.filename IN (SELECT {base} || m.month || '/collector=' || m.collector || '/' || "
                 "parse_filename(m.output) FROM manifest m WHERE m.status = 'ok')")
        # `manifest` unqualified: a view binds names in its own catalog, so the file opened on
        # its own (duckdb CLI, read-only Python) resolves it; DuckDB 1.5 does not resolve `w.`
        # there once the file is no longer attached as w.
    return f"CREATE VIEW {schema}.{_ident(name)} AS SELECT {select} FROM {src} e{where}"


def create_views(con, schema: str, root: Path) -> dict[str, str]:
    """Create one documented view per published table in `schema` of `con`; returns name -> glob."""
    tables = published(root)
    if not tables:
        raise WarehouseError(f"{root}: no published tables (run congruency run for a month first)")
    for name, g in tables.items():  # DOCS order: manifest before rib_entries
        doc = DOCS[name]
        con.execute(view_sql(schema, name, g, "manifest" in tables))
        con.execute(f"COMMENT ON VIEW {schema}.{name} IS {quote(doc.about)}")
        for col, c in doc.columns.items():
            text = f"{c.meaning} [unit: {c.unit}; step: {c.step}]"
            con.execute(f"COMMENT ON COLUMN {schema}.{name}.{_ident(col)} IS {quote(text)}")
        if "month" not in doc.columns:
            con.execute(f"COMMENT ON COLUMN {schema}.{name}.month IS "
                        "'calendar month of the RIB snapshots (partition key from the directory name) [unit: YYYY-MM]'")
    return tables


def memory(cfg):
    """An in-memory DuckDB with the warehouse's views in schema `main` (for the reports)."""
    con = duck.connect(cfg)
    create_views(con, "main", data_root(cfg))
    return con


def _check_existing(target: Path) -> None:
    """Refuse to replace a file another process holds open for writing, or that is not a DuckDB file."""
    import duckdb

    if not target.exists():
        return
    try:
        duckdb.connect(str(target), read_only=True).close()
    except duckdb.IOException as exc:
        kind = WarehouseLocked if "lock" in str(exc).lower() else WarehouseError
        raise kind(f"{target}: {_why(exc)}; left as it is") from None
    except duckdb.Error as exc:
        raise WarehouseError(f"{target}: cannot open it ({_why(exc)}); left as it is") from None


class WarehouseLocked(WarehouseError):
    """Another process holds the file open for writing: the refresh waits for the next run."""


def _why(exc: Exception) -> str:
    msg = str(exc).splitlines()[0]
    if "lock" in msg.lower():
        pid = re.search(r"PID (\d+)", str(exc))
        holder = f" (pid {pid.group(1)})" if pid else ""
        return f"locked by another process{holder} that has it open for writing (close it, then retry)"
    if "not a valid DuckDB database" in msg or "file is not" in msg.lower() or "corrupt" in msg.lower():
        return "not a valid DuckDB file (corrupt?): delete it, then run congruency warehouse"
    return msg


def refresh(cfg) -> Path:
    """Build the warehouse file beside the old one, then swap it in by rename; returns its path."""
    import duckdb

    root = data_root(cfg)
    target = layout.warehouse_file(root)
    if not root.is_dir():
        raise WarehouseError(f"{root}: data dir does not exist")
    _check_existing(target)
    try:
        with atomic.replacing(target) as tmp, duck.writable_db(tmp) as db:
            con = duck.connect(cfg)
            try:
                con.execute(f"ATTACH {quote(db)} AS w (STORAGE_VERSION {quote(STORAGE_VERSION)})")
                create_views(con, "w", root)
                con.execute("DETACH w")
                hooks.pause("warehouse")
            finally:
                con.close()
                Path(db + ".wal").unlink(missing_ok=True)
            # A WAL left by a crashed writer belongs to the old file; beside the new one it would be replayed.
            target.with_name(target.name + ".wal").unlink(missing_ok=True)
    except duckdb.Error as exc:
        raise WarehouseError(f"{target}: building the views failed: {str(exc).splitlines()[0]}") from None
    return target


def connect(cfg):
    """A read-only connection to the warehouse file, or a one-line WarehouseError.

    It runs the analyst's SQL, so it is locked down: files only inside the tables' folders
    (what the views read), no extensions, no other files, and the settings cannot be changed.
    """
    import duckdb

    p = path(cfg)
    if not p.is_file():
        raise WarehouseError(f"{p}: no warehouse yet (run congruency warehouse)")
    try:
        con = duckdb.connect(str(p), read_only=True)
    except duckdb.Error as exc:
        raise WarehouseError(f"{p}: {_why(exc)}") from None
    duck.limit(con, cfg.duckdb_memory_limit, cfg.duckdb_threads)
    root = p.parent
    # Views hold absolute paths: a copied or moved data dir's file still reads the original.
    stray = None
    for name, sql in con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal").fetchall():
        seg = DOCS[name].layout.split("/")[0] if name in DOCS else None
        m = seg and re.search(rf"read_parquet\('([^']*)/{re.escape(seg)}/", sql)
        read_from = m and _literal(m.group(1).replace("''", "'"))
        if read_from and Path(read_from) != root:
            stray = read_from
            break
    if stray is not None:
        con.close()
        raise WarehouseError(f"{p}: its views read {stray}, not this data dir (copied or moved?); "
                             f"run congruency warehouse --data-dir {root} to rebuild them")
    # Each table's folder as the views' globs name it (glob_literal) and as the files it
    # expands to are named: DuckDB checks both against the list.
    dirs = sorted({form + "/" for doc in DOCS.values() for form in
                   (str(root / doc.layout.split("/")[0]), glob_literal(root / doc.layout.split("/")[0]))})
    # DuckDB matches the list as literal prefixes: the escaped spelling of `run[1]` would also
    # admit a real folder literally named `run[[]1]`; where one exists, refuse to open.
    lit = glob_literal(root)
    if lit != str(root) and Path(lit).exists():
        con.close()
        raise WarehouseError(f"{p}: a folder named {lit} exists beside the data dir {root}: rename one of them "
                             "(the warehouse fences its file access by folder names)")
    con.execute("SET allowed_directories = $d", {"d": dirs})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def views(con) -> set[str]:
    """The warehouse views `con` sees (file or in-memory)."""
    return {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}


def months(con, table: str = "month_summary") -> list[str]:
    """Months the view `table` has (empty when it has no view); published months: common/published.py."""
    if table not in views(con):
        return []
    return [r[0] for r in con.execute(f"SELECT DISTINCT month FROM {_ident(table)} ORDER BY 1").fetchall()]
