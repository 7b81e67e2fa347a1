"""Hand-made months and the comparison of published tables with the pure-Python reference
(congruency/reference.py): write entries, read a published table, canonical row order."""
from __future__ import annotations

import hashlib
import os
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from bgp_congruency.common.tables import DECODED_SCHEMA, TABLES
from bgp_congruency.congruency import reference
from bgp_congruency.ingest.writer import SnapshotWriter, entries
from tests.support import cases, shared


def read_published(data: Path, table: str, month: str) -> pa.Table:
    """A published table's rows of `month`, as the catalog has them now (month not a column)."""
    from bgp_congruency.lake import published as pub

    return pub.read(data, table, month)


def publish_rows(data: Path, month: str, tables: dict[str, list[dict]]) -> None:
    """Rows of `month`'s tables published the way the job does it: Parquet files (month only
    in the folder name) in a publish folder, committed to the catalog in one transaction."""
    import uuid

    from bgp_congruency.common import layout
    from bgp_congruency.common.table_docs import DOCS
    from bgp_congruency.lake import commit

    pid = f"{month}-{uuid.uuid4().hex[:8]}"
    folders = {}
    for name, rows_ in tables.items():
        d = Path(layout.publish_dir(data, name, month, pid))
        d.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows_, schema=DOCS[name].schema).drop_columns(["month"]), d / "part-0.parquet")
        folders[name] = str(d)
    commit.publish(data, month, folders)


def link_ingested(ingested: Path, data: Path, month: str) -> None:
    """A data dir whose month's routes are another's (linked, read only)."""
    (data / "routes").mkdir(parents=True, exist_ok=True)
    (data / "routes" / f"month={month}").symlink_to(ingested / "routes" / f"month={month}")


def copy_ingested(ingested: Path, data: Path, month: str) -> None:
    """Another data dir's ingested month (its routes and manifest) copied into `data`."""
    import shutil

    for sub in ("routes", "manifest"):
        shutil.copytree(ingested / sub / f"month={month}", data / sub / f"month={month}")


def copy_data_dir(src: Path, dst: Path) -> Path:
    """A copy of a data dir that reads its own files: copied, then its catalog relocated
    (`congruency lake relocate`, what a user copying one runs)."""
    import shutil

    from bgp_congruency.lake import upkeep

    shutil.copytree(src, dst, symlinks=True)
    if (dst / "catalog.sqlite").is_file():
        upkeep.relocate(dst)
    return dst


def published(data: Path, table: str, month: str) -> list[dict]:
    return published_tables(data, [table], month)[table]


def published_tables(data: Path, tables, month: str) -> dict[str, list[dict]]:
    """table -> its published rows of `month`, every table from one snapshot of the catalog
    (one attach for all: an attach costs about 0.15 s, a hand-made month's rows far less)."""
    from bgp_congruency.common.tables import TRANSITIONS
    from bgp_congruency.lake import published as pub

    found = pub.files(data, list(tables), month)
    out = {}
    for table in tables:
        rows = (pq.read_table(found[table], partitioning=None) if found[table]
                else pub.read(data, table, month)).to_pylist()  # none: read gives the empty table
        schema = TRANSITIONS if table == "transitions" else TABLES[table]
        assert not rows or set(rows[0]) == set(schema.names) - {"month"}
        out[table] = rows
    return out


def canon(rows: list[dict]) -> list[tuple]:
    """Rows as sorted tuples; floats to 12 significant digits (Spark's percentile sums
    the interpolation terms in another order than the reference)."""
    out = []
    for r in rows:
        out.append(tuple(sorted(
            (k, tuple(v) if isinstance(v, list) else float(f"{v:.12g}") if isinstance(v, float) else v)
            for k, v in r.items() if k != "month")))
    return sorted(out, key=repr)


#: Where a hand-made month keeps the entries it was written from (the reference's input,
#: beside the routes ingest merged them into).
ENTRIES = "_entries"


def entry_rows(data: Path, month: str):
    """The month's entries as the reference reads them, independent of the routes: a hand-made
    month's rows as written (`_entries`), else every dump its routes name, decoded again from
    its MRT file by the native decoder (not merged, not expanded)."""
    from bgp_congruency.common import routes
    from tests.support.decode import decode_all

    written = data / ENTRIES / f"month={month}"
    if written.is_dir():
        d = ds.dataset(written, partitioning="hive")
        for b in d.to_batches(columns=ENTRY_COLS):
            yield from entries(b).to_pylist()  # the paths as lists, as stored in any form
        return
    for collector, gen in sorted(routes.month_generations(data, month).items()):
        for sn in routes.snapshots(gen):
            t = decode_all(Path(sn.source_file), "native", collector=collector, snapshot_time=sn.time)
            for b in t.select(ENTRY_COLS).to_batches():
                yield from b.to_pylist()


def compute_reference(data: Path, month: str, params) -> dict[str, list[dict]]:
    """The reference's tables of the month's entries (entry_rows; uncached)."""
    return reference.compute_month(entry_rows(data, month), month, params)


def assert_same_as_reference(data: Path, month: str, params) -> dict[str, list[dict]]:
    ref = reference_of(data, month, params)
    got = published_tables(data, TABLES, month)
    for table in TABLES:
        assert canon(got[table]) == canon(ref[table]), f"{table} differs for {month}"
    return ref


