"""Where a data dir's catalog is and how every reader and writer attaches it: the DuckLake
catalog of the published tables (lake/commit.py publishes into it, lake/published.py lists
what it holds, lake/upkeep.py keeps it).

The catalog is a SQLite file in the data dir (common/layout.catalog_file), created by the
first publish; or, for a data dir that several hosts publish to or read (a shared file
system), a PostgreSQL database: the config's `catalog`, which the first compare writes to
DATA_DIR/catalog.url so every reader of the data dir finds it. DuckDB 1.5.5 loads the
ducklake, sqlite and postgres extensions from their PyPI wheels (pyproject.toml), since it
cannot download them here.

Files are registered relative to the data dir (lake/commit.py), so a reader attaches the
catalog at the data dir's current place (DuckLake's OVERRIDE_DATA_PATH, for this connection
only): a copy, a move or a read-only mount at another path reads its own files and writes
nothing. A writer attaches at the recorded place: a moved data dir is relocated first
(`congruency lake relocate`), which a read-only one needs not.
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path

import duckdb

from bgp_congruency.common import atomic, duck, layout, s3
from bgp_congruency.common.duck import quote
from bgp_congruency.common.errors import BadInput, CongruencyError
from bgp_congruency.common.table_docs import DOCS

ALIAS = "lake"
#: Ingest's own files: plain Parquet, not in the catalog (each dump's file is written once
#: under a final name and the manifest says which are whole; no reader needs them in a
#: transaction with anything else).
NOT_IN_LAKE = ("manifest", "routes", "route_snapshots", "rib_entries")
#: The extensions a catalog needs, by where it is, as their wheels name them (duckdb_extension_<name>).
EXTENSIONS = {"sqlite": ("ducklake", "sqlite_scanner"), "postgres": ("ducklake", "postgres_scanner")}


class LakeError(CongruencyError):
    """The catalog could not be read or written; the message names it and why."""


class NoCatalog(BadInput):
    """Nothing was ever published in this data dir (exit 2)."""


def tables() -> dict:
    """name -> TableDoc of every published table the catalog holds, in documentation order
    (its ledger, lake/commit.LEDGER, aside)."""
    return {n: d for n, d in DOCS.items() if n not in NOT_IN_LAKE}


def extensions(root) -> tuple[str, ...]:
    """The extensions attaching `root`'s catalog needs: its kind's, and httpfs for a data dir on S3."""
    kind = location(root).split(":", 1)[0]
    if kind not in EXTENSIONS:
        raise LakeError(f"{layout.catalog_pointer(root)}: names no catalog this project knows ({kind!r}: "
                        "postgres: and a libpq conninfo expected)")
    return EXTENSIONS[kind] + (("httpfs",) if s3.is_s3(root) else ())


def connection() -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB to attach a catalog in. DuckDB checks an extension file's
    signature on every LOAD by hashing the whole file (~70 ms for each 35-42 MB binary, two per
    attach: most of a small month's compare and of a short command); `load` has each file
    checked once per process, in a database with the default settings, and loads it unchecked
    into these later. allow_unsigned_extensions admits nothing else: `load` turns it off once its
    files are in (DuckDB will not turn it on again while the database runs), so an analyst's
    connection (lake.connect) loads an extension of its own only signed. No progress bar: DuckDB
    prints it on stdout once a query takes over 2 s, into whatever a command or script writes
    there (a JSON answer, a CSV)."""
    con = duckdb.connect(config={"allow_unsigned_extensions": True})
    con.execute("SET enable_progress_bar = false")
    return con


def load(con, root) -> None:
    """Load the extensions `root`'s catalog needs into `con` from their wheels (no download),
    each file's signature checked on its first load in the process (`connection`); for a data
    dir on S3, httpfs and the bucket's secret too (common/s3.py)."""
    try:
        for name in extensions(root):
            duck.load_extension(con, name)
    except duck.MissingExtension as exc:
        raise LakeError(str(exc)) from None
    if s3.is_s3(root):
        con.execute(s3.duckdb_secret(s3.access(root)))
    con.execute("SET allow_unsigned_extensions = false")  # nothing unchecked from here on


# --- where a data dir's catalog is --------------------------------------------------------

