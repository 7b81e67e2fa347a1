"""Writing a month's routes: `merge` folds decoded dumps into a collector's routes as a new
generation. common/routes.py owns the layout, and says how a merge goes and why.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import threading
import uuid
from datetime import timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bgp_congruency.common import atomic, duck, hooks, layout, vp_hash
from bgp_congruency.common.config import parse_bytes
from bgp_congruency.common.duck import quote
from bgp_congruency.common.locks import month_lock
from bgp_congruency.common.routes import GEN, SNAPSHOTS, WORD, Snapshot, current, files, generations, snapshots, words
from bgp_congruency.common.tables import ROUTES
from bgp_congruency.ingest.catalogue import MRT_BYTES_PER_ENTRY
from bgp_congruency.ingest.writer import path_lists

#: The key of a route: every decoded column but the dump's time and file (origin_asn and
#: vp_bucket follow from these).
KEY = ("peer_asn", "peer_ip", "afi", "prefix", "as_path", "has_as_set", "as_path_raw")
#: Rows one bucket range of a merge may aggregate, per byte of the memory limit (about 200
#: bytes of hash-table state a row, as the compare's aggregate: pipeline/partitions.py), and
#: never fewer than MIN_CHUNK_ROWS (a range that small costs more in passes than it saves).
BYTES_PER_ROW = 200
#: Bytes a route takes in the native merger, about: its record (48), its table slots (16), a
#: word of bits (8) and its key (about 50 in the real sample; rrc01 of the scale-50 month: 135
#: bytes a route in use, 9.3M routes), and the sort's 48 when it is written. A feed holding its
#: routes in budget is merged in one range, whatever the entries' count.
ROUTE_BYTES = 200
#: Bytes a route takes in the merger's sort, when it is written (merge.rs `finish`; within
#: ROUTE_BYTES, but not within the merger's own `bytes`).
SORT_BYTES = 48
MIN_CHUNK_ROWS = 100_000


class RoutesError(Exception):
    """A merge that cannot be done; the message names the collector's folder."""


# --- merging snapshots into them -------------------------------------------------------------

def _read(path: Path) -> str:
    """One decoded file, its rows' VP bucket computed where an earlier version wrote none."""
    rel = f"read_parquet({quote(duck.glob_literal(str(path)))}, hive_partitioning = false)"
    if vp_hash.COLUMN in pq.read_schema(path).names:
        return rel
    return f"(SELECT *, {vp_hash.sql_bucket('peer_asn')} AS {vp_hash.COLUMN} FROM {rel})"  # ingested before 2026-11


def one_snapshot(path: Path) -> Snapshot | None:
    """The snapshot of a file that holds one (a dump's: every row group's snapshot_time and
    source_file statistics one value), read off its footer and first row; None for a file of
    several, or one written without those statistics."""
    pf = pq.ParquetFile(path)
    meta = pf.metadata
    if meta.num_rows == 0 or "snapshot_time" not in meta.schema.names:
        return None
    for name in ("snapshot_time", "source_file"):  # each one value in every row group, the same
        col, seen = meta.schema.names.index(name), set()
        for g in range(meta.num_row_groups):
            st = meta.row_group(g).column(col).statistics
            if st is None or not st.has_min_max:
                return None
            seen |= {st.min, st.max}
        if len(seen) != 1:
            return None
    # the first row alone (a whole row group's columns took 0.12 s of a 2.4 s ingest of the real sample)
    batch = next(pf.iter_batches(batch_size=1, row_groups=[0], columns=["snapshot_time", "source_file", "project"]), None)
    if batch is None or batch.num_rows == 0:
        return None
    first = batch.to_pylist()[0]
    t = first["snapshot_time"]
    return Snapshot(t if t.tzinfo else t.replace(tzinfo=timezone.utc), first["source_file"], first["project"])


def _chunks(counts: list[int], budget: int) -> list[tuple[int, int]]:
    """Contiguous bucket ranges whose rows (counts per bucket) fit `budget` each (a bucket
    larger than the budget is a range of its own)."""
    out, lo, rows = [], 0, 0
    for b, n in enumerate(counts):
        if rows and rows + n > budget:
            out.append((lo, b - 1))
            lo, rows = b, 0
        rows += n
    out.append((lo, len(counts) - 1))
    return out


