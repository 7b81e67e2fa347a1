"""Writing a month's routes: `merge` folds decoded dumps into a collector's routes as a new
generation. common/routes.py owns the layout, and says how a merge goes and why.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from datetime import timezone
from pathlib import Path

import pyarrow.parquet as pq

from bgp_congruency.common import atomic, duck, hooks, layout, vp_hash
from bgp_congruency.common.config import parse_bytes
from bgp_congruency.common.duck import quote
from bgp_congruency.common.locks import month_lock
from bgp_congruency.common.routes import GEN, SNAPSHOTS, WORD, Snapshot, current, files, generations, snapshots, words
from bgp_congruency.common.tables import ROUTES

#: The key of a route: every decoded column but the dump's time and file (origin_asn and
#: vp_bucket follow from these).
KEY = ("peer_asn", "peer_ip", "afi", "prefix", "as_path", "has_as_set", "as_path_raw")
#: Rows one bucket range of a merge may aggregate, per byte of the memory limit (about 200
#: bytes of hash-table state a row, as the compare's aggregate: pipeline/partitions.py), and
#: never fewer than MIN_CHUNK_ROWS (a range that small costs more in passes than it saves).
BYTES_PER_ROW = 200
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


def _one_snapshot(path: Path) -> Snapshot | None:
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
    first = pf.read_row_group(0, columns=["snapshot_time", "source_file", "project"]).slice(0, 1).to_pylist()[0]
    t = first["snapshot_time"]
    return Snapshot(t if t.tzinfo else t.replace(tzinfo=timezone.utc), first["source_file"], first["project"])


def _bits_sql(sid: str, nw: int) -> list[str]:
    """DuckDB SQL aggregates: for each word k, the OR of the rows' bits of snapshot `sid`."""
    return [f"coalesce(bit_or(CASE WHEN {sid} >= {k * WORD} AND {sid} < {(k + 1) * WORD} THEN "
            f"1::BIGINT << ({sid} - {k * WORD})::INTEGER END), 0) AS w{k}" for k in range(nw)]