def location(root) -> str:
    """The catalog's DuckLake location (what follows `ducklake:`): `postgres:CONNINFO` from
    DATA_DIR/catalog.url, else `sqlite:DATA_DIR/catalog.sqlite`."""
    p = layout.catalog_pointer(root)
    if s3.is_s3(root):
        try:
            return s3.Bucket(root).read_text(p).strip()
        except FileNotFoundError:
            raise NoCatalog(no_catalog(root)) from None
        except OSError as exc:
            raise LakeError(f"{p}: cannot read it from {s3.access(root).where()} ({s3.why(exc)})") from None
    if p.is_file():
        return p.read_text().strip()
    return f"sqlite:{layout.catalog_file(root)}"


def exists(root) -> bool:
    """Whether the data dir has a catalog (anything was ever published in it)."""
    if s3.is_s3(root):
        try:
            return s3.Bucket(root).exists(layout.catalog_pointer(root))
        except OSError as exc:
            raise LakeError(f"{layout.catalog_pointer(root)}: cannot read it from {s3.access(root).where()} "
                            f"({s3.why(exc)})") from None
    return layout.catalog_pointer(root).is_file() or layout.catalog_file(root).is_file()


def catalog_name(root) -> str:
    """The catalog as messages name it: its file, or its PostgreSQL database (no password)."""
    loc = location(root)
    if loc.startswith("sqlite:"):
        return loc.removeprefix("sqlite:")
    return "catalog " + masked(loc)


def masked(text: str) -> str:
    """`text` with any password of a libpq conninfo or URI, and an S3 secret's key (common/s3.py),
    in it replaced by ***."""
    text = re.sub(r"\b(SECRET|SESSION_TOKEN) '(?:[^']|'')*'", r"\1 '***'", text)
    text = re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", text, flags=re.I)
    return re.sub(r"(\w+://[^:/@\s]*:)[^@\s]*@", r"\1***@", text)


def why(exc: Exception) -> str:
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
    if s3.is_s3(root):
        return _configure_s3(root, value)
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
    root.mkdir(parents=True, exist_ok=True)
    atomic.write_text(ptr, want + "\n", mode=0o600)  # may hold a password


def _configure_s3(root: str, value: str | None) -> None:
    """`configure` for a data dir on S3: its catalog is PostgreSQL (DuckLake reads a DuckDB or
    SQLite catalog on S3 only), recorded in the bucket's catalog.url."""
    ptr = layout.catalog_pointer(root)
    try:
        s3.check_bucket(root)
    except OSError as exc:
        raise LakeError(f"{root}: cannot reach it at {s3.access(root).where()} ({s3.why(exc)})") from None
    have = location(root) if exists(root) else None
    if value is None:
        if have is None:
            raise BadInput(f"catalog: {root} is on S3, whose catalog must be a PostgreSQL database "
                           "(catalog = \"postgresql://USER@HOST:PORT/DB\" in the config)")
        return
    want = parse_location(value)
    if masked(want) != want:  # catalog.url is an object every reader of the bucket reads
        raise BadInput(f"catalog: {root} is on S3, where the catalog's URL is stored for every reader: give the "
                       "password through PGPASSWORD or ~/.pgpass, not in catalog")
    if have is not None and have != want:
        raise BadInput(f"catalog: {root} publishes to {catalog_name(root)}, not to the config's; set catalog to "
                       "that, or use another data dir")
    if have is None:
        try:
            s3.Bucket(root).write_text(ptr, want + "\n")
        except OSError as exc:
            raise LakeError(f"{ptr}: cannot write it to {s3.access(root).where()} ({s3.why(exc)})") from None


def legacy_months(root) -> dict[str, list[str]]:
    """month -> tables published before the catalog existed (files right in `<table>/month=M/`),
    that no catalog registered yet."""
    out: dict[str, list[str]] = {}
    if s3.is_s3(root):
        return out  # the catalog came before any data dir on S3
    for name in tables():
        for d in sorted(Path(root, name).glob(f"{layout.MONTH}*")):
            if any(f.is_file() for f in d.glob("[!._]*.parquet")):
                out.setdefault(d.name.removeprefix(layout.MONTH), []).append(name)
    return out


