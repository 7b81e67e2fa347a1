"""The published tables, as analysts and the project's readers open them: a DuckLake catalog
in the data dir (lake/attach.py), one view per table (lake/views.py).

    from bgp_congruency import lake
    con = lake.connect("data/demo")      # read-only; every table under its own name
    con.sql("SELECT month, pairs, noncongruent_fraction FROM month_summary").show()

Each query reads one snapshot of the catalog: a month re-published meanwhile is seen whole,
old or new. `snapshot=N` opens the tables as snapshot N had them (time travel; each month's
provenance row names the snapshot that published it, column `catalog_snapshot`).
"""
from __future__ import annotations

from pathlib import Path

from bgp_congruency.common import duck, layout, s3
from bgp_congruency.common.duck import glob_literal
from bgp_congruency.lake import attach, views
from bgp_congruency.lake.attach import ALIAS, LakeError, NoCatalog
from bgp_congruency.lake.reader import Reader


def connect(data_dir, read_only: bool = True, snapshot: int | None = None, *, locked: bool = False,
            memory_limit: str | None = None, threads: int | None = None):
    """A DuckDB connection with the catalog attached (as `lake`) and a view per table in its
    default schema (ingest's rib_entries and manifest read in place). NoCatalog when the data
    dir has no table at all.

    Read-only means the data dir: the catalog is attached READ_ONLY, so no statement changes
    a published table or its files, and the connection (lake/reader.Reader) refuses SQL that
    would write under the data dir (a COPY or EXPORT into it, a CREATE on `lake`). It is
    otherwise yours (`COPY (...) TO 'mine.csv'` writes where you say; `.to_arrow_table()`, or `.df()`
    once pandas is installed: README).
    `locked=True` also fences it in, as `congruency query --sql` is: files only inside the data
    dir, no other extensions, settings fixed (after the memory and thread caps given here)."""
    root = layout.root_of(layout.home(data_dir))
    if locked and not s3.is_s3(root):
        # DuckDB matches allowed_directories as literal prefixes: the escaped spelling of
        # `run[1]` would also admit a real folder literally named `run[[]1]`; refuse where one exists.
        lit = glob_literal(root)
        if lit != str(root) and Path(lit).exists():
            raise LakeError(f"{root}: a folder named {lit} exists beside the data dir: rename one of them "
                            "(a locked connection fences its file access by folder names)")
    con = attach.connection()
    try:
        if attach.exists(root) or not read_only:
            if read_only and snapshot is None:
                snapshot = attach.pin_of(root)
            attach.attach(con, root, read_only=read_only, snapshot=snapshot)
        elif snapshot is not None or attach.legacy_months(root):
            raise NoCatalog(attach.no_catalog(root))
        elif s3.is_s3(root):  # ingested, never compared: the routes' views read the bucket
            s3.connect_duckdb(con, root)
            con.execute("SET allow_unsigned_extensions = false")
        if not views.create(con, root):
            raise NoCatalog(f"{root}: no published tables (run congruency run for a month first)")
        duck.limit(con, memory_limit, threads)
        if locked:  # the data dir as the views' globs name it (glob_literal) and as its files are named
            con.execute("SET allowed_directories = $d", {"d": sorted({str(root) + "/", glob_literal(root) + "/"})})
            if s3.is_s3(root):  # its files are URLs: the bucket's prefix is the one place it reads
                con.execute("SET allowed_paths = $d", {"d": [str(root) + "/"]})
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return Reader(con, root) if read_only else con


__all__ = ["connect", "ALIAS", "LakeError", "NoCatalog"]
