"""A month's RIB snapshots stored once: each route with the snapshots that saw it.

Between two RIB dumps of a collector about 1% of the routes change (bench/RESULTS.md,
"Churn"), so storing every dump whole stores nearly the same rows again and again, and every
step after ingest pays for the copies. A month is stored as its *routes* instead:

    routes/month=M/collector=C/gen-NNNNNN/part-K.parquet   one row per route (ROUTES)
    routes/month=M/collector=C/gen-NNNNNN/snapshots.json   the collector's snapshots

A route is a (BGP session, prefix, AS path as decoded) of one collector: every column of a
decoded RIB entry but the dump's time and file, which the snapshots table holds. Its `seen`
bitmap has bit i set when the collector's snapshot i (snapshots.json, in time order) held it;
63 bits a word (a BIGINT neither engine overflows), `seen_more` the words past the first.
`copy` tells apart k identical entries of one snapshot (an ADD-PATH RIB may hold the same
path twice): row `copy = j` has the bits of the snapshots with more than j of them, so every
count of entries is exact. Expanding every bit of every row gives back the decoded entries,
row for row (`expand_sql`, the `rib_entries` view).

Ingest decodes each dump into a snapshot file as before (ingest/writer.py, under
_staging/ingest-M/), in parallel, then `merge` folds a collector's new snapshot files and its
current routes into a new generation, a bucket range of VPs at a time (bounded memory),
written under a temporary name and renamed into place: a kill during a merge leaves the
month as it was, and the next run merges again. A snapshot ingested later (a backfilled
file) merges the same way without decoding the others; a dump ingested again replaces its
snapshot. Room for intervals: a later `first_seen`/`last_seen` pair (a RIB plus its updates)
fits beside `seen` as two columns a merge fills and `expand_sql` reads.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.parquet as pq

from bgp_congruency.common import atomic, duck, layout, vp_hash
from bgp_congruency.common.config import parse_bytes
from bgp_congruency.common.duck import quote
from bgp_congruency.common.locks import month_lock
from bgp_congruency.common.tables import ROUTES

#: Snapshots per word of `seen`/`seen_more`: 63, so a bit shifted into place never reaches
#: the sign bit (DuckDB refuses `1::BIGINT << 63`; Spark has no unsigned type).
WORD = 63
GEN = "gen-"
SNAPSHOTS = "snapshots.json"
#: The key of a route: every decoded column but the dump's time and file (origin_asn and
#: vp_bucket follow from these).
KEY = ("peer_asn", "peer_ip", "afi", "prefix", "as_path", "has_as_set", "as_path_raw")
#: Rows one bucket range of a merge may aggregate, per byte of the memory limit (about 200
#: bytes of hash-table state a row, as the compare's aggregate: pipeline/partitions.py).
BYTES_PER_ROW = 200


@dataclass(frozen=True)
class Snapshot:
    """One RIB dump of a collector: its position in the collector's `seen` bits is its index
    in the generation's snapshots.json (time order)."""

    time: datetime
    source_file: str
    project: str

    def to_json(self) -> dict:
        return {"snapshot_time": self.time.strftime("%Y-%m-%dT%H:%M:%SZ"), "source_file": self.source_file,
                "project": self.project}

    @staticmethod
    def of_json(d: dict) -> Snapshot:
        t = datetime.strptime(d["snapshot_time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
        return Snapshot(t, d["source_file"], d["project"])


class RoutesError(Exception):
    """A merge that cannot be done; the message names the collector's folder."""


# --- where they are ----------------------------------------------------------------------------

def generations(folder: Path) -> list[Path]:
    """A collector's whole generations, oldest first (a temporary one has another name)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if re.fullmatch(GEN + r"\d{6}", p.name) and p.is_dir())


def current(root, month: str, collector: str) -> Path | None:
    """The collector's current generation (its newest), or None."""
    gens = generations(Path(layout.routes_dir(root, month, collector)))
    return gens[-1] if gens else None


def month_generations(root, month: str) -> dict[str, Path]:
    """collector -> its current generation, for every collector of the month with routes."""
    base = Path(layout.routes_dir(root, month))
    out = {}
    for d in sorted(base.glob("collector=*")) if base.is_dir() else []:
        gens = generations(d)
        if gens:
            out[d.name.removeprefix("collector=")] = gens[-1]
    return out


def snapshots(gen: Path | None) -> list[Snapshot]:
    """A generation's snapshots, in time order (index = bit)."""
    if gen is None:
        return []
    return _snapshots(json.loads((gen / SNAPSHOTS).read_text()))


def _snapshots(doc: dict) -> list[Snapshot]:
    return [Snapshot.of_json(d) for d in doc["snapshots"]]


def files(gen: Path) -> list[str]:
    """A generation's route files, sorted."""
    return sorted(str(p) for p in gen.glob("part-*.parquet"))


def month_files(root, month: str) -> dict[str, list[str]]:
    """collector -> the files of its current generation."""
    return {c: files(g) for c, g in month_generations(root, month).items()}


class _Local:
    """The local file system, as month_input reads a folder (pipeline/publish.Store's two calls)."""

    @staticmethod
    def children(p: str) -> list[str]:
        return sorted(os.listdir(p)) if os.path.isdir(p) else []

    @staticmethod
    def read_text(p: str) -> str:
        return Path(p).read_text()


def month_input(month_dir: str, fs=None) -> dict[str, tuple[list[str], list[Snapshot]]]:
    """collector -> (the route files of its current generation, its snapshots) under a month's
    routes folder: on local disk, or through `fs` (anything with `children(path)` and
    `read_text(path)`: the compare's pipeline/publish.Store on cluster storage)."""
    fs = fs or _Local()
    out = {}
    for name in fs.children(month_dir):
        if not name.startswith("collector="):
            continue
        cdir = f"{str(month_dir).rstrip('/')}/{name}"
        gens = [n for n in fs.children(cdir) if re.fullmatch(GEN + r"\d{6}", n)]
        if not gens:
            continue
        gdir = f"{cdir}/{max(gens)}"
        parts = sorted(f"{gdir}/{n}" for n in fs.children(gdir) if re.fullmatch(r"part-\d+\.parquet", n))
        out[name.removeprefix("collector=")] = (parts, _snapshots(json.loads(fs.read_text(f"{gdir}/{SNAPSHOTS}"))))
    return out


def words(n: int) -> int:
    """Words of `seen` and `seen_more` for n snapshots (at least one)."""
    return max(1, -(-n // WORD))


# --- reading them back as entries ----------------------------------------------------------

def word_sql(i: int, row: str = "") -> str:
    """DuckDB SQL: the word of `seen`/`seen_more` holding snapshot bit i."""
    w = i // WORD
    return f"{row}seen" if w == 0 else f"coalesce({row}seen_more[{w}], 0)"


#: DuckDB SQL: the entries a route row stands for (its `seen` bits).
ENTRIES_SQL = "(bit_count(seen) + coalesce(list_sum(list_transform(seen_more, lambda w: bit_count(w))), 0))::BIGINT"


def relation_sql(month_routes: dict[str, list[str]]) -> str | None:
    """DuckDB SQL of a month's routes (collector -> route files), a row per route: `collector`,
    the route's columns and `n`, the entries it stands for; None without routes."""
    parts = [f"SELECT {quote(c)} AS collector, *, {ENTRIES_SQL} AS n FROM read_parquet([{', '.join(quote(duck.glob_literal(f)) for f in fs)}], hive_partitioning = false)"
             for c, fs in sorted(month_routes.items()) if fs]
    return "(" + " UNION ALL ".join(parts) + ")" if parts else None


def expand_sql(month_routes: dict[str, list[str]], month: str | None = None) -> str:
    """DuckDB SQL of a month's entries from its routes (collector -> route files, each
    generation's snapshots read here): the columns of rib_entries (common/tables.RIB_ENTRIES,
    and vp_bucket), one row per (route, snapshot bit): the decoded entries, row for row."""
    parts = []
    for collector, fs in sorted(month_routes.items()):
        if not fs:
            continue
        snaps = snapshots(Path(fs[0]).parent)
        values = ", ".join(f"({i}, {quote(s.time.strftime('%Y-%m-%d %H:%M:%S+00'))}::TIMESTAMPTZ, "
                           f"{quote(s.source_file)}, {quote(s.project)})" for i, s in enumerate(snaps))
        lit = "[" + ", ".join(quote(duck.glob_literal(f)) for f in fs) + "]"
        parts.append(f"""SELECT {quote(collector)} AS collector, s.project, s.snapshot_time, r.peer_asn, r.peer_ip, r.afi,
       r.prefix, r.as_path, r.has_as_set, r.as_path_raw, r.origin_asn, s.source_file, r.vp_bucket
FROM read_parquet({lit}) r JOIN (VALUES {values}) s(snapshot, snapshot_time, source_file, project)
  ON ((CASE WHEN s.snapshot < {WORD} THEN r.seen ELSE coalesce(r.seen_more[s.snapshot // {WORD}], 0) END)
      >> (s.snapshot % {WORD})::INTEGER) & 1 = 1""")
    return " UNION ALL ".join(parts) if parts else None


# --- merging snapshots into them -------------------------------------------------------------

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
    """Rows per VP bucket of Parquet files written in bucket order (row group statistics;
    a row group spanning buckets counts at its first)."""
    counts = [0] * vp_hash.BUCKETS
    for p in paths:
        meta = pq.read_metadata(p)
        col = meta.schema.names.index(vp_hash.COLUMN) if vp_hash.COLUMN in meta.schema.names else None
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            st = rg.column(col).statistics if col is not None else None
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
        con = duck.connect(cfg, spill=Path(layout.staging_dir(root)) / f"ingest-{month}" / f".spill-{collector}")
        try:
            con.execute("SET preserve_insertion_order = false")
            lit = "[" + ", ".join(quote(duck.glob_literal(str(p))) for p in decoded) + "]"
            src = f"read_parquet({lit}, hive_partitioning = false)"
            lacking = [vp_hash.COLUMN not in pq.read_schema(p).names for p in decoded]  # ingested before 2026-11
            if all(lacking):
                src = f"(SELECT *, {vp_hash.sql_bucket('peer_asn')} AS {vp_hash.COLUMN} FROM {src})"
            elif any(lacking):
                src = (f"(SELECT * REPLACE (coalesce({vp_hash.COLUMN}, {vp_hash.sql_bucket('peer_asn')}) AS "
                       f"{vp_hash.COLUMN}) FROM read_parquet({lit}, hive_partitioning = false, union_by_name = true))")
            got = [Snapshot(t if t.tzinfo else t.replace(tzinfo=timezone.utc), f, pr) for t, f, pr in con.execute(
                f"SELECT DISTINCT snapshot_time, source_file, project FROM {src}").fetchall()]
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
            old_files = files(old_gen) if old_gen is not None else []
            cap = duck.memory_limit(cfg.duckdb_memory_limit)
            budget = max(100_000, parse_bytes(cap) // BYTES_PER_ROW) if cap else 1 << 62
            counts = [a + b for a, b in zip(_bucket_rows([str(p) for p in decoded]), _bucket_rows(old_files))]
            tmp = folder / f".{GEN}{uuid.uuid4().hex[:8]}.{os.getpid()}.tmp"
            tmp.mkdir(parents=True)
            try:
                for k, (lo, hi) in enumerate(_chunks(counts, budget)):
                    _merge_chunk(con, src, old_files, mapping, nw_old, nw, lo, hi, tmp / f"part-{k}.parquet")
                atomic.write_text(tmp / SNAPSHOTS, json.dumps({"month": month, "collector": collector,
                                                               "snapshots": [s.to_json() for s in new]}, indent=1))
                gen = folder / f"{GEN}{(int(old_gen.name.removeprefix(GEN)) + 1) if old_gen else 1:06d}"
                os.rename(tmp, gen)  # the generation is whole: from here readers see it
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        finally:
            con.close()
            work = Path(layout.staging_dir(root)) / f"ingest-{month}"
            shutil.rmtree(work / f".spill-{collector}", ignore_errors=True)
            try:
                work.rmdir()  # nothing else waits there
            except OSError:
                pass
        prune(folder)
    return gen


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
        FROM (SELECT d.*, m.sid FROM {src} d JOIN snap_map m ON m.t = d.snapshot_time AND m.f = d.source_file
              WHERE d.{where})
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
                           any_value(d.vp_bucket) AS vp_bucket, m.sid, count(*) AS c
                    FROM {src} d JOIN snap_map m ON m.t = d.snapshot_time AND m.f = d.source_file
                    SEMI JOIN (SELECT * FROM agg WHERE n > {pop}) a ON {on}
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
        con.execute(f"""COPY (SELECT {cols} FROM (SELECT *, w0 AS seen, {more} AS seen_more FROM ({body}) WHERE {nonzero})
                              ORDER BY vp_bucket)
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
