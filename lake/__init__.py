"""The published tables, as analysts and the project's readers open them: a DuckLake catalog
in the data dir (lake/catalog.py), one view per table (lake/views.py).

    from bgp_congruency import lake
    con = lake.connect("data/demo")      # read-only; every table under its own name
    con.sql("SELECT month, pairs, noncongruent_fraction FROM month_summary").show()

Each query reads one snapshot of the catalog: a month re-published meanwhile is seen whole,
old or new. `snapshot=N` opens the tables as snapshot N had them (time travel; each month's
provenance row names the snapshot that published it, column `catalog_snapshot`).
"""
from __future__ import annotations

from pathlib import Path

from bgp_congruency.lake.catalog import ALIAS, LakeError, NoCatalog


def connect(data_dir, read_only: bool = True, snapshot: int | None = None):
    """A DuckDB connection with the catalog attached (as `lake`) and a view per table in its
    default schema (ingest's rib_entries and manifest read in place). NoCatalog when the data
    dir has no table at all."""
    import duckdb

    from bgp_congruency.lake import catalog, views

    root = Path(str(data_dir).removeprefix("file://")).resolve()
    con = duckdb.connect()
    try:
        if catalog.exists(root) or not read_only:
            if read_only and snapshot is None:
                snapshot = catalog.pin_of(root)
            catalog.attach(con, root, read_only=read_only, snapshot=snapshot)
        elif snapshot is not None or catalog.legacy_months(root):
            raise NoCatalog(catalog.no_catalog(root))
        if not views.create(con, root):
            raise NoCatalog(f"{root}: no published tables (run congruency run for a month first)")
    except BaseException:
        con.close()
        raise
    return con


__all__ = ["connect", "ALIAS", "LakeError", "NoCatalog"]