def _group_buckets(meta) -> list[tuple[int, int, int]] | None:
    """(lowest bucket, highest bucket, rows) of each row group of a Parquet file, from its
    statistics (a group without them spans every bucket); None for a file without a bucket
    column (an earlier version's decoded dump, a hand-made one)."""
    if vp_hash.COLUMN not in meta.schema.names:
        return None
    col, out = meta.schema.names.index(vp_hash.COLUMN), []
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        st = rg.column(col).statistics
        lo, hi = (int(st.min), int(st.max)) if st is not None and st.has_min_max else (0, vp_hash.BUCKETS - 1)
        out.append((max(0, lo), min(hi, vp_hash.BUCKETS - 1), rg.num_rows))
    return out


def _bucket_rows(paths: list[str]) -> list[int]:
    """Rows per VP bucket of Parquet files, from their row groups' statistics: a group's rows
    spread evenly over the buckets it spans (a decoded dump's, in the dump's order, spans them
    all), a file without a bucket column's over every bucket."""
    counts = [0] * vp_hash.BUCKETS
    for p in paths:
        meta = pq.read_metadata(p)
        for lo, hi, n in _group_buckets(meta) or [(0, vp_hash.BUCKETS - 1, meta.num_rows)]:
            for b in range(lo, hi + 1):
                counts[b] += n // (hi - lo + 1)
    return counts


def native():
    """The native module (ingest/native) with its route merger, or RoutesError saying how to
    build it."""
    try:
        import congruency_mrt
    except ImportError:
        raise RoutesError("the route merger is not built (ingest/native: run `make setup`; it needs cargo)") from None
    if not hasattr(congruency_mrt, "Routes"):
        raise RoutesError("the native module installed predates the route merger (ingest/native: run `make setup`)")
    return congruency_mrt


class Feed:
    """A collector's route merger fed by the decode pass, batch by batch as each dump is
    written to its file, so the merge after it need not read those files back (a quarter of
    a merge's work: rrc00 of the scale-30 month, 0.6 of 2.3 s), nor split the month in bucket
    ranges while its routes fit the feed's `budget` bytes. A dump's rows get the next bit in
    the order the dumps come (`start`); `merge` moves them to their snapshots' places. Only
    what is whole counts: a dump whose decode failed is dropped there. A feed that outgrows its budget, or whose
    first dump's size says it will (`grouped`), lets its merger go: the merge reads the files
    then, in bucket ranges, and the dumps after are written a row group per bucket for it."""

    def __init__(self, dumps: int, budget: int):
        self._lock = threading.Lock()
        self._m = native().Routes(words(dumps), vp_hash.MULT, vp_hash.BUCKET_BITS, 0, vp_hash.BUCKETS - 1)
        self._budget = budget
        self._dumps = dumps
        self._next = 0
        self._whole: dict[str, int] = {}  # decoded file -> its bit, once its dump is whole

    def start(self) -> "FeedDump":
        """The next dump's share of the feed."""
        with self._lock:
            sid, self._next = self._next, self._next + 1
        return FeedDump(self, sid if sid < self._dumps else None)

    def grouped(self, size: int | None = None, project: str | None = None) -> bool:
        """Whether the next dump is best written a row group per VP bucket: once the merger
        has outgrown its budget (the merge will go in bucket ranges, each reading its own row
        groups instead of splitting the files first), or when this dump, the first, will
        (its `size` in bytes at its `project`'s bytes per entry, ingest/catalogue.py: a dump's
        entries are about as many routes, ROUTE_BYTES each); it lets the merger go then."""
        with self._lock:
            if self._m is not None and self._next == 1 and size and project in MRT_BYTES_PER_ENTRY \
                    and size / MRT_BYTES_PER_ENTRY[project] * ROUTE_BYTES > self._budget:
                self._m = None
            return self._m is None

    def _add(self, sid: int, batch: pa.RecordBatch, cursor: int) -> int:
        with self._lock:
            if self._m is None:
                return cursor
            try:
                cursor = _add(self._m, batch, sids=np.full(batch.num_rows, sid, np.int32), cursor=cursor)
            except ValueError:  # the merge reads the files, and says what is wrong there
                self._m = None
                return cursor
            if self._m.bytes > self._budget:
                self._m = None  # over its share of memory: the merge reads the files instead
            return cursor

    def take(self, decoded: list[str]) -> tuple[object, dict[str, int]] | None:
        """The merger and the bit of each of `decoded` fed whole (None if it let go); the
        feed is empty after."""
        with self._lock:
            m, self._m = self._m, None
        return (m, {p: self._whole[p] for p in decoded if p in self._whole}) if m is not None else None


