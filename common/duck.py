"""One way to give DuckDB the config's resource caps, to quote a DuckDB string literal, and to
name paths so DuckDB takes them literally (glob_literal, writable_db).

Every in-process DuckDB (the compare engine, the readers of the tables, the path selector) scans Parquet
that can be larger than memory: each is capped by `duckdb_memory_limit` and
`duckdb_threads` of the one Config, so a user sets them once.
"""
from __future__ import annotations

import atexit
import functools
import importlib.util
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import duckdb

from bgp_congruency.common.errors import CongruencyError


def quote(s: str) -> str:
    """A DuckDB string literal ('' doubles a quote)."""
    return "'" + str(s).replace("'", "''") + "'"


def glob_literal(path) -> str:
    """`path` written as a glob that matches only itself, so a data dir named `run[1]`,
    `a*b` or `c?` reaches DuckDB's (and Python's) glob as the literal folder it is: each
    glob character becomes a one-character class (`[` -> `[[]`). The caller appends its own
    wildcards after it."""
    return "".join(f"[{c}]" if c in "[*?" else c for c in str(path))


def read_parquet(files: list[str], hive: bool = False) -> str:
    """The DuckDB relation of Parquet files: each name as a glob matching only itself (DuckDB
    reads every entry as a pattern); `hive`: the keys of their folders (month=...) as columns,
    as strings."""
    opts = "hive_partitioning = true, hive_types_autocast = false" if hive else "hive_partitioning = false"
    return f"read_parquet([{', '.join(quote(glob_literal(f)) for f in files)}], {opts})"


@contextmanager
def writable_db(path):
    """A path where DuckDB can write the database file that must end up at `path`. DuckDB
    reads a `?` in a database path as the start of connection options and writes its WAL
    to a mangled name (`a?b/x` -> `a.wal?b/x`): for such a path the file is built in a
    private temporary folder and copied to `path` when the block ends without error."""
    p = Path(path)
    if "?" not in str(p):
        yield str(p)
        return

    with tempfile.TemporaryDirectory(prefix="congruency-db-") as tmp:
        built = os.path.join(tmp, p.name)
        yield built
        shutil.copyfile(built, p)


def usable_memory() -> int:
    """Bytes this process may use: the machine's RAM, or its cgroup's limit where lower
    (a container's 8 GiB on a 512 GiB host)."""
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = open(path).read().strip()
        except OSError:
            continue
        if text.isdigit():
            ram = min(ram, int(text))
        break
    return ram


def memory_limit(value: str | None) -> str | None:
    """The config's duckdb_memory_limit as DuckDB takes it: "auto" is half of
    usable_memory() (the rest stays for the same process's Arrow and Python work and the
    page cache). The compare needs at least 20 bytes per entry of one VP partition and runs
    fastest with about 200; it splits the month until a partition has that
    (pipeline/partitions.py), so any cap that holds the month's largest VP works; a larger
    one means fewer partitions."""
    if value == "auto":
        return f"{usable_memory() // 2 // 2**20}MiB"
    return value


def limit(con, memory_limit_: str | None, threads: int | None) -> None:
    """Cap memory and threads on `con` (None leaves DuckDB's default)."""
    cap = memory_limit(memory_limit_)
    if cap:
        con.execute(f"SET memory_limit = {quote(cap)}")
    if threads:
        con.execute(f"SET threads = {int(threads)}")


def connect(cfg, spill=None):
    """An in-memory DuckDB capped by the config's duckdb_memory_limit and duckdb_threads,
    spilling under the config's duckdb_temp_dir when it names one (every DuckDB connection of
    the project spills where the user said, each in a folder of its own: private_spill), else
    to the folder `spill` when given, else in a folder of its own under the system's temp
    folder (TMPDIR; never DuckDB's default ./.tmp, which every process started in the same
    folder shares)."""
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")  # never on stdout, whatever a query takes
    limit(con, cfg.duckdb_memory_limit, cfg.duckdb_threads)
    if cfg.duckdb_temp_dir or spill is None:
        spill_to(con, private_spill(cfg.duckdb_temp_dir or tempfile.gettempdir()))
    else:
        spill_to(con, spill)
    from bgp_congruency.common import s3  # it builds on this module

    if s3.is_s3(cfg.data_dir):  # its files are read where they are

        s3.connect_duckdb(con, cfg.data_dir)
    return con


def private_spill(parent) -> str:
    """A new folder under `parent` for one connection's spill, removed when the process ends:
    DuckDB names its temp files the same in every process, so two connections spilling into
    one folder (two months run at once, a query during a run) would take each other's."""
    os.makedirs(parent, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="duckdb-spill-", dir=parent)
    atexit.register(shutil.rmtree, folder, True)
    return folder


def spill_to(con, folder) -> None:
    """Make `con` spill into `folder` (created). Call it before the connection's first query:
    DuckDB cannot change its temp directory once it has spilled."""
    os.makedirs(folder, exist_ok=True)
    con.execute(f"SET temp_directory = {quote(str(folder))}")


class MissingExtension(CongruencyError):
    """A DuckDB extension's wheel is not installed (the message names the pip line)."""


@functools.cache
def extension_file(name: str) -> str:
    """The extension binary its PyPI wheel installed for this DuckDB (duckdb_extension_<name>):
    DuckDB cannot download extensions here, so every one comes from a wheel (pyproject.toml)."""
    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    ver = duckdb.__version__
    f = spec and Path(spec.origin).parent / "extensions" / f"v{ver}" / f"{name}.duckdb_extension"
    if not f or not f.is_file():
        raise MissingExtension(f"the DuckDB extension {name} for DuckDB {ver} is not installed "
                               f"(pip install duckdb-extension-{name.replace('_', '-')}=={ver})")
    return str(f)


#: The extension files whose signature DuckDB checked in this process: (path, size, mtime).
_CHECKED: set[tuple[str, int, int]] = set()


def load_extension(con, name: str) -> None:
    """LOAD the extension `name` from its wheel into `con`. DuckDB checks an extension file's
    signature on every LOAD by hashing the whole file (~130 ms for each 35-42 MB binary, two
    of them a quarter of a one-question `advise`): each file is checked once per install, in
    a database with the default settings, and loaded unchecked where `con` allows unsigned
    extensions (lake/attach.connection); elsewhere DuckDB checks it again. A check passed is
    recorded beside the file (`<file>.checked`: its size and mtime), so the next process
    skips it while the file is the same; where that folder is read-only, each process checks."""
    f = extension_file(name)
    try:
        st = os.stat(f)
    except OSError:  # gone since this process first found it (reinstalled?)
        extension_file.cache_clear()
        f = extension_file(name)
        st = os.stat(f)
    key = (f, st.st_size, st.st_mtime_ns)
    mark, seal = f + ".checked", f"{st.st_size} {st.st_mtime_ns}\n"
    if key not in _CHECKED and not _sealed(mark, seal):
        with duckdb.connect() as check:  # the default settings: DuckDB checks the signature
            check.execute(f"LOAD {quote(f)}")
        _CHECKED.add(key)
        try:
            tmp = f"{mark}.{os.getpid()}"
            Path(tmp).write_text(seal)
            os.replace(tmp, mark)
        except OSError:
            pass
    con.execute(f"LOAD {quote(f)}")


def _sealed(mark: str, seal: str) -> bool:
    try:
        return Path(mark).read_text() == seal
    except OSError:
        return False
