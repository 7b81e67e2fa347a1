"""The tables as the reports and `congruency query` read them: `lake.connect` (the catalog's
tables and ingest's files, a view per table), capped by the config's DuckDB limits; for the
analyst's own SQL, locked down.

A command that reads in several queries holds one snapshot of the catalog throughout
(lake/catalog.pinned, taken by cli/main.py for every reading command): a month re-published
meanwhile is seen whole, old or new.
"""
from __future__ import annotations

from pathlib import Path

from bgp_congruency.common import duck, layout
from bgp_congruency.common.duck import glob_literal
from bgp_congruency.common.errors import CongruencyError


class WarehouseError(CongruencyError):
    """A one-line reason the tables could not be opened."""


def data_root(cfg) -> Path:
    """The local data dir (DuckDB reads the Parquet in place)."""
    return layout.local(cfg.data_dir, "reading the published tables").resolve()


def memory(cfg, snapshot: int | None = None):
    """An in-memory DuckDB with a view per table (lake.connect; at `snapshot` when given),
    capped by the config."""
    from bgp_congruency import lake

    try:
        con = lake.connect(data_root(cfg), snapshot=snapshot)
    except (lake.NoCatalog, lake.LakeError) as exc:
        raise WarehouseError(str(exc)) from None
    duck.limit(con, cfg.duckdb_memory_limit, cfg.duckdb_threads)
    return con


def connect(cfg, snapshot: int | None = None):
    """`memory(cfg, snapshot)` locked down for the analyst's SQL: files only inside the data dir (what
    the views and the catalog read), no other extensions, and the settings cannot be changed."""
    root = data_root(cfg)
    # DuckDB matches the list as literal prefixes: the escaped spelling of `run[1]` would also
    # admit a real folder literally named `run[[]1]`; where one exists, refuse to open.
    lit = glob_literal(root)
    if lit != str(root) and Path(lit).exists():
        raise WarehouseError(f"{root}: a folder named {lit} exists beside the data dir: rename one of them "
                             "(the query fences its file access by folder names)")
    con = memory(cfg, snapshot)
    # The data dir as the views' globs name it (glob_literal) and as the files are named.
    con.execute("SET allowed_directories = $d", {"d": sorted({str(root) + "/", lit + "/"})})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def views(con) -> set[str]:
    """The table views `con` has."""
    from bgp_congruency.lake import views as V

    return V.names(con)
