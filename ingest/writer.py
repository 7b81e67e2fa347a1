"""Parquet output of one snapshot, written in batches and published atomically.

The file grows under common/atomic.py's dot-temp name, which Spark, DuckDB globs and pyarrow
datasets all skip, and is renamed into place only once every entry is in it and checked. Rows
are grouped by VP bucket into row groups (common/vp_hash.py), so a compare partition reads
only its own.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bgp_congruency.common import atomic, layout, vp_hash
from bgp_congruency.common.tables import DECODED_SCHEMA, FILE_SCHEMA

# Dictionary pages only where values repeat (a prefix or path dictionary costs time and
# bytes), min/max statistics only on the columns readers filter on: 30% less write time and
# an 18% smaller file than pyarrow's defaults (bench/ingest.py, real route-views2 RIB).
_DICTIONARY = ["project", "peer_ip", "source_file"]
_STATISTICS = ["snapshot_time", "source_file", "afi", "peer_asn", "origin_asn", vp_hash.COLUMN]
# A bucket's rows are written as a row group of their own once this many have come
# (common/vp_hash.py: a compare partition then reads only its buckets' row groups). The
# writer holds at most BUCKETS x this many rows (about 180 bytes each in Arrow: ~95 MB); the
# rest of each bucket is written at the end, in bucket order, in row groups this long.
# The cost is disk: a prefix's rows no longer sit together, so the file is about 2.2x larger
# (bench/RESULTS.md "Ingest: the VP-bucket layout").
ROW_GROUP_ROWS = 16384


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
    """One snapshot's Parquet file, its rows grouped by VP bucket (common/vp_hash.py)."""

    def __init__(self, final: Path):
        self.final = final
        self._file = atomic.Pending(final)
        self._writer = pq.ParquetWriter(self._file.tmp, FILE_SCHEMA, compression="zstd",
                                        use_dictionary=_DICTIONARY, write_statistics=_STATISTICS)
        self.rows = 0
        self.span: dict[str, int | None] = {"v4": None, "v6": None}
        self._held: list[list[pa.RecordBatch]] = [[] for _ in range(vp_hash.BUCKETS)]
        self._held_rows = [0] * vp_hash.BUCKETS

    def write(self, batch: pa.RecordBatch) -> None:
        batch = batch.select(DECODED_SCHEMA.names)
        self.rows += batch.num_rows
        self._note_span(batch)
        if not batch.num_rows:
            return
        bucket = vp_hash.buckets(batch.column("peer_asn").to_numpy(zero_copy_only=False))
        order = np.argsort(bucket, kind="stable")
        ends = np.searchsorted(bucket[order], np.arange(1, vp_hash.BUCKETS + 1))
        batch = batch.append_column(FILE_SCHEMA.field(vp_hash.COLUMN), pa.array(bucket)).take(pa.array(order))
        start = 0
        for b, end in enumerate(ends.tolist()):
            if end > start:
                self._held[b].append(batch.slice(start, end - start))
                self._held_rows[b] += end - start
                if self._held_rows[b] >= ROW_GROUP_ROWS:
                    self._flush([b])
            start = end

    def _flush(self, buckets: list[int]) -> None:
        """The held rows of these buckets (in this order), as row groups of at least
        ROW_GROUP_ROWS rows (one group for a single bucket)."""
        held = [b for i in buckets for b in self._held[i]]
        if held:
            size = sum(self._held_rows[i] for i in buckets) if len(buckets) == 1 else ROW_GROUP_ROWS
            self._writer.write_table(pa.Table.from_batches(held, FILE_SCHEMA), row_group_size=size)
        for i in buckets:
            self._held[i], self._held_rows[i] = [], 0

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
        self._flush(list(range(vp_hash.BUCKETS)))
        meta = {SPAN_KEY: json.dumps(self.span).encode()}
        if row is not None:
            meta[ROW_KEY] = json.dumps(row, default=str).encode()
        self._writer.add_key_value_metadata(meta)
        self._writer.close()
        return self._file.commit()

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
