"""Parquet output of one decoded dump, written in batches and published atomically: what
ingest's merge folds into the month's routes (ingest/routes.py).

The file grows under common/atomic.py's dot-temp name, which Spark, DuckDB globs and pyarrow
datasets all skip, and is renamed into place only once every entry is in it and checked. Each
batch's rows are written bucket by bucket (common/vp_hash.py), a row group per bucket: a merge
in several bucket ranges (a month larger than its memory) reads each range's row groups
straight from these files, where it once rewrote every entry into a file per range first.
The native decoder groups a batch's rows (a counting pass; ingest asks it to once a
collector's merge will need several ranges: ingest/routes.Feed.grouped); other batches are
written as they come, and such a file is split at the merge. The rows keep the dump's order
inside each bucket: sorting a whole dump by bucket cost 4 of every 6 seconds of writing (8M
entries: 6.0 s against 2.1 s; bench/RESULTS.md).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bgp_congruency.common import atomic, layout, vp_hash
from bgp_congruency.common.tables import DECODED_FILE, VP_BUCKET

# Dictionary pages only where values repeat (a prefix or path dictionary costs time and
# bytes); min/max statistics on the dump's time and file, which the merge reads off the
# footer (ingest/routes.py: a dump's file is one snapshot), and on the bucket of each row group.
_DICTIONARY = ["project", "peer_ip", "source_file"]
_STATISTICS = ["snapshot_time", "source_file", vp_hash.COLUMN]


def decoded_path(data_dir: Path, month: str, collector: str, file_name: str) -> Path:
    """Where a dump is decoded to, before ingest merges it into its collector's routes."""
    stem = file_name.split(".bz2")[0].split(".gz")[0]
    return Path(layout.decoded_file(data_dir, month, collector, stem))


#: The footer key of a decoded file's manifest row (JSON): a run killed before its merge
#: leaves the file whole, and the next run merges it without decoding it again.
ROW_KEY = b"congruency.manifest_row"


def decoded_row(path: Path) -> dict | None:
    """The manifest row a decoded file carries (None for a file without one: an older one)."""
    try:
        meta = pq.read_metadata(path).metadata or {}
        return json.loads(meta[ROW_KEY]) if ROW_KEY in meta else None
    except Exception:  # gone, unreadable or not Parquet: not a decoded file to merge
        return None


# --- how much of the address space a snapshot covers ----------------------------------------
# Some sample RIBs are the leading part of a full dump (shared data MANIFEST.md: "the first
# 1-2 MiB"): every record intact, but only the lowest prefixes. Their sizes must not stand for
# the collector's in `congruency plan`. Every RIR holds IPv4 space above 100.0.0.0 and IPv6
# space at or above 2400:: (APNIC 2400::/12, ARIN 2600::/12, LACNIC 2800::/12, RIPE 2a00::/12,
# AFRINIC 2c00::/12): a table, even a regional one, whose prefixes all sit below those is the
# low end of a dump, not a collector's view. The writer keeps the highest first IPv4 octet and
# first IPv6 16 bits of a strided sample of each batch (every SPAN_STRIDE-th row and the last:
# the space above holds thousands of prefixes, so the sample reaches it at no cost to the hot
# path) in the file's footer, under SPAN_KEY.
SPAN_KEY = b"congruency.address_span"
SPAN_STRIDE = 256
FULL_V4_TOP_OCTET = 100
FULL_V6_TOP_16 = 0x2400


def _top(prefixes: pa.Array, afi: int) -> int | None:
    """The highest first IPv4 octet, or first IPv6 16 bits, of these prefixes (None if none)."""
    if len(prefixes) == 0:
        return None
    first = pc.list_element(pc.split_pattern(prefixes, "." if afi == 4 else ":", max_splits=1), 0)
    if afi == 4:
        return pc.max(pc.cast(first, pa.int32())).as_py()
    return int(pc.max(pc.utf8_lpad(pc.utf8_lower(first), 4, "0")).as_py(), 16)  # zero-padded hex sorts as numbers