def _remap_sql(mapping: dict[int, int], nw_old: int, nw: int) -> list[str]:
    """DuckDB SQL: the new words w0.. of an existing row from its old words ow0.., each kept
    old bit moved to its new position (snapshots dropped or renumbered)."""
    ident = all(o == n for o, n in mapping.items())
    out = []
    for k in range(nw):
        if ident:  # only the bits of kept snapshots, where they were
            keep = sum(1 << (o % WORD) for o in mapping if o // WORD == k)
            out.append(f"(ow{k} & {keep})" if k < nw_old else "0")
            continue
        terms = [f"(((ow{o // WORD} >> {o % WORD}) & 1) << {n % WORD})" for o, n in sorted(mapping.items())
                 if n // WORD == k]
        out.append(" | ".join(terms) if terms else "0")
    return [f"({e})::BIGINT AS w{k}" for k, e in enumerate(out)]


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


def _bucket_rows(paths: list[str]) -> list[int]:
    """Rows per VP bucket of Parquet files: from the row groups' statistics of routes (in
    bucket order; a row group spanning buckets counts at its first), evenly for a decoded
    dump's file (in the dump's order: no bucket column)."""
    counts = [0] * vp_hash.BUCKETS
    for p in paths:
        meta = pq.read_metadata(p)
        if vp_hash.COLUMN not in meta.schema.names:
            for b in range(vp_hash.BUCKETS):
                counts[b] += meta.num_rows // vp_hash.BUCKETS
            continue
        col = meta.schema.names.index(vp_hash.COLUMN)
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            st = rg.column(col).statistics
            b = int(st.min) if st is not None and st.has_min_max else 0
            counts[max(0, min(b, vp_hash.BUCKETS - 1))] += rg.num_rows
    return counts


def merge(cfg, month: str, collector: str, decoded: list[Path]) -> Path:
    """Fold `decoded` snapshot files (ingest/writer.py's, each holding one or more snapshot
    times; a dump already in the routes is replaced) into the collector's routes in the data
    dir of `cfg` as a new generation; returns it. Under the collector's lock, with DuckDB under
    the config's memory limit and threads; the decoded files are left to the caller."""
    root = Path(cfg.data_dir)
    folder = Path(layout.routes_dir(root, month, collector))
    with month_lock(root, month, part=f"routes-{collector}", wait_s=3600):
        clean_dead(folder)
        old_gen = current(root, month, collector)
        old = snapshots(old_gen)
        work = Path(layout.staging_dir(root)) / f"ingest-{month}"  # the spill and the split, removed at the end
        con = duck.connect(cfg, spill=work / f".spill-{collector}")
        try:
            con.execute("SET preserve_insertion_order = false")
            single = [_one_snapshot(Path(p)) for p in decoded]  # a dump's file: its snapshot, read off its footer
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
            src = "(" + " UNION ALL ".join(
                f"SELECT *, {pos[(one.time, one.source_file)]}::INTEGER AS sid FROM {_read(p)}" if one is not None else
                f"SELECT d.*, m.sid FROM {_read(p)} d JOIN snap_map m ON m.t = d.snapshot_time AND m.f = d.source_file"
                for p, one in zip(decoded, single)) + ")"
            old_files = files(old_gen) if old_gen is not None else []
            cap = duck.memory_limit(cfg.duckdb_memory_limit)
            budget = max(MIN_CHUNK_ROWS, parse_bytes(cap) // BYTES_PER_ROW) if cap else 1 << 62
            counts = [a + b for a, b in zip(_bucket_rows([str(p) for p in decoded]), _bucket_rows(old_files))]
            chunks = _chunks(counts, budget)
            tmp = folder / f".{GEN}{uuid.uuid4().hex[:8]}.{os.getpid()}.tmp"
            tmp.mkdir(parents=True)
            try:
                per_chunk = _split(con, src, chunks, work / f".chunks-{collector}") if len(chunks) > 1 else [src]
                for k, (lo, hi) in enumerate(chunks):
                    _merge_chunk(con, per_chunk[k], old_files, mapping, nw_old, nw, lo, hi, tmp / f"part-{k}.parquet")
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


def _split(con, src: str, chunks: list[tuple[int, int]], folder: Path) -> list[str]:
    """The new entries of a merge in several bucket ranges, written once into a file per range
    (under `folder`, which the caller removes): each range then reads its own rows, where a
    filter on the dumps' files (in the dump's order, no bucket statistics) read every file once
    per range (the 992M-entry month: 32 ranges, 2,190 of its 2,758 s of ingest)."""
    of_bucket = [0] * vp_hash.BUCKETS
    for k, (lo, hi) in enumerate(chunks):
        for b in range(lo, hi + 1):
            of_bucket[b] = k
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    cols = ", ".join((*KEY, "origin_asn", "vp_bucket", "sid"))
    con.execute(f"""COPY (SELECT {cols}, {of_bucket}[vp_bucket + 1] AS chunk FROM {src})
                    TO {quote(str(folder))} (FORMAT parquet, PARTITION_BY (chunk), COMPRESSION zstd)""")
    out = []
    for k in range(len(chunks)):
        part = folder / f"chunk={k}"
        got = sorted(part.glob("*.parquet")) if part.is_dir() else []
        lit = "[" + ", ".join(quote(duck.glob_literal(str(f))) for f in got) + "]"
        out.append(f"read_parquet({lit}, hive_partitioning = false)" if got else
                   f"(SELECT {cols} FROM {src} WHERE false)")
    return out


def _merge_chunk(con, src: str, old_files: list[str], mapping: dict[int, int], nw_old: int, nw: int,
                 lo: int, hi: int, out: Path) -> None:
    """One bucket range of a merge into `out`: the new entries grouped into routes (exact
    copies apart), OR'ed into the existing routes, remapped to the new snapshot numbering."""
    key = ", ".join(KEY)
    where = f"vp_bucket BETWEEN {lo} AND {hi}"
    bits = ", ".join(_bits_sql("sid", nw))
    pop = " + ".join(f"bit_count(w{k})" for k in range(nw))
    con.execute(f"""CREATE OR REPLACE TEMP TABLE agg AS
        SELECT {key}, any_value(origin_asn) AS origin_asn, any_value(vp_bucket) AS vp_bucket, count(*) AS n, {bits}
        FROM {src} WHERE {where}
        GROUP BY {key}""")
    wcols = ", ".join(f"w{k}" for k in range(nw))
    parts = [f"SELECT {key}, origin_asn, vp_bucket, 0::SMALLINT AS copy, {wcols} FROM agg WHERE n = {pop}"]
    if con.execute(f"SELECT count(*) FROM agg WHERE n > {pop}").fetchone()[0]:
        # identical entries in one snapshot (rare): the j-th copy gets the snapshots with more than j
        on = " AND ".join(f"d.{c} IS NOT DISTINCT FROM a.{c}" for c in KEY)
        cbits = ", ".join(_bits_sql("sid", nw))
        parts.append(f"""SELECT {key}, any_value(origin_asn), any_value(vp_bucket), j::SMALLINT AS copy, {cbits}
            FROM (SELECT c.*, unnest(range(c.c)) AS j FROM (
                    SELECT d.{key.replace(', ', ', d.')}, any_value(d.origin_asn) AS origin_asn,
                           any_value(d.vp_bucket) AS vp_bucket, d.sid, count(*) AS c
                    FROM {src} d SEMI JOIN (SELECT * FROM agg WHERE n > {pop}) a ON {on}
                    WHERE d.{where} GROUP BY ALL) c)
            GROUP BY {key}, j""")
    if old_files and mapping:
        lit = "[" + ", ".join(quote(duck.glob_literal(f)) for f in old_files) + "]"
        ow = ", ".join(["seen AS ow0"] + [f"coalesce(seen_more[{k}], 0) AS ow{k}" for k in range(1, nw_old)])
        remap = ", ".join(_remap_sql(mapping, nw_old, nw))
        parts.append(f"""SELECT {key}, origin_asn, vp_bucket, copy, {remap}
            FROM (SELECT *, {ow} FROM read_parquet({lit}) WHERE {where})""")
    body = " UNION ALL ".join(parts)
    if len(parts) > 1:
        ors = ", ".join(f"bit_or(w{k}) AS w{k}" for k in range(nw))
        body = f"""SELECT {key}, any_value(origin_asn) AS origin_asn, any_value(vp_bucket) AS vp_bucket, copy, {ors}
                   FROM ({body}) GROUP BY {key}, copy"""
    more = f"[{', '.join(f'w{k}' for k in range(1, nw))}]" if nw > 1 else "NULL::BIGINT[]"
    cols = ", ".join(f"CAST({f.name} AS {_duck(f.type)}) AS {f.name}" for f in ROUTES)
    nonzero = " OR ".join(f"w{k} != 0" for k in range(nw))
    with atomic.replacing(out) as tmp:
        # in bucket order (a compare partition reads its buckets' row groups only), a session's
        # prefixes together inside (about 20% smaller than in bucket order alone)
        con.execute(f"""COPY (SELECT {cols} FROM (SELECT *, w0 AS seen, {more} AS seen_more FROM ({body}) WHERE {nonzero})
                              ORDER BY vp_bucket, peer_asn, afi, peer_ip, prefix)
                        TO {quote(str(tmp))} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)""")
    con.execute("DROP TABLE agg")


def _duck(t) -> str:
    from bgp_congruency.common.tables import sql_type

    return sql_type(t, "duckdb")


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