def no_catalog(root) -> str:
    """The one line for a data dir without a catalog: what to run."""
    if legacy_months(root):
        return (f"{root}: its tables were published before the catalog ({layout.CATALOG}); "
                f"run congruency lake migrate --data-dir {layout.shell_quote(root)} (registers them in place, no copy)")
    name = layout.CATALOG_POINTER if s3.is_s3(root) else layout.CATALOG
    return f"{root}: no published tables (no catalog {name}; run congruency run for a month first)"


def catalog_url(root) -> str:
    return f"ducklake:{location(root)}"


# --- attaching it ---------------------------------------------------------------------------

def attach_sql(root, *, read_only: bool = True, snapshot: int | None = None, alias: str = ALIAS) -> list[str]:
    """The statements that attach `root`'s catalog as `alias`, for a `duckdb` the user starts
    (`congruency sql --print`): LOAD its extensions, then the ATTACH `attach` runs."""
    try:
        loads = [f"LOAD {quote(duck.extension_file(n))}" for n in extensions(root)]
    except duck.MissingExtension as exc:
        raise LakeError(str(exc)) from None
    secret = [s3.duckdb_secret(s3.access(root))] if s3.is_s3(root) else []
    return loads + secret + [_attach_statement(root, read_only=read_only, snapshot=snapshot, alias=alias)]


def _attach_statement(root, *, read_only: bool, snapshot: int | None, alias: str) -> str:
    """The ATTACH of `root`'s catalog as `alias`: a reader read-only, at the data dir's current
    place, at `snapshot` when given; a writer at the recorded place, no rows in the catalog itself."""
    here = layout.home(root) + "/"
    opts = [f"DATA_PATH {quote(here)}"]
    if read_only:
        opts += ["READ_ONLY", "OVERRIDE_DATA_PATH true"]
    else:
        # No rows in the catalog itself: a DELETE of inlined rows is recorded row by row, and
        # the month's old files would stay live (ducklake_list_files) with their rows deleted.
        # Without inlining, a DELETE of a whole file ends it.
        opts.append("DATA_INLINING_ROW_LIMIT 0")
    if snapshot is not None:
        opts.append(f"SNAPSHOT_VERSION {int(snapshot)}")
    return f"ATTACH {quote(catalog_url(root))} AS {alias} ({', '.join(opts)})"


def attach(con, root, *, read_only: bool = True, snapshot: int | None = None, alias: str = ALIAS) -> None:
    """Attach the data dir's catalog to `con` as `alias` (read-only unless asked; at a past
    snapshot when given). A read-only attach of a data dir with no catalog is NoCatalog."""
    root = layout.root_of(root)
    if read_only and not exists(root):
        raise NoCatalog(no_catalog(root))
    try:
        load(con, root)
        con.execute(_attach_statement(root, read_only=read_only, snapshot=snapshot, alias=alias))
    except duckdb.Error as exc:
        if read_only and "creating a new DuckLake is explicitly disabled" in str(exc):
            raise NoCatalog(no_catalog(root)) from None  # configured (catalog.url), nothing published yet
        if read_only and "napshot" in str(exc) and snapshot is not None:
            raise BadInput(no_snapshot(root, snapshot)) from None
        home = re.search(r'existing data path in the catalog "([^"]*)"', str(exc))
        if home and home.group(1).rstrip("/") != layout.home(root):
            raise LakeError(moved(root, home.group(1))) from None
        raise LakeError(f"{catalog_name(root)}: {why(exc)}") from None
    if read_only:
        _check_relative(con, root, alias)


def moved(root, home: str) -> str:
    """The one line for a catalog recorded at another place than the data dir it is in."""
    fix = (f"run congruency lake relocate --data-dir {layout.shell_quote(root)}"
           if location(root).startswith("sqlite:") else
           "a PostgreSQL catalog serves one data dir: give this one its own (catalog, another database), "
           "or relocate after moving it (congruency lake relocate)")
    return (f"{catalog_name(root)}: the catalog of {home.rstrip('/')}, not of {layout.home(root)} "
            f"(copied or moved?); {fix}")


