"""Which months have published results, and which files they are: the one definition every
reader shares, answered by the catalog (lake/attach.py).

A month is published when a compare committed its tables, `month_summary` among them (every
month it ran has one row there, even without pairs). Files a publish moved into place but
never committed, or that a later publish replaced, are not published: only the catalog knows
which, so no reader lists folders.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bgp_congruency.common import atomic, layout, s3
from bgp_congruency.common.duck import quote
from bgp_congruency.common.errors import BadInput
from bgp_congruency.common.locks import month_lock
from bgp_congruency.common.months import listed
from bgp_congruency.common.table_docs import DOCS
from bgp_congruency.lake import commit
from bgp_congruency.lake.attach import ALIAS, LakeError, NoCatalog, legacy_months, opened, remembered


class NoResults(BadInput):
    """The month asked for has no published results: a bad argument (exit 2)."""


# --- in the snapshot a connection reads --------------------------------------------------------

def table_files(con, table: str, month: str | None = None, have: set[str] | None = None) -> list[str]:
    """The Parquet files of `table` (of `month`) in the snapshot `con` reads, sorted (`have`:
    the attached tables, where the caller has them)."""
    if table not in (attached_tables(con) if have is None else have):
        return []
    where = f" WHERE data_file LIKE {quote('%/month=' + month + '/%')}" if month else ""
    rows = con.execute(f"SELECT data_file, delete_file FROM ducklake_list_files({quote(ALIAS)}, {quote(table)}){where}"
                       ).fetchall()
    partial = [f for f, d in rows if d is not None]
    if partial:  # a publish replaces whole files; rows deleted otherwise (by hand?) cannot be read as files
        raise LakeError(f"{table}: {partial[0]} has rows deleted in the catalog (a delete file); read the table "
                        "through SQL (lake.connect), or re-publish the month")
    return sorted(f for f, _d in rows)


def table_months(con, table: str = "month_summary") -> list[str]:
    """Months whose `table` is published in the snapshot `con` reads (rows or not), oldest first."""
    return ledger_months(con).get(table, [])


def ledger_months(con) -> dict[str, list[str]]:
    """Every table's months published in the snapshot `con` reads (rows or not), oldest first:
    one query, where a command asks about several tables."""
    if not commit.has_ledger(con):
        return {}
    out: dict[str, list[str]] = {}
    for t, m in con.execute(f"SELECT DISTINCT table_name, month FROM {ALIAS}.{commit.LEDGER} ORDER BY 2").fetchall():
        out.setdefault(t, []).append(m)
    return out


def attached_tables(con) -> set[str]:
    """The published tables of the attached catalog (its `main` schema)."""
    return {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main'", [ALIAS]).fetchall()}


# --- of a data dir ----------------------------------------------------------------------------

def months(root: str | Path, table: str = "month_summary") -> list[str]:
    """Months (YYYY-MM) with at least one published file of `table`, oldest first."""
    def compute():
        try:
            with opened(root) as con:
                return ledger_months(con)
        except NoCatalog:
            return {}
    return list(remembered(root, ("months",), compute).get(table, []))


def require(root: str | Path, month: str) -> None:
    """NoResults (the same one line for every command) unless `month` is published."""
    have = months(root)
    if month not in have:
        if month in legacy_months(root):
            raise NoResults(f"month {month}: published in {root} before the catalog; run congruency lake "
                            f"migrate --data-dir {layout.shell_quote(root)} (registers it in place, no copy)")
        raise NoResults(f"month {month}: no published results in {root} (published months: {listed(have)}; "
                        "run congruency run for the month first)")


def files(root: str | Path, tables, month: str) -> dict[str, list[str]]:
    """table -> its published files of `month`, all from one snapshot of the catalog (empty
    lists where nothing is published)."""
    tables = list(tables)

    def compute():
        try:
            with opened(root) as con:
                have = remembered(root, ("tables",), lambda: attached_tables(con))
                return {t: table_files(con, t, month, have) for t in tables}
        except NoCatalog:
            return {t: [] for t in tables}
    return {t: list(fs) for t, fs in remembered(root, ("files", tuple(tables), month), compute).items()}


def read(root: str | Path, table: str, month: str) -> pa.Table:
    """A published table's rows of `month` as a pyarrow Table (`month` is not a column: it is
    the month asked for), from the catalog's current snapshot (or the pinned one)."""
    found = files(root, [table], month)[table]
    if not found:
        return DOCS[table].schema.empty_table().drop_columns(["month"])
    paths, fs = s3.for_arrow(found)
    return pq.read_table(paths, partitioning=None, filesystem=fs)


def listing(root: str | Path, tables, months_: list[str] | None = None) -> list:
    """The published files of these tables (and months), relative to the data dir, from one
    snapshot: what a step that reads them read, for its fingerprint (runner/state.py). A
    publish never reuses a file name, so the names are the fingerprint."""
    root = Path(root).resolve()
    try:
        with opened(root) as con:
            out = []
            for t in tables:
                for m in (months_ if months_ is not None else [None]):
                    out += [[os.path.relpath(f, root)] for f in table_files(con, t, m)]
            return out
    except NoCatalog:
        return []


#: How long a few rows wait for a run of their month in flight, then LockBusy says which.
WRITE_WAIT_S = 60.0


@contextlib.contextmanager
def _removed_on_error(folder: Path):
    """A publish folder that is removed when its rows fail to be written (a streamed query's
    error surfaces mid-write): nothing of a failed write is left behind."""
    try:
        yield
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def write_rows(root: str | Path, table: str, month: str, rows: list[dict] | pa.Table | pa.RecordBatchReader,
               schema, *, replace: bool = True) -> Path:
    """Rows of a documented table (`schema`, common/tables.py), published on their own:
    written into a publish folder of the month and committed (lake/commit.py) instead of the
    month's rows so far (`replace`), or beside them. `month` lives in the folder name, not in
    the file. A RecordBatchReader (a query's result, millions of rows) is written a batch at a
    time, never whole in memory. Returns the file."""
    # Under the month's lock, as every publish: a folder not yet committed is not an orphan
    # (a run of the month, or vacuum, deletes those only while holding it).
    with month_lock(root, month, wait_s=WRITE_WAIT_S):
        folder = Path(layout.publish_dir(root, table, month, f"{month}-{uuid.uuid4().hex[:8]}"))
        folder.mkdir(parents=True)
        final = folder / "part-0.parquet"
        with _removed_on_error(folder), atomic.replacing(final) as tmp:
            if isinstance(rows, pa.RecordBatchReader):
                names = [n for n in schema.names if n != "month"]
                out = pa.schema([schema.field(n) for n in names])
                with pq.ParquetWriter(tmp, out) as w:
                    for batch in rows:
                        w.write_batch(batch.select(names).cast(out))
            else:
                t = rows.select(schema.names).cast(schema) if isinstance(rows, pa.Table) else \
                    pa.Table.from_pylist(rows, schema=schema)
                pq.write_table(t.drop_columns(["month"]), tmp)
        commit.publish(root, month, {table: str(folder)}, replace=replace)
    return final