def address_span(path: Path) -> dict | None:
    """{"v4": highest first octet or None, "v6": highest first 16 bits or None} of a
    snapshot's file, from its footer; None for files written before the span was kept."""
    try:
        meta = pq.read_metadata(path).metadata or {}
        return json.loads(meta[SPAN_KEY]) if SPAN_KEY in meta else None
    except Exception:  # gone, unreadable or not Parquet: nothing known (the compare says why)
        return None


def partial(span: dict | None) -> bool:
    """True when a family's prefixes stop well below the top of the space: a cut sample."""
    if not span:
        return False
    return (span.get("v4") is not None and span["v4"] < FULL_V4_TOP_OCTET) or \
        (span.get("v6") is not None and span["v6"] < FULL_V6_TOP_16)


class SnapshotWriter:
    """One decoded dump's Parquet file."""

    def __init__(self, final: Path, feed=None):
        self.final = final
        self._feed = feed  # ingest/routes.FeedDump: the merge's share of each batch, or None
        self._file = atomic.Pending(final)
        self._writer = pq.ParquetWriter(self._file.tmp, DECODED_FILE, compression="zstd",
                                        use_dictionary=_DICTIONARY, write_statistics=_STATISTICS)
        self.rows = 0
        self.span: dict[str, int | None] = {"v4": None, "v6": None}

    def write(self, batch: pa.RecordBatch) -> None:
        """One batch: a row group per bucket when the decoder grouped its rows by bucket
        (`vp_bucket` given), else as it comes (its bucket column added)."""
        grouped = vp_hash.COLUMN in batch.schema.names
        if not grouped:
            asns = batch.column("peer_asn").to_numpy(zero_copy_only=False)
            batch = batch.append_column(VP_BUCKET, pa.array(vp_hash.buckets(asns), pa.int8()))
        batch = batch.select(DECODED_FILE.names)
        self.rows += batch.num_rows
        self._note_span(batch)
        if batch.num_rows:
            b = batch.column(vp_hash.COLUMN).to_numpy()
            cuts = [0, *(np.flatnonzero(b[1:] != b[:-1]) + 1).tolist(), len(b)] if grouped else [0, len(b)]
            for lo, hi in zip(cuts, cuts[1:]):  # a row group per bucket
                self._writer.write_batch(batch.slice(lo, hi - lo))
            if self._feed is not None:
                self._feed.add(batch)

    def _note_span(self, batch: pa.RecordBatch) -> None:
        n = batch.num_rows
        if not n:
            return
        idx = np.unique(np.append(np.arange(0, n, SPAN_STRIDE), n - 1))
        sample = batch.select(["afi", "prefix"]).take(pa.array(idx))
        afi = sample.column(0).to_numpy(zero_copy_only=False)
        for fam, n in (("v4", 4), ("v6", 6)):
            top = _top(sample.column(1).filter(pa.array(afi == n)), n)
            if top is not None:
                self.span[fam] = top if self.span[fam] is None else max(self.span[fam], top)

    def publish(self, row: dict | None = None) -> Path:
        """The whole file under its final name, with its address span and (`row`) the
        manifest row of its dump in the footer."""
        meta = {SPAN_KEY: json.dumps(self.span).encode()}
        if row is not None:
            meta[ROW_KEY] = json.dumps(row, default=str).encode()
        self._writer.add_key_value_metadata(meta)
        self._writer.close()
        out = self._file.commit()
        if self._feed is not None:
            self._feed.whole(out)
        return out

    def abort(self) -> None:
        """Drop the temp file, and the collector's folder if this writer made it empty."""
        try:
            self._writer.close()
        finally:
            self._file.discard()
            try:
                self.final.parent.rmdir()
            except OSError:
                pass  # other snapshots' files (or temps) are in it
