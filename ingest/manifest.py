"""The ingest manifest: one row per snapshot slot, saying what happened to it.

Stored as `manifest/month=YYYY-MM/manifest.parquet`, rewritten atomically after each run
and merged by slot, so it always shows the latest outcome of every slot of the month and
a re-run knows what is already done.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bgp_congruency.common import atomic, layout, s3
from bgp_congruency.common.locks import month_lock
from bgp_congruency.common.tables import MANIFEST as SCHEMA


@dataclass
class Row:
    month: str
    slot: str
    collector: str
    project: str
    target_time: datetime
    status: str
    dump_time: datetime | None = None
    substituted: bool = False
    url: str | None = None
    local_path: str | None = None
    sha256: str | None = None
    bytes: int | None = None
    records: int | None = None
    entries_v4: int | None = None
    entries_v6: int | None = None
    skipped: dict[str, int] = field(default_factory=dict)
    backend: str | None = None
    duration_s: float | None = None
    error: str | None = None
    output: str | None = None
    ingested_at: datetime | None = None
    address_span: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["skipped"] = list(self.skipped.items())
        return d


def path(data_dir: Path, month: str) -> Path:
    return layout.manifest_file(data_dir, month)


def routes_output(data_dir: Path, month: str, collector: str) -> str:
    """A merged slot's `output`: its collector's routes folder, relative to the data dir (still
    right when the data dir is spelled, mounted or moved otherwise)."""
    return str(Path(layout.routes_dir(Path("."), month, collector)))


def merged(data_dir: Path, row: dict, have: dict[str, set[str]] | None = None) -> bool:
    """Whether an ok row's dump is in its collector's current routes (`have`: collector ->
    the source files there, when the caller read them already)."""
    from bgp_congruency.common import routes

    if have is None:
        have = {row["collector"]: {s.source_file for s in routes.current_snapshots(data_dir, row["month"], row["collector"])}}
    return row.get("url") in have.get(row["collector"], ())


def read(data_dir: Path, month: str) -> dict[str, dict]:
    """Latest row per slot, as plain dicts."""
    return {r["slot"]: r for r in s3.read_rows(path(data_dir, month))}  # local, or S3 (ingest/onto_s3.py)


def merge_write(data_dir: Path, month: str, rows: list[Row], drop: set[str] = frozenset()) -> Path:
    """Replace the rows of these slots, remove those of `drop`, keep the others; atomic rename. Safe for concurrent
    writers (one per collector, e.g. Airflow's mapped ingest tasks): the read-merge-write
    holds the month's manifest lock."""
    p = path(data_dir, month)
    with month_lock(data_dir, month, part="manifest", wait_s=300):
        current = {k: r for k, r in read(data_dir, month).items() if k not in drop}
        for r in rows:
            current[r.slot] = r.to_dict()
        for r in current.values():
            if isinstance(r.get("skipped"), dict):
                r["skipped"] = list(r["skipped"].items())
        table = pa.Table.from_pylist(sorted(current.values(), key=lambda r: r["slot"]), schema=SCHEMA)
        with atomic.replacing(p) as tmp:
            pq.write_table(table, tmp, compression="zstd")
    return p