class FeedDump:
    """One dump's rows into a Feed: `add` each batch, then `whole` once its file is published."""

    def __init__(self, feed: Feed, sid: int | None):
        self._feed, self._sid, self._cursor = feed, sid, (1 << 64) - 1

    def add(self, batch: pa.RecordBatch) -> None:
        if self._sid is not None:
            self._cursor = self._feed._add(self._sid, batch, self._cursor)

    def whole(self, path: Path) -> None:
        if self._sid is not None:
            with self._feed._lock:
                self._feed._whole[str(path)] = self._sid

    def grouped(self, size: int | None = None, project: str | None = None) -> bool:
        return self._feed.grouped(size, project)


def made(folder: Path, tries: int = 5) -> Path:
    """`folder`, made with its parents. The collectors of a month merge side by side, and each
    removes the month's work folder when it is left empty (merge), so another may remove the
    parent between makedirs' check and its mkdir (a CI run, 2026-12-01): made again. Once the
    folder exists, the parent is not empty and stays."""
    for _ in range(tries - 1):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            return folder
        except FileNotFoundError:
            continue
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def merge(cfg, month: str, collector: str, decoded: list[Path], share: int = 1, feed: Feed | None = None) -> Path:
    """Fold `decoded` snapshot files (ingest/writer.py's, each holding one or more snapshot
    times; a dump already in the routes is replaced) into the collector's routes in the data
    dir of `cfg` as a new generation; returns it. Under the collector's lock, in 1/`share` of
    the config's memory limit (`share` merges run at once) and its DuckDB threads; the decoded
    files are left to the caller. `feed`: what the decode pass fed of them, not read again."""
    root = Path(cfg.data_dir)
    cap = duck.memory_limit(cfg.duckdb_memory_limit)
    if cap and share > 1:
        cap = f"{parse_bytes(cap) // share // 2**20}MiB"
        cfg = cfg.with_overrides(duckdb_memory_limit=cap)
    folder = Path(layout.routes_dir(root, month, collector))
    with month_lock(root, month, part=f"routes-{collector}", wait_s=3600):
        clean_dead(folder)
        old_gen = current(root, month, collector)
        old = snapshots(old_gen)
        work = Path(layout.staging_dir(root)) / f"ingest-{month}"  # the spill and the split, removed at the end
        con = duck.connect(cfg, spill=made(work / f".spill-{collector}"))
        try:
            con.execute("SET preserve_insertion_order = false")
            single = [one_snapshot(Path(p)) for p in decoded]  # a dump's file: its snapshot, read off its footer
            got = {s for s in single if s is not None}
            for p, one in zip(decoded, single):
                if one is None:  # a file of several snapshots (hand-made months): each is read
                    got |= {Snapshot(t if t.tzinfo else t.replace(tzinfo=timezone.utc), f, pr) for t, f, pr in
                            con.execute(f"SELECT DISTINCT snapshot_time, source_file, project FROM {_read(p)}").fetchall()}
            got = sorted(got, key=lambda s: (s.time, s.source_file))
            fresh = {s.source_file for s in got}
            kept = [s for s in old if s.source_file not in fresh]
            new = sorted(kept + got, key=lambda s: (s.time, s.source_file))
            if len({(s.time, s.source_file) for s in new}) != len(new):
                raise RoutesError(f"{folder}: two snapshots with the same time and file")
            pos = {(s.time, s.source_file): i for i, s in enumerate(new)}
            mapping = {i: pos[(s.time, s.source_file)] for i, s in enumerate(old) if s.source_file not in fresh}
            nw, nw_old = words(len(new)), words(len(old))
            con.execute("CREATE TEMP TABLE snap_map (t TIMESTAMPTZ, f VARCHAR, sid INTEGER)")
            con.executemany("INSERT INTO snap_map VALUES (?, ?, ?)",
                            [(s.time, s.source_file, pos[(s.time, s.source_file)]) for s in got])
            # Every decoded entry with its snapshot's bit (`sid`): a constant for a dump's file.
            srcs = [f"SELECT *, {pos[(one.time, one.source_file)]}::INTEGER AS sid FROM {_read(p)}" if one is not None else
                    f"SELECT d.*, m.sid FROM {_read(p)} d JOIN snap_map m ON m.t = d.snapshot_time AND m.f = d.source_file"
                    for p, one in zip(decoded, single)]
            old_files = files(old_gen) if old_gen is not None else []
            memory = parse_bytes(cap) if cap else None  # this merge's share of the limit
            budget = max(MIN_CHUNK_ROWS, memory // BYTES_PER_ROW) if memory else 1 << 62
            old_counts = _bucket_rows(old_files)
            counts = [a + b for a, b in zip(_bucket_rows([str(p) for p in decoded]), old_counts)]
            chunks = _chunks(counts, budget)
            fed = feed.take([str(p) for p in decoded]) if feed is not None else None
            if fed is not None:  # the decode pass held its dumps' routes: with the others', do they fit one range?
                more = sum(old_counts) + sum(pq.read_metadata(p).num_rows for p in decoded if str(p) not in fed[1])
                held = fed[0].bytes + SORT_BYTES * fed[0].routes  # and the sort that writes them
                if memory is None or (held + more * ROUTE_BYTES) * 1.3 <= memory:
                    chunks = [(0, vp_hash.BUCKETS - 1)]
            tmp = folder / f".{GEN}{uuid.uuid4().hex[:8]}.{os.getpid()}.tmp"
            tmp.mkdir(parents=True)
            try:
                # A dump's file with a row group per bucket: each range reads its own. The
                # others (in the dump's order, or of several snapshots) are split first: each
                # range's rows, with their snapshot, in files of their own.
                groups = [_bucket_groups(str(p)) if len(chunks) > 1 and one is not None else None
                          for p, one in zip(decoded, single)]
                per_chunk = [[(str(p), pos[(one.time, one.source_file)],
                               [g for b, g in groups[i] if lo <= b <= hi] if groups[i] is not None else None)
                              for i, (p, one) in enumerate(zip(decoded, single))
                              if one is not None and (groups[i] is not None or len(chunks) == 1)] for lo, hi in chunks]
                rest = [i for i, one in enumerate(single) if one is None or (groups[i] is None and len(chunks) > 1)]
                if rest:
                    fed = None
                    forms: dict[bool, list[int]] = {}  # one split per form of as_path: a UNION needs one type
                    for i in rest:
                        forms.setdefault(pa.types.is_binary(pq.read_schema(decoded[i]).field("as_path").type), []).append(i)
                    for j, idx in enumerate(forms.values()):
                        src = "(" + " UNION ALL ".join(srcs[i] for i in idx) + ")"
                        for k, fs in enumerate(_split(con, src, chunks, work / f".chunks-{collector}" / str(j))):
                            per_chunk[k] += [(f, None, None) for f in fs]
                if len(chunks) > 1:
                    fed = None
                m = None
                if fed is not None:  # what the decode pass fed: its bits to their snapshots' places
                    m, bits = fed
                    place = {bits[p]: sid for p, sid, _ in per_chunk[0] if p in bits}
                    m.renumber(nw, [place.get(i, -1) for i in range(max(bits.values(), default=-1) + 1)])
                    per_chunk[0] = [(p, sid, g) for p, sid, g in per_chunk[0] if p not in bits]
                for k, (lo, hi) in enumerate(chunks):
                    _merge_chunk(con, per_chunk[k], old_files, mapping, nw_old, nw, lo, hi, tmp / f"part-{k}.parquet", m)
                    hooks.pause("merge")
                atomic.write_text(tmp / SNAPSHOTS, json.dumps({"month": month, "collector": collector,
                                                               "snapshots": [s.to_json() for s in new]}, indent=1))
                gen = folder / f"{GEN}{(int(old_gen.name.removeprefix(GEN)) + 1) if old_gen else 1:06d}"
                os.rename(tmp, gen)  # the generation is whole: from here readers see it
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        finally:
            con.close()
            shutil.rmtree(work / f".spill-{collector}", ignore_errors=True)
            shutil.rmtree(work / f".chunks-{collector}", ignore_errors=True)
            try:
                work.rmdir()  # nothing else waits there
            except OSError:
                pass
        prune(folder)
    return gen


def _split(con, src: str, chunks: list[tuple[int, int]], folder: Path) -> list[list[str]]:
    """The new entries of a merge in several bucket ranges, written once into files per range
    (under `folder`, which the caller removes), each row with its snapshot (`sid`): each range
    then reads its own rows, where a filter on the dumps' files (in the dump's order, no
    bucket statistics) read every file once per range (the 992M-entry month: 32 ranges, 2,190
    of its 2,758 s of ingest). Files of several snapshots (hand-made months) come this way too,
    in one range: their rows' snapshots are looked up here."""
    of_bucket = [0] * vp_hash.BUCKETS
    for k, (lo, hi) in enumerate(chunks):
        for b in range(lo, hi + 1):
            of_bucket[b] = k
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    cols = ", ".join((*KEY, "origin_asn", "vp_bucket", "sid"))
    con.execute(f"""COPY (SELECT {cols}, {of_bucket}[vp_bucket + 1] AS chunk FROM {src})
                    TO {quote(str(folder))} (FORMAT parquet, PARTITION_BY (chunk), COMPRESSION zstd)""")
    return [sorted(str(f) for f in (folder / f"chunk={k}").glob("*.parquet")) for k in range(len(chunks))]


#: Columns of an entry the route merger reads (the key, and the origin it keeps).
_ENTRY = ("peer_asn", "peer_ip", "afi", "prefix", "as_path", "has_as_set", "as_path_raw", "origin_asn")
#: Batch rows read at a time, and routes written at a time.
BATCH_ROWS = 1 << 17


def _merge_chunk(con, new: list[tuple[str, int | None, list[int] | None]], old_files: list[str],
                 mapping: dict[int, int], nw_old: int, nw: int, lo: int, hi: int, out: Path, m=None) -> None:
    """One bucket range of a merge into `out`, by the native route merger (ingest/native,
    merge.rs): the new entries (`new`: files, each with its snapshot's bit, or None where a
    `sid` column gives each row's) grouped into routes, with the existing routes of the range
    (`old_files`, their bits moved by `mapping` to the new numbering), written in bucket order
    (a compare partition reads its buckets' row groups only), a session's prefixes together
    inside (about 20% smaller than in bucket order alone). `new` names each file's row groups
    of the range (None: all); `m`: a merger holding entries already (a Feed's, renumbered),
    or None."""
    if m is None:
        m = native().Routes(nw, vp_hash.MULT, vp_hash.BUCKET_BITS, lo, hi)
    for path, sid, row_groups in new:
        if row_groups == []:
            continue
        pf, cursor = pq.ParquetFile(path), (1 << 64) - 1
        for b in pf.iter_batches(BATCH_ROWS, row_groups=row_groups, columns=[*_ENTRY, *(["sid"] if sid is None else [])]):
            sids = np.full(b.num_rows, sid, np.int32) if sid is not None else \
                b.column("sid").to_numpy(zero_copy_only=False).astype(np.int32)
            try:
                cursor = _add(m, b, sids=sids, cursor=cursor)
            except (ValueError, TypeError) as exc:
                raise RoutesError(f"{path}: {exc}") from None
    if mapping:
        m.set_mapping([mapping.get(o, -1) for o in range(nw_old * WORD)])
        for path in old_files:
            pf = pq.ParquetFile(path)
            groups = _groups_in(pf, lo, hi)
            if groups:
                for b in pf.iter_batches(BATCH_ROWS, row_groups=groups, columns=[*_ENTRY, "copy", "seen", "seen_more"]):
                    try:
                        _add(m, b, words=_words(b, nw_old, path))
                    except (ValueError, TypeError) as exc:
                        raise RoutesError(f"{path}: {exc}") from None
    m.finish()

    def batches():
        while (got := m.take(ROW_GROUP))["rows"]:
            yield _routes_batch(got, nw)

    # DuckDB writes them (about 15% smaller files than pyarrow's writer), in the merger's order
    con.register("merged_routes", pa.RecordBatchReader.from_batches(ROUTES, batches()))
    try:
        con.execute("SET preserve_insertion_order = true")
        with atomic.replacing(out) as tmp:
            con.execute(f"COPY merged_routes TO {quote(str(tmp))} "
                        f"(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP})")
    finally:
        con.unregister("merged_routes")


#: Rows of a routes file's row group (a compare reads a bucket range's groups).
ROW_GROUP = 122_880


def _bucket_groups(path: str) -> list[tuple[int, int]] | None:
    """(bucket, row group) of each row group of a decoded file; None when one holds several
    buckets or the file has no bucket column."""
    groups = _group_buckets(pq.read_metadata(path))
    if groups is None or any(lo != hi for lo, hi, _ in groups):
        return None
    return [(lo, g) for g, (lo, _, _) in enumerate(groups)]


def _groups_in(pf: pq.ParquetFile, lo: int, hi: int) -> list[int]:
    """The row groups of a routes file that may hold buckets lo..hi."""
    return [g for g, (a, b, _) in enumerate(_group_buckets(pf.metadata)) if b >= lo and a <= hi]


def _words(b: pa.RecordBatch, nw_old: int, path: str) -> np.ndarray:
    """A routes batch's `seen` and `seen_more` as an (n, nw_old) uint64 array."""
    out = np.zeros((b.num_rows, nw_old), np.uint64)
    out[:, 0] = b.column("seen").to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)
    if nw_old > 1:
        more = b.column("seen_more")
        lengths = pc.fill_null(pc.list_value_length(more), 0).to_numpy(zero_copy_only=False)
        if (lengths != nw_old - 1).any():
            raise RoutesError(f"{path}: seen_more holds other than {nw_old - 1} words in some rows")
        out[:, 1:] = pc.list_flatten(more).to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64) \
            .reshape(-1, nw_old - 1)
    return out


