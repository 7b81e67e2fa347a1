"""The tables as the reports and `congruency query` read them: `lake.connect` (the catalog's
tables and ingest's files, a view per table), capped by the config's DuckDB limits; for the
analyst's own SQL, locked down.

A command that reads in several queries holds one snapshot of the catalog throughout
(lake/catalog.pinned, taken by cli/main.py for every reading command): a month re-published
meanwhile is seen whole, old or new.
"""
from __future__ import annotations

from pathlib import Path

from bgp_congruency import lake
from bgp_congruency.common import layout
from bgp_congruency.common.errors import CongruencyError
from bgp_congruency.lake import views as V


class WarehouseError(CongruencyError):
    """A one-line reason the tables could not be opened."""


def data_root(cfg) -> Path | str:
    """The data dir, local or s3:// (DuckDB reads the Parquet in place)."""
    root = layout.readable(cfg.data_dir, "reading the published tables")
    return root if isinstance(root, str) else root.resolve()


def memory(cfg, snapshot: int | None = None, locked: bool = False):
    """An in-memory DuckDB with a view per table (lake.connect; at `snapshot` when given),
    capped by the config; `locked`: fenced in (lake.connect)."""
    try:
        return lake.connect(data_root(cfg), snapshot=snapshot, locked=locked, memory_limit=cfg.duckdb_memory_limit,
                            threads=cfg.duckdb_threads)
    except (lake.NoCatalog, lake.LakeError) as exc:
        raise WarehouseError(str(exc)) from None


def connect(cfg, snapshot: int | None = None):
    """`memory(cfg, snapshot)` locked down for the analyst's SQL: files only inside the data dir (what
    the views and the catalog read), no other extensions, and the settings cannot be changed."""
    return memory(cfg, snapshot, locked=True)


def views(con) -> set[str]:
    """The table views `con` has."""
    return V.names(con)
