"""A month's RIB snapshots stored once: each route with the snapshots that saw it. The layout
and how every reader finds and reads it; ingest/routes.py writes it (`merge`).

Between two RIB dumps of a collector about 1% of the routes change (bench/RESULTS.md,
"Churn"), so storing every dump whole stores nearly the same rows again and again, and every
step after ingest pays for the copies. A month is stored as its *routes* instead:

    routes/month=M/collector=C/gen-NNNNNN/part-K.parquet   one row per route (ROUTES)
    routes/month=M/collector=C/gen-NNNNNN/snapshots.json   the collector's snapshots

A route is a (BGP session, prefix, AS path as decoded) of one collector: every column of a
decoded RIB entry but the dump's time and file, which the snapshots table holds (origin_asn
only where the path cannot give it back: `origin_sql`). Its `seen`
bitmap has bit i set when the collector's snapshot i (snapshots.json, in time order) held it;
63 bits a word (a BIGINT neither engine overflows), `seen_more` the words past the first.
`copy` tells apart k identical entries of one snapshot (an ADD-PATH RIB may hold the same
path twice): row `copy = j` has the bits of the snapshots with more than j of them, so every
count of entries is exact. Expanding every bit of every row gives back the decoded entries,
row for row (`expand_sql`, the `rib_entries` view).

Ingest decodes each dump into a snapshot file as before (ingest/writer.py, under
_staging/ingest-M/), in parallel, then `merge` folds a collector's new snapshot files and its
current routes into a new generation, a bucket range of VPs at a time (bounded memory;
with several ranges each reads its own row groups of the dumps' files, which ingest then
writes a row group per bucket, and the entries of other files are first split into a file
per range, in one pass),
written under a temporary name and renamed into place: a kill during a merge leaves the
month as it was, and the next run merges again. The grouping is the native route merger's
(ingest/native/src/merge.rs: a hash table over the whole key, where the SQL aggregate over the
same key cost twice as much), fed by the decode pass as each dump is written, so a run reads
back only the files an earlier, killed run decoded; collectors merge side by side. A snapshot ingested later (a backfilled
file) merges the same way without decoding the others; a dump ingested again replaces its
snapshot. Room for intervals: a later `first_seen`/`last_seen` pair (a RIB plus its updates)
fits beside `seen` as two columns a merge fills and `expand_sql` reads.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from bgp_congruency.common import duck, layout, s3
from bgp_congruency.common.duck import quote

#: Snapshots per word of `seen`/`seen_more`: 63, so a bit shifted into place never reaches
#: the sign bit (DuckDB refuses `1::BIGINT << 63`; Spark has no unsigned type).
WORD = 63
GEN = "gen-"
SNAPSHOTS = "snapshots.json"


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


def current_snapshots(root, month: str, collector: str) -> list[Snapshot]:
    """The snapshots of the collector's current generation, on local disk or S3."""
    if s3.is_s3(root):
        return month_input(layout.routes_dir(root, month), s3.Bucket(root)).get(collector, ([], []))[1]
    return snapshots(current(root, month, collector))


def _snapshots(doc: dict) -> list[Snapshot]:
    return [Snapshot.of_json(d) for d in doc["snapshots"]]


def files(gen: Path) -> list[str]:
    """A generation's route files, sorted."""
    return sorted(str(p) for p in gen.glob("part-*.parquet"))


def month_files(root, month: str) -> dict[str, list[str]]:
    """collector -> the files of its current generation (on local disk or S3)."""
    got = month_input(layout.routes_dir(root, month), s3.Bucket(root) if s3.is_s3(root) else None)
    return {c: fs for c, (fs, _s) in got.items()}


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
    `read_text(path)`: the compare's pipeline/publish.Store on cluster storage, s3.Bucket)."""
    fs = fs or _Local()
    out = {}
    for name in fs.children(month_dir):
        if not name.startswith("collector="):
            continue
        cdir = f"{str(month_dir).rstrip('/')}/{name}"
        gens = sorted((n for n in fs.children(cdir) if re.fullmatch(GEN + r"\d{6}", n)), reverse=True)
        # The newest whole one: on S3 a generation being uploaded has no snapshots.json yet
        # (ingest/onto_s3.py); a local one is renamed into place whole.
        found = next(((g, kids) for g in gens if SNAPSHOTS in (kids := fs.children(f"{cdir}/{g}"))), None)
        if found is None:
            continue
        gdir = f"{cdir}/{found[0]}"
        parts = sorted(f"{gdir}/{n}" for n in found[1] if re.fullmatch(r"part-\d+\.parquet", n))
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


def origin_sql(row: str = "") -> str:
    """DuckDB SQL: a route's origin_asn. A generation stores it only for a path with a set
    (as_path null): a plain path's origin is its last ASN (null when empty); stored on every
    row it was 13% of a generation's bytes. Older generations hold it on every row; both read alike."""
    return f"coalesce({row}origin_asn, {row}as_path[-1])"


#: DuckDB SQL: the entries a route row stands for (its `seen` bits).
ENTRIES_SQL = "(bit_count(seen) + coalesce(list_sum(list_transform(seen_more, lambda w: bit_count(w))), 0))::BIGINT"


def relation_sql(month_routes: dict[str, list[str]]) -> str | None:
    """DuckDB SQL of a month's routes (collector -> route files), a row per route: `collector`,
    the route's columns and `n`, the entries it stands for; None without routes. By name: a
    collector whose routes an earlier version wrote lacks the later columns (as_path_repeats)."""
    parts = [f"SELECT {quote(c)} AS collector, * REPLACE ({origin_sql()} AS origin_asn), {ENTRIES_SQL} AS n FROM read_parquet([{', '.join(quote(duck.glob_literal(f)) for f in fs)}], hive_partitioning = false)"
             for c, fs in sorted(month_routes.items()) if fs]
    return "(" + " UNION ALL BY NAME ".join(parts) + ")" if parts else None


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
       r.prefix, r.as_path, r.has_as_set, r.as_path_raw, {origin_sql("r.")} AS origin_asn, s.source_file, r.vp_bucket
FROM read_parquet({lit}) r JOIN (VALUES {values}) s(snapshot, snapshot_time, source_file, project)
  ON ((CASE WHEN s.snapshot < {WORD} THEN r.seen ELSE coalesce(r.seen_more[s.snapshot // {WORD}], 0) END)
      >> (s.snapshot % {WORD})::INTEGER) & 1 = 1""")
    return " UNION ALL ".join(parts) if parts else None