_NONE = np.zeros(8, np.uint8)  # a valid address for a buffer Arrow leaves out (all-empty strings)


def _addr(buf, offset: int = 0, width: int = 1) -> int:
    return buf.address + offset * width if buf is not None and buf.address else _NONE.ctypes.data


def _mask(a: pa.Array) -> np.ndarray:
    return np.ascontiguousarray(a.is_valid().to_numpy(zero_copy_only=False), np.uint8)


def _add(m, b: pa.RecordBatch, *, sids: np.ndarray | None = None, words: np.ndarray | None = None,
         cursor: int = (1 << 64) - 1) -> int:
    """Hand a batch's buffers to the merger: entries with each row's snapshot (`sids`), or
    routes with their bits (`words`); `cursor` where the same input's last batch ended
    (returned)."""
    keep = []

    def fixed(name: str, width: int) -> int:
        a = b.column(name)
        return _addr(a.buffers()[1], a.offset, width)

    def strings(name: str) -> tuple[int, int]:
        a = b.column(name)
        if a.type != pa.string():
            a = a.cast(pa.string())
            keep.append(a)
        bufs = a.buffers()
        return _addr(bufs[1], a.offset, 4), _addr(bufs[2])

    path = path_lists(b.column("as_path"))  # a decoded file's may be stored as bytes (common/tables.DECODED_STORED)
    offsets, values = path.offsets, path.values
    masks = [_mask(b.column(c)) for c in ("as_path", "as_path_raw", "origin_asn")]
    has_set = np.ascontiguousarray(b.column("has_as_set").to_numpy(zero_copy_only=False), np.uint8)
    keep += [path, offsets, values, masks, has_set, sids, words]
    ip, pfx, raw = strings("peer_ip"), strings("prefix"), strings("as_path_raw")
    ptrs = [fixed("peer_asn", 4), *ip, fixed("afi", 1), *pfx, masks[0].ctypes.data,
            _addr(offsets.buffers()[1], offsets.offset, 4), _addr(values.buffers()[1], values.offset, 4),
            has_set.ctypes.data, masks[1].ctypes.data, *raw, masks[2].ctypes.data, fixed("origin_asn", 4),
            sids.ctypes.data if sids is not None else 0,
            fixed("copy", 2) if words is not None else 0, words.ctypes.data if words is not None else 0]
    return m.add(b.num_rows, ptrs, words.shape[1] if words is not None else 0, cursor)


