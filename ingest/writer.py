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
entries: 6.0 s against 2.1 s; bench/RESULTS.md). The AS paths go in as the bytes of their ASNs
(common/tables.DECODED_STORED: `path_bytes`, read back by `path_lists`): as a list, the path
was half of the file's writing time.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bgp_congruency.common import atomic, layout, vp_hash
from bgp_congruency.common.tables import DECODED_FILE, DECODED_STORED, VP_BUCKET

# Dictionary pages only where values repeat (a prefix or path dictionary costs time and
# bytes); min/max statistics on the dump's time and file, which the merge reads off the
# footer (ingest/routes.py: a dump's file is one snapshot), and on the bucket of each row group.
_DICTIONARY = ["project", "peer_ip", "source_file"]
_STATISTICS = ["snapshot_time", "source_file", vp_hash.COLUMN]


_PATHS = DECODED_FILE.field("as_path").type


def _validity(a: pa.Array) -> pa.Buffer | None:
    """`a`'s validity as a bitmap starting at its first row (None: no nulls)."""
    return pc.is_valid(a).buffers()[1] if a.null_count else None


def path_bytes(paths: pa.Array) -> pa.Array:
    """AS paths (list<uint32>) as DECODED_STORED holds them: each row the bytes of its ASNs,
    over the list's own values buffer (only the offsets are new)."""
    if not (pa.types.is_list(paths.type) and paths.type.value_type == pa.uint32()):
        raise TypeError(f"as_path: expected {_PATHS}, got {paths.type}")
    n, values = len(paths), paths.values
    offsets = np.frombuffer(paths.buffers()[1], np.int32, n + 1, paths.offset * 4) if n else np.zeros(1, np.int32)
    at = (offsets.astype(np.int64) + values.offset) * 4  # bytes into the values' buffer
    if at[-1] >= 2**31:
        raise ValueError(f"as_path: {at[-1]:,} bytes of ASNs in one batch (at most 2 GiB)")
    data = values.buffers()[1] if values.buffers()[1] is not None else pa.py_buffer(b"")
    return pa.Array.from_buffers(pa.binary(), n, [_validity(paths), pa.py_buffer(at.astype(np.int32)), data],
                                 paths.null_count)


def path_lists(stored: pa.Array) -> pa.Array:
    """The inverse of path_bytes: a stored file's as_path (binary) as the decoders' lists;
    lists are returned as they are (files written before DECODED_STORED, hand-made ones)."""
    if pa.types.is_list(stored.type):
        return stored
    if stored.type != pa.binary():
        raise TypeError(f"as_path: expected {_PATHS} or binary, got {stored.type}")
    n = len(stored)
    at = np.frombuffer(stored.buffers()[1], np.int32, n + 1, stored.offset * 4) if n else np.zeros(1, np.int32)
    if (at & 3).any():
        raise ValueError("as_path: a stored path's length is not a whole number of 4-byte ASNs")
    data = stored.buffers()[2] if stored.buffers()[2] is not None else pa.py_buffer(b"")
    values = pa.Array.from_buffers(pa.uint32(), len(data) // 4, [None, data])
    return pa.Array.from_buffers(_PATHS, n, [_validity(stored), pa.py_buffer(at // 4)], stored.null_count,
                                 children=[values])


def entries(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A batch read from a decoded file with its AS paths as lists, whichever form the file
    stored them in (DECODED_STORED or DECODED_FILE)."""
    if "as_path" not in batch.schema.names or pa.types.is_list(batch.schema.field("as_path").type):
        return batch
    i = batch.schema.get_field_index("as_path")
    return batch.set_column(i, batch.schema.field(i).with_type(_PATHS), path_lists(batch.column(i)))


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
        self._writer = pq.ParquetWriter(self._file.tmp, DECODED_STORED, compression="zstd",
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
        if not batch.schema.equals(DECODED_FILE):  # the stored form below would convert other types quietly
            got = ", ".join(f"{f.name} {f.type}{'' if f.nullable else ' not null'}"
                            for f, want in zip(batch.schema, DECODED_FILE) if not f.equals(want))
            raise ValueError(f"{self.final}: columns not of common.tables.DECODED_FILE's types: {got}")
        self.rows += batch.num_rows
        self._note_span(batch)
        if batch.num_rows:
            b = batch.column(vp_hash.COLUMN).to_numpy()
            cuts = [0, *(np.flatnonzero(b[1:] != b[:-1]) + 1).tolist(), len(b)] if grouped else [0, len(b)]
            i = batch.schema.get_field_index("as_path")
            stored = batch.set_column(i, DECODED_STORED.field(i), path_bytes(batch.column(i)))  # as `entries`, inverted
            for lo, hi in zip(cuts, cuts[1:]):  # a row group per bucket
                self._writer.write_batch(stored.slice(lo, hi - lo))
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