def _check_relative(con, root, alias: str) -> None:
    """A catalog read at another place than it records must register its files relative to
    the data dir; one that a version before that registered by absolute path (and no publish
    has upgraded since, lake/commit.py) would read the old place's files: refused, naming the fix."""
    meta = f"__ducklake_metadata_{alias}"
    home = con.execute(f"SELECT value FROM {meta}.ducklake_metadata WHERE key = 'data_path' AND scope IS NULL"
                       ).fetchone()
    here = layout.home(root) + "/"
    if home and home[0] == here or not home:
        _check_spelling(con, root, meta)
        return
    _check_spelling(con, root, meta)
    old = con.execute(f"SELECT count(*) FROM {meta}.ducklake_data_file WHERE NOT path_is_relative "
                      f"AND starts_with(path, ?)", [home[0]]).fetchone()[0]
    if old:
        raise LakeError(moved(root, home[0]) + " (its files are registered by absolute path: relocating, "
                        "or any publish where it was, registers them relative to the data dir)")


#: A path registered in the known bad form: by a version before 2026-11-28, a publish of a
#: table written apart from the compare (`evaluate`, `trace --store`) with a relative data
#: dir registered its files as the caller spelled them (`data/demo/selector_eval/month=M/ID/
#: part-0.parquet`, not relative to the data dir): right only from the caller's folder.
MISSPELLED = "NOT path_is_relative AND NOT starts_with(path, '/') AND NOT contains(path, '://')"


def misspelled(con, meta: str, scheduled: bool = True) -> list[str]:
    """The paths `meta` (a catalog's DuckLake tables) registers in the known bad form: its data
    files' and (`scheduled`) those of its files scheduled for deletion."""
    sql = f"SELECT path FROM {meta}.ducklake_data_file WHERE {MISSPELLED}"
    if scheduled:
        sql += f" UNION ALL SELECT path FROM {meta}.ducklake_files_scheduled_for_deletion WHERE {MISSPELLED}"
    return [r[0] for r in con.execute(sql).fetchall()]


def _check_spelling(con, root, meta: str) -> None:
    """Refuse, naming the repair, a catalog with misspelled paths (`MISSPELLED`) that do not
    resolve from this folder: a query would fail on them half-way, after its first rows."""
    lost = [p for p in misspelled(con, meta, scheduled=False) if not os.path.exists(p)]
    if lost:
        raise LakeError(f"{catalog_name(root)}: {len(lost)} files registered by the folder an earlier version "
                        f"published them from, not the data dir ({lost[0]}), do not resolve from here; repair the "
                        f"catalog: congruency lake relocate --data-dir {layout.shell_quote(Path(root).resolve())} "
                        "(where the data dir is writable)")


def snapshots(root) -> list[int]:
    """The catalog's kept snapshots, oldest first (time travel reaches these), from its
    current snapshot whatever a command pinned."""
    con = connection()
    try:
        attach(con, root)
        return [r[0] for r in con.execute(f"SELECT snapshot_id FROM {ALIAS}.snapshots() ORDER BY 1").fetchall()]
    except duckdb.Error as exc:
        raise LakeError(f"{catalog_name(root)}: {why(exc)}") from None
    finally:
        con.close()


def no_snapshot(root, snapshot: int) -> str:
    """The one line for a snapshot the catalog does not keep: which ones it keeps."""
    try:
        kept = snapshots(root)
    except CongruencyError:
        kept = []
    have = (f"{kept[0]}..{kept[-1]}" if kept == list(range(kept[0], kept[-1] + 1)) else
            ", ".join(map(str, kept))) if kept else "none"
    return (f"--as-of {snapshot}: no such snapshot in {catalog_name(root)} (never made, or expired by "
            f"congruency lake vacuum); kept snapshots: {have} (congruency lake snapshots)")


#: data dir -> (the snapshot this process reads it at, a connection with the catalog attached
#: at it, or None) while a `pinned` block is open.
_pins: dict[str, tuple[int, duckdb.DuckDBPyConnection | None, dict]] = {}


