"""Which months have published results, and which files they are: the one definition every
reader shares, answered by the catalog (lake/catalog.py).

A month is published when a compare committed its tables, `month_summary` among them (every
month it ran has one row there, even without pairs). Files a publish moved into place but
never committed, or that a later publish replaced, are not published: only the catalog knows
which, so no reader lists folders.
"""
from __future__ import annotations

from pathlib import Path

from bgp_congruency.common import layout
from bgp_congruency.common.errors import BadInput


class NoResults(BadInput):
    """The month asked for has no published results: a bad argument (exit 2)."""


def months(root: str | Path, table: str = "month_summary") -> list[str]:
    """Months (YYYY-MM) with at least one published file of `table`, oldest first."""
    from bgp_congruency.lake import catalog

    try:
        with catalog.opened(root) as con:
            return catalog.months(con, table)
    except catalog.NoCatalog:
        return []


def require(root: str | Path, month: str) -> None:
    """NoResults (the same one line for every command) unless `month` is published."""
    have = months(root)
    if month not in have:
        from bgp_congruency.lake import catalog

        if month in catalog.legacy_months(root):
            raise NoResults(f"month {month}: published in {root} before the catalog; run congruency lake "
                            f"migrate --data-dir {root} (registers it in place, no copy)")
        span = f"{have[0]}..{have[-1]}" if have else "none"
        raise NoResults(f"month {month}: no published results in {root} (published months: {span}; "
                        "run congruency run for the month first)")


def files(root: str | Path, tables, month: str) -> dict[str, list[str]]:
    """table -> its published files of `month`, all from one snapshot of the catalog (empty
    lists where nothing is published)."""
    from bgp_congruency.lake import catalog

    try:
        with catalog.opened(root) as con:
            return {t: catalog.files(con, t, month) for t in tables}
    except catalog.NoCatalog:
        return {t: [] for t in tables}


def read(root: str | Path, table: str, month: str):
    """A published table's rows of `month` as a pyarrow Table (`month` is not a column: it is
    the month asked for), from the catalog's current snapshot (or the pinned one)."""
    import pyarrow.parquet as pq

    from bgp_congruency.common.table_docs import DOCS

    found = files(root, [table], month)[table]
    if not found:
        return DOCS[table].schema.empty_table().drop_columns(["month"])
    return pq.read_table(found, partitioning=None)


def listing(root: str | Path, tables, months_: list[str] | None = None) -> list:
    """The published files of these tables (and months), relative to the data dir, from one
    snapshot: what a step that reads them read, for its fingerprint (runner/state.py). A
    publish never reuses a file name, so the names are the fingerprint."""
    import os

    from bgp_congruency.lake import catalog

    root = Path(root).resolve()
    try:
        with catalog.opened(root) as con:
            out = []
            for t in tables:
                for m in (months_ if months_ is not None else [None]):
                    out += [[os.path.relpath(f, root)] for f in catalog.files(con, t, m)]
            return out
    except catalog.NoCatalog:
        return []


def write_rows(root: str | Path, table: str, month: str, rows: list[dict], schema, *,
               replace: bool = True) -> Path:
    """A few rows of a documented table (`schema`, common/tables.py), published on their own:
    written into a publish folder of the month and committed (lake/catalog.py) instead of the
    month's rows so far (`replace`), or beside them. `month` lives in the folder name, not in
    the file. Returns the file."""
    import uuid

    import pyarrow as pa
    import pyarrow.parquet as pq

    from bgp_congruency.common import atomic
    from bgp_congruency.lake import catalog

    from bgp_congruency.common.locks import month_lock

    # Under the month's lock, as every publish: a folder not yet committed is not an orphan
    # (a run of the month, or vacuum, deletes those only while holding it).
    with month_lock(root, month, wait_s=WRITE_WAIT_S):
        folder = Path(layout.publish_dir(root, table, month, f"{month}-{uuid.uuid4().hex[:8]}"))
        folder.mkdir(parents=True)
        final = folder / "part-0.parquet"
        with atomic.replacing(final) as tmp:
            pq.write_table(pa.Table.from_pylist(rows, schema=schema).drop_columns(["month"]), tmp)
        catalog.publish(root, month, {table: str(folder)}, replace=replace)
    return final


#: How long a few rows wait for a run of their month in flight, then LockBusy says which.
WRITE_WAIT_S = 60.0
