"""The ingest manifest: one row per snapshot slot, saying what happened to it.

Stored one file per collector, `manifest/month=YYYY-MM/collector=C.parquet`, each rewritten
whole after a run that touched its collector and merged by slot, so it always shows the
latest outcome of every slot of the month and a re-run knows what is already done. One file
per collector because the DAG's ingest tasks (one per collector) may run on different hosts
of an s3:// data dir, where no lock is shared: each writes only its own collector's file, so
none drops another's rows. A month an earlier version stored as one `manifest.parquet` is
read as it is and split into the collectors' files by its next write.
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
    """The month's manifest folder (what a step's outputs name)."""
    return layout.manifest_dir(data_dir, month)


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


def latest(single: list[dict], per: dict[str, list[dict]]) -> dict[str, dict]:
    """Latest row per slot from an earlier version's single file's rows and collector -> the
    rows of its file: a collector's file (even an empty one) shadows its rows of the single file."""
    rows = {r["slot"]: r for r in single if r["collector"] not in per}
    for rs in per.values():
        rows.update((r["slot"], r) for r in rs)
    return rows


def read(data_dir: Path, month: str) -> dict[str, dict]:
    """Latest row per slot, as plain dicts (local, or S3: ingest/onto_s3.py)."""
    single, per = layout.manifest_parts(data_dir, month)
    return latest(s3.read_rows(single) if single else [], {c: s3.read_rows(f) for c, f in per.items()})


def merge_write(data_dir: Path, month: str, rows: list[Row], drop: set[str] = frozenset()) -> Path:
    """Replace the rows of these slots, remove those of `drop`, keep the others: each collector
    they touch gets its file rewritten whole (atomic rename; empty when its last rows are
    dropped, so it still shadows an earlier version's single file). That single file goes once
    every collector of it has its own file; until then it stays, so a DAG task of another
    collector that read it before (on another host, on S3) loses nothing. Local data dirs only
    (an s3:// one's ingest writes its mirror's, ingest/onto_s3.py); the read-merge-write
    holds the month's manifest lock."""
    with month_lock(data_dir, month, part="manifest", wait_s=300):
        before = read(data_dir, month)
        current = {k: r for k, r in before.items() if k not in drop}
        for r in rows:
            current[r.slot] = r.to_dict()
        touched = {r.collector for r in rows} | {before[k]["collector"] for k in drop if k in before}
        by_collector: dict[str, list[dict]] = {c: [] for c in touched}
        for r in current.values():
            if r["collector"] in touched:
                if isinstance(r.get("skipped"), dict):
                    r["skipped"] = list(r["skipped"].items())
                by_collector[r["collector"]].append(r)
        for c, rs in sorted(by_collector.items()):
            table = pa.Table.from_pylist(sorted(rs, key=lambda r: r["slot"]), schema=SCHEMA)
            with atomic.replacing(layout.manifest_file(data_dir, month, c)) as tmp:
                pq.write_table(table, tmp, compression="zstd")
        single, per = layout.manifest_parts(data_dir, month)
        if single and {r["collector"] for r in s3.read_rows(single)} <= set(per):
            Path(single).unlink()  # shadowed whole
    return path(data_dir, month)