@contextmanager
def pinned(root, snapshot: int | None = None, hold: bool = False):
    """Every read-only opening of `root`'s catalog in this process, during the block, reads
    one snapshot: `snapshot`, or the one current when the block began; so a command that
    reads in several queries (a report, the hints and their export) sees one version of every
    month. `hold`: keep one connection with the catalog attached for the block, every opening
    a cursor of it (the extensions loaded and the catalog attached once per command, not per
    query): only for a block that writes no catalog (SQLite would refuse a writer while it is
    open). Re-entrant (an inner block with its own `snapshot` reads that one meanwhile); a
    data dir with no catalog yet is not pinned."""
    key = layout.home(root)
    before = _pins.get(key)
    if snapshot is None and (before is not None or not exists(root)):
        yield
        return
    con = connection()
    try:
        attach(con, root, snapshot=snapshot)
        try:
            snap = current(con)
        except duckdb.Error as exc:
            raise LakeError(f"{catalog_name(root)}: {why(exc)}") from None
        if not hold:
            con.close()
            con = None
        _pins[key] = (snap, con, {})
        yield
    finally:
        if before is None:
            _pins.pop(key, None)
        else:
            _pins[key] = before
        if con is not None:
            con.close()


def remembered(root, key: tuple, compute):
    """compute()'s value, once per `pinned` block of `root` and `key`: what a pinned snapshot
    holds cannot change during the block, so a command that asks the catalog the same thing
    (a table's files, its months) for each of its reads asks it once. Outside a block, computed."""
    pin = _pins.get(layout.home(root))
    if pin is None:
        return compute()
    memo = pin[2]
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def pin_of(root) -> int | None:
    pin = _pins.get(layout.home(root))
    return pin[0] if pin else None


@contextmanager
def opened(root, *, read_only: bool = True, snapshot: int | None = None):
    """A DuckDB connection with the catalog attached as `lake` (read-only: at the snapshot
    given, or the one `pinned` holds, else the current one), closed after the block: in a
    block pinned with `hold`, a cursor of the block's connection, else a connection of its own."""
    pin = _pins.get(layout.home(root)) if read_only else None
    if pin is not None and pin[1] is not None and snapshot in (None, pin[0]):
        con = pin[1].cursor()
    else:
        con = connection()
        try:
            attach(con, root, read_only=read_only, snapshot=pin[0] if pin and snapshot is None else snapshot)
        except BaseException:
            con.close()
            raise
    try:
        yield con
    except duckdb.Error as exc:  # e.g. the catalog locked by a writer, or its file damaged
        raise LakeError(f"{catalog_name(root)}: {why(exc)}") from None
    finally:
        con.close()


def unreadable(root, exc: Exception, snapshot: int | None = None) -> str | None:
    """The one line for an error reading a file of `root`'s published tables (DuckDB's IO
    error, or an OSError from pyarrow): the table, the file and the snapshot read (`snapshot`,
    else the one pinned, else the current one), and why; None when the error names no file of
    a published table's month."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    m = re.search(r"""["']([^"']+\.parquet)["']""", text) or re.fullmatch(r"(\S+\.parquet)", text.strip())
    f = getattr(exc, "filename", None) or (m.group(1) if m else None)
    parts = Path(str(f)).parts if f else ()
    table = next((parts[i - 1] for i in range(1, len(parts)) if parts[i].startswith(layout.MONTH)), None)
    if table not in tables() or not str(f).endswith(".parquet"):  # not a published table's file
        return None
    snap = snapshot if snapshot is not None else pin_of(root)
    if snap is None:
        try:
            snap = snapshots(root)[-1]
        except (CongruencyError, IndexError):
            snap = None
    missing = isinstance(exc, FileNotFoundError) or any(
        w in text for w in ("No files found", "No such file", "Failed to open local file"))
    reason = "the file is missing" if missing else masked(
        (getattr(exc, "strerror", None) or text.removeprefix("IO Error: ")).replace(f'"{f}"', "it").replace(str(f), "it"))
    return (f"{table}: cannot read {f} (snapshot {snap if snap is not None else '?'} of {catalog_name(root)}): "
            f"{reason}; a kept snapshot's file is never deleted by the project: restore it, or re-publish the "
            "month (congruency run --force compare)")


def current(con) -> int:
    """The snapshot `con` reads."""
    return con.execute(f"SELECT id FROM {ALIAS}.current_snapshot()").fetchone()[0]