# ------------------------------------------------------------------ hand-made cases
def write_entries(data: Path, month: str, rows: list[dict]) -> None:
    """Hand rows -> the month's routes, as ingest makes them: one decoded file per collector
    (kept under `_entries` as the reference's input), merged by ingest/routes.merge."""
    by_col: dict[str, list[dict]] = {}
    for r in rows:
        by_col.setdefault(r["collector"], []).append(r)
    for col, rs in by_col.items():
        out = data / ENTRIES / f"month={month}" / f"collector={col}" / "hand.parquet"
        out.parent.mkdir(parents=True, exist_ok=True)
        t = [dict(
            project="test",
            snapshot_time=r["snapshot_time"] if isinstance(r["snapshot_time"], datetime) else
            datetime.fromtimestamp(1_700_000_000 + int(r["snapshot_time"]) * 3600, timezone.utc),
            peer_asn=r["peer_asn"], peer_ip=r["peer_ip"], afi=r["afi"], prefix=r["prefix"],
            as_path=r["as_path"], has_as_set=r["has_as_set"], as_path_raw=r.get("as_path_raw"),
            origin_asn=(r["as_path"] or [None])[-1], source_file=r.get("source_file", "hand")) for r in rs]
        write_snapshot(out, t)
        merge_into_routes(data, month, col, [out])


def merge_into_routes(data: Path, month: str, collector: str, files: list[Path]) -> None:
    """Decoded files -> the collector's routes (ingest/routes.merge, as ingest runs it)."""
    from bgp_congruency.common.config import Config
    from bgp_congruency.ingest import routes

    routes.merge(Config().with_overrides(data_dir=data, duckdb_memory_limit="1GB", duckdb_threads=2), month,
                 collector, files)


def as_written_before(data: Path, month: str, collector: str, column: str) -> None:
    """Rewrite a collector's routes without `column`, as an earlier version wrote them (each
    row group kept: a compare partition reads its buckets' groups)."""
    from bgp_congruency.common import routes

    for f in routes.month_files(data, month)[collector]:
        pf = pq.ParquetFile(f)
        schema = pf.schema_arrow.remove(pf.schema_arrow.get_field_index(column))
        tmp = Path(f + ".tmp")
        with pq.ParquetWriter(tmp, schema) as w:
            for g in range(pf.num_row_groups):
                w.write_table(pf.read_row_group(g).drop_columns([column]))
        tmp.replace(f)


def write_snapshot(out: Path, rows: list[dict]) -> None:
    """Decoded rows -> one snapshot's Parquet file, through ingest's writer."""
    table = pa.Table.from_pylist(rows, schema=DECODED_SCHEMA)
    w = SnapshotWriter(out)
    for b in table.to_batches():
        w.write(b)
    w.publish()


HAND_CASES = {
    "2024-01": (cases.full_month_rows, 0.0),
    "2024-02": (cases.coverage_rows, 0.5),
    "2024-03": (cases.quartile_rows, 0.0),
    "2024-04": (cases.cleaning_rows, 0.0),  # every cleaning reason and their precedence
    "2024-05": (cases.paths_rows, 0.0),  # the three tie-break levels of the representative path
    "2024-06": (cases.snapshot_rows, 0.0),  # 150 snapshot times: three words of snapshot bits
}


#: The sensitivity analysis's parameter variants (pipeline/sensitivity.py) on hand-made
#: months: month -> (rows, MethodParams changes).
VARIANT_CASES = {
    "2024-07": (cases.cleaning_rows, dict(min_coverage=0.0, first_as_rule=False, reserved_asns=())),
    "2024-08": (cases.full_month_rows, dict(min_coverage=0.0, groups={})),
    # each collector's first snapshot: route-views2's bit 0 is the month's 0, route-views6's its 1
    "2024-09": (cases.snapshot_rows, dict(min_coverage=0.0, snapshots="first")),
    # paths read from their text, which the routes' as_path_repeats does not describe
    "2024-10": (cases.hop_rows, dict(min_coverage=0.0, as_set="hop")),
}


ENTRY_COLS = ["collector", "snapshot_time", "peer_asn", "peer_ip", "afi", "prefix", "as_path", "has_as_set", "as_path_raw"]


_REFERENCE: dict = {}


def reference_of(data: Path, month: str, params) -> dict[str, list[dict]]:
    """The reference's tables for a month's rib_entries; cached per input folder and
    parameters, as both engines' tests check the same real month (the reference takes 12-25 s
    on it): in the process, and for an input the session shares (the ingested real month,
    linked in) for every worker (tests/support/shared.once)."""
    src = (data / "routes" / f"month={month}").resolve()  # a month linked in: the shared one's
    key = (str(src), month, repr(params))
    if key not in _REFERENCE:
        root = os.environ.get(shared.SHARED_ENV)
        if root and src.is_relative_to(root) and not src.is_relative_to(data.resolve()):
            name = "reference-" + hashlib.sha256(repr(key).encode()).hexdigest()[:16]
            _REFERENCE[key] = shared.once(Path(root), name, lambda: compute_reference(data, month, params))
        else:
            _REFERENCE[key] = compute_reference(data, month, params)
    return _REFERENCE[key]


def compare_real(data: Path, ingested: Path, config, copy: bool = False):
    """The real 2026-07 sample (`ingested`: the ingested_2026 fixture) compared with the DuckDB
    engine into `data`, its routes linked in (`copy`: copied, with the manifest, for the
    warehouse, which reads only inside its data dir); returns the data dir's config."""
    from bgp_congruency.pipeline import job

    if copy:
        copy_ingested(ingested, data, "2026-07")
    else:
        link_ingested(ingested, data, "2026-07")
    cfg = config.with_overrides(data_dir=data, engine="duckdb")
    [res] = job.compare_months(cfg, ["2026-07"])
    assert res.error is None, res.error
    return cfg