def _routes_batch(got: dict, nw: int) -> pa.RecordBatch:
    """The merger's columns (`take`) as a ROUTES batch."""
    n = got["rows"]

    def strings(name: str, validity=None) -> pa.Array:
        return pa.Array.from_buffers(pa.string(), n, [validity, pa.py_buffer(got[f"{name}_offsets"]),
                                                      pa.py_buffer(got[name])])

    def fixed(name: str, t, validity=None) -> pa.Array:
        return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(got[name])])

    values = pa.Array.from_buffers(pa.uint32(), len(got["as_path_values"]) // 4, [None, pa.py_buffer(got["as_path_values"])])
    words = np.frombuffer(got["words"], np.int64).reshape(n, nw)
    seen_more = pa.FixedSizeListArray.from_arrays(pa.array(words[:, 1:].ravel()), nw - 1).cast(
        ROUTES.field("seen_more").type) if nw > 1 else pa.nulls(n, ROUTES.field("seen_more").type)
    cols = {
        "peer_asn": fixed("peer_asn", pa.uint32()),
        "peer_ip": strings("peer_ip"),
        "afi": fixed("afi", pa.int8()),
        "prefix": strings("prefix"),
        "as_path": pa.Array.from_buffers(ROUTES.field("as_path").type, n,
                                         [pa.py_buffer(got["as_path_validity"]), pa.py_buffer(got["as_path_offsets"])],
                                         children=[values]),
        "as_path_repeats": pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(got["as_path_repeats"])]),
        "has_as_set": pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(got["has_as_set"])]),
        "as_path_raw": strings("as_path_raw", pa.py_buffer(got["as_path_raw_validity"])),
        "origin_asn": fixed("origin_asn", pa.uint32(), pa.py_buffer(got["origin_asn_validity"])),
        "copy": fixed("copy", pa.int16()),
        "seen": pa.array(words[:, 0]),
        "seen_more": seen_more,
        "vp_bucket": fixed("vp_bucket", pa.int8()),
    }
    return pa.RecordBatch.from_arrays([cols[f.name] for f in ROUTES], schema=ROUTES)


def prune(folder: Path) -> None:
    """Remove a collector's generations older than its current one (a compare that began
    with an older one holds the month lock: those are left for the next merge)."""
    gens = generations(folder)
    if len(gens) < 2:
        return
    month = folder.parent.name.removeprefix(layout.MONTH)
    root = folder.parents[2]
    from bgp_congruency.common.locks import LockBusy

    try:
        with month_lock(root, month):  # no compare of the month reads them meanwhile
            for g in gens[:-1]:
                shutil.rmtree(g, ignore_errors=True)
    except LockBusy:
        pass


def clean_dead(folder: Path) -> list[Path]:
    """Remove the temporary generations of merges whose process is gone."""
    out = []
    for p in folder.glob(f".{GEN}*.tmp") if folder.is_dir() else ():
        m = re.fullmatch(rf"\.{GEN}[0-9a-f]{{8}}\.(\d+)\.tmp", p.name)
        if m and not atomic.alive(int(m.group(1))):
            shutil.rmtree(p, ignore_errors=True)
            out.append(p)
    return out
