from __future__ import annotations

import bz2
import gzip
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bgp_congruency.common.tables import RIB_ENTRIES
from bgp_congruency.ingest import backends
from bgp_congruency.ingest import run as ingest_run
from bgp_congruency.ingest.discovery import Slot
from bgp_congruency.ingest.normalize import to_entries
from bgp_congruency.ingest.writer import SnapshotWriter
from tests.fuzz.native_fuzz import boundaries
from tests.support.data import RV6_2026


def decode_all(path: Path, backend: str, collector: str = "c", snapshot_time: datetime | None = None,
               project: str = "p", source_file: str = "f") -> pa.Table:
    """Every entry of an MRT file, as ingest's decoders give them (rib_entries' columns)."""
    mod = backends.get(backend)
    t = snapshot_time or datetime(2000, 1, 1, tzinfo=timezone.utc)
    if mod.SELF_CHECKING:
        return pa.Table.from_batches(list(mod.decode_checked(path, 50_000, collector=collector, project=project,
                                                             snapshot_time=t, source_file=source_file)),
                                     schema=RIB_ENTRIES)
    return pa.Table.from_batches(
        [to_entries(b, collector=collector, project=project, snapshot_time=t, source_file=source_file)
         for b in mod.decode(path, 50_000)]
    )


def decode_file(path: Path, backend: str, tmp_path: Path):
    """ingest.run.decode_file as ingest runs it: (stats, decoded, table) or the IngestError text."""
    w = SnapshotWriter(tmp_path / f"{backend}-{path.name}.parquet")
    try:
        stats, decoded = ingest_run.decode_file(path, slot_of(path), backends.get(backend), w,
                                                batch_rows=100_000, source=str(path))
    except ingest_run.IngestError as exc:
        w.abort()
        return str(exc)
    return stats, decoded, pq.read_table(w.publish())


def multistream_files(tmp_path: Path) -> tuple[Path, Path]:
    """pbzip2/lbzip2-style .bz2 (3 streams) and concatenated .gz (2 members), cut at record
    boundaries from the real route-views6 RIB."""
    raw = bz2.decompress(RV6_2026.read_bytes())
    b = boundaries(raw)
    cuts = [0, b[len(b) // 3], b[2 * len(b) // 3], len(raw)]
    parts = [raw[x:y] for x, y in zip(cuts, cuts[1:])]
    three_bz2 = tmp_path / "rib.20260730.1400.bz2"
    three_bz2.write_bytes(b"".join(bz2.compress(p, 1) for p in parts))
    two_gz = tmp_path / "rib.20260730.1400.gz"
    two_gz.write_bytes(gzip.compress(parts[0], 1, mtime=0) + gzip.compress(parts[1] + parts[2], 1, mtime=0))
    return three_bz2, two_gz


def slot_of(path: Path) -> Slot:
    t = datetime(2026, 7, 30, 14, tzinfo=timezone.utc)
    return Slot(collector="route-views2", project="routeviews", month="2026-07", target=t,
                url=str(path), dump_time=t)
