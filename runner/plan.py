"""`congruency plan`: what a run of months would fetch and what it costs, before it starts.

Offline: the months' slots come from the catalogue's lifetimes (no remote archive is
listed), what is done from the data dir (manifest rows `ok`, files in the cache), as the run
decides it: a month whose ingest stands as recorded reads nothing again, and a slot counts as
published when it was merged from the same file (the local archive's) or one under the same
archive root (a changed root reads every dump again: ingest/run.run). Where the
archive root is a local folder (archive_root, archive_roots: read in place, as `make demo`
does), its month folders are listed like the run lists them: a snapshot it lacks is counted
missing, not planned, and its files' bytes size the collector (at the bytes per entry the
data dir learned for it, else MRT_BYTES_PER_ENTRY). Otherwise sizes come from the data dir's
own manifests where a collector was ingested before (median bytes and entries of its
snapshots), else from the assumptions below, which the output names.

The month is stored as routes (common/routes.py): the compare reads each collector's routes
once, and its VP partitions follow them. A collector's routes in a month of k snapshots are
its entries per snapshot times 1 + the new routes of each later snapshot (NEW_ROUTES):
- 0.84% of a snapshot's entries a day apart, measured on a generated month with churn fitted
  to the real update files (28,654,760 entries in 5 daily snapshots of 4 collectors,
  5,922,710 routes: 1.034 routes per entry of one snapshot; bench/RESULTS.md "A month stored
  as routes", `bench/routes.py --ingest-only`, 2026-11-28);
- 0.32% two hours apart, from the scale-10 month of every 2-hourly RIB of 5 days, which has
  15% more routes than its daily one (an estimate from that ratio); a straight line between.
The time rates are those of the month stored as routes, on a 2-core machine at
duckdb_memory_limit = 4GB (`bench/endtoend.py --scale 250 --memory-limit 4GB` and `--scale
1000`, bench/RESULTS.md "A real month's size end to end"; generated months with churn, each
run alone), the slower of the two scales for each step:
- ingest, the decode and the merge into routes, per entry read: 248,138,550 entries (scale
  250: 20 files, 5 daily snapshots) in 114.0 s, 2.18M entries/s (2026-11-30 23:35; scale
  1000, 992,242,171 entries in 80 files, 23:45: 395.3 s, 2.51M/s; the runs of 20:05-20:33,
  the commit before the edit distance's shortcut, took 134.5 and 451.1 s: this machine's
  run-to-run spread is 10-15%);
- compare, with the relationships, prefixes and hints tables it builds, per route: its cost
  follows the month's routes, not its snapshots (the two months hold the same 27.5M paths
  and 51,290,917 and 51,396,863 routes, and took 113.9 s and 124.3 s; 137.5 and 134.2 s in
  the runs before), 413k routes/s, the scale-1000 month's. A
  month is compared whole when any of its snapshots is new, and so is every later month of
  the range then, whose compare reads it (`make`);
- the hints export (config tunnels_export, on by default: DATA_DIR/exports/month=M/tunnels.jsonl),
  per route: the same two months wrote 10,605,706,234 and 10,611,910,898 bytes of JSON Lines
  (6,183,575 hints each) in 35.7 s and 31.4 s (38.2 and 35.9 s the runs before): 1.44M
  routes/s and 206.8 bytes per route, the scale-250 month's, the slower and larger. An upper bound: a hint is a (VP, destination)
  pair with a path in each family, and in those generated months half the paths are in a
  pair; where few ASes have IPv6 (2009-2014) far fewer are. So the export's bytes are shown
  and warned about (`warnings`), not refused on, and counted for a month with something new
  to ingest or no tunnels.jsonl yet. Once the data dir has exported a whole month of its own
  (not a cut sample), its bytes per route replace these, and the time follows the bytes
  (`_learned_sizes`);
- reports, per month: 4.4 s and 4.5 s, the slower taken (their tables are per VP and month,
  small beside the routes);
- MRT bytes per entry, for the download: real 2026-07-30 sample (make demo), RouteViews .bz2
  3.64; RIS .gz 10.2 (rrc00 bview.20020722.2337, TABLE_DUMP v1: the only RIS RIB in the
  samples).
The disk a month adds is the routes its new snapshots add and the compare's published tables,
each in bytes per route of the month: the data dir's own whole months where it has some
(`_learned_sizes`), else the generated 4GB months' (ROUTES_BYTES_PER_ROUTE,
PUBLISHED_BYTES_PER_ROUTE: upper bounds). On top, while the month runs, its staging holds
ingest's decoded dumps until their merge, then the compare's staged tables, spill and work
database (INGEST_STAGING_BYTES_PER_ENTRY, COMPARE_STAGING_BYTES_PER_ROUTE: the per-step
staging peaks bench/endtoend.py samples; the compare's, per route, as the data dir's own
whole months peaked once it has some: each run records its compare's peak,
pipeline/job._StagingPeak); the checks add the largest month's staging to what the months add. `run --only compare` checks the months it would compare
(`for_step`, from the routes they hold); `--only hints` warns about its export as a whole
run does.
The sensitivity step (config sensitivity, off by default): every variant of the method (23,
15 distinct parameter sets) over the month's entries pinned once. On the generated scale-50
month with churn (bench/out/archive-50-d5: days 1-5, 131,262,137 entries, 27,130,332 routes),
at duckdb_memory_limit 4GB on 2 cores, 2026-12-01, one after the other: `congruency compare`'s
job (stagers and publish included) 128.3 s, its staging peak 1,837 MB; the sensitivity run
563.5 s (4.39x the compare), peak RSS 4.35 GiB, its staging peak 7,687 MB (283 bytes a route:
the pinned entries and each variant's work spill there). At the default limit ('auto', 12 GB
there): 89.3 s and 405.6 s (4.54x), 3,236 MB staged. The plan counts it at that ratio of the
compare's time, and at that staging per route, for a month whose compare runs or whose
recorded variants no longer stand.
The download rate is Config.plan_download_mbit_s (an assumption, default 100 Mbit/s).
"""
from __future__ import annotations

import json
import shutil
import statistics
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from itertools import islice
from pathlib import Path

import pyarrow.parquet as pq

from bgp_congruency.common import layout
from bgp_congruency.common import routes as R
from bgp_congruency.common.config import Config, parse_bytes
from bgp_congruency.common.errors import CongruencyError
from bgp_congruency.common.tables import MONTH_TABLES
from bgp_congruency.ingest import catalogue, discovery, download, manifest
from bgp_congruency.ingest.catalogue import MRT_BYTES_PER_ENTRY
from bgp_congruency.ingest.run import archive_root
from bgp_congruency.ingest.writer import address_span
from bgp_congruency.ingest.writer import partial as is_partial
from bgp_congruency.lake import published
from bgp_congruency.lake.attach import LakeError, pinned
from bgp_congruency.pipeline import partitions as P
from bgp_congruency.runner.state import would_run

# Rates of `congruency run` at 4GB on 2 cores (bench/endtoend.py; the module docstring).
INGEST_ENTRIES_PER_S = 248_138_550 / 114.0
COMPARE_ROUTES_PER_S = 51_396_863 / 124.3
EXPORT_ROUTES_PER_S = 51_290_917 / 35.7
EXPORT_BYTES_PER_ROUTE = 10_605_706_234 / 51_290_917
EXPORT_BYTES_PER_S = EXPORT_BYTES_PER_ROUTE * EXPORT_ROUTES_PER_S  # the export writes 297 MB/s
REPORTS_SECONDS = 4.5
#: The sensitivity step (config sensitivity): its run of every variant of the method against
#: one compare of the same month, same machine and limit, and its peak staging per route (the
#: pinned entries' spill and each variant's work): the module docstring.
SENSITIVITY_PER_COMPARE = 563.5 / 128.3
SENSITIVITY_STAGING_BYTES_PER_ROUTE = 7_687_023_427 / 27_130_332
#: The routes a later snapshot of a collector adds, as a share of its entries, by the hours
#: since the one before (the module docstring).
NEW_ROUTES = {24: (5_922_710 / (28_654_760 / 5) - 1) / 4, 2: 0.0032}


def new_routes(gap_h: float) -> float:
    """The share of new routes a snapshot `gap_h` hours after the one before adds: NEW_ROUTES,
    and a straight line between its two gaps (clamped outside them)."""
    lo, hi = NEW_ROUTES[2], NEW_ROUTES[24]
    return lo + (hi - lo) * (min(24.0, max(2.0, gap_h)) - 2) / 22


#: The real route-views2 + route-views6 pair of 2026-07-30 14:00 as ingest writes it (rows
#: grouped by VP bucket: 2.1x the bytes of the decoder's order, which kept a prefix's rows
#: together), one snapshot: a decoded dump's bytes per entry, which wait in staging until their
#: merge (the generated 4GB months staged 4.69 and 4.72 bytes an entry at ingest's peak).
PARQUET_BYTES_PER_ENTRY = (3_316_668 + 819_801) / (679_347 + 164_279)
INGEST_STAGING_BYTES_PER_ENTRY = PARQUET_BYTES_PER_ENTRY
#: What a month stores per route where the data dir has no whole month of its own, from the
#: generated 4GB months of 5 and 20 daily snapshots (bench/endtoend.py --scale 250 and 1000
#: --memory-limit 4GB, 2026-11-30 23:35-23:55, the module docstring), the larger of the two:
#: the routes (8.12 and 8.56 bytes; the real sample's one snapshot, 4.91), and the compare's
#: published tables (common/tables.MONTH_TABLES; 9.29 and 9.28), an upper bound as the
#: export's is (half their paths pair).
ROUTES_BYTES_PER_ROUTE = 440_119_249 / 51_396_863
PUBLISHED_BYTES_PER_ROUTE = 476_432_134 / 51_290_917
#: The compare's peak in DATA_DIR/_staging, per route: its staged tables, spill and resumable
#: work database (the same two months, 1,903 and 1,574 MiB as the bench sampled it, 1,901 and
#: 1,551 MiB as the runs recorded it; the larger). A data dir's own whole months replace it.
COMPARE_STAGING_BYTES_PER_ROUTE = 1_903 * 2**20 / 51_290_917
#: Config.plan_entries_per_snapshot's default, the entries of one RIB where the data dir has
#: not seen the collector: a full route-views2 RIB of 2026 (about 1.05M IPv4 prefixes x 16.5
#: entries per prefix in the real sample). An assumption: older years and smaller
#: collectors have fewer.


class PlanError(CongruencyError):
    """The run does not fit (disk budget or free space); one line saying by how much."""


@dataclass
class MonthPlan:
    month: str
    collectors: dict[str, str]  # name -> active | partial (inactive and unknown ones left out)
    inactive: list[str]
    probes: list[str]  # no source gives their start: the run asks the archive (no folder = inactive)
    snapshots: int  # slots of active collectors
    published: int
    cached: int
    to_fetch: int
    download_bytes: int
    seconds: float
    #: Snapshots of active collectors the run will not read: a local archive root lacks them,
    #: or the month's ingest stands as recorded without them (missing or failed then); not in
    #: `snapshots` nor the estimates.
    missing: int = 0
    #: Snapshots read in place from a local archive root (nothing downloaded or cached).
    in_place: int = 0
    #: What the month adds under DATA_DIR: the routes its new snapshots add, the compare's
    #: published tables (a re-published month's older files stay until the lake's vacuum), and
    #: its MRT files where the cache keeps them.
    disk_bytes: int = 0
    routes_bytes: int = 0
    published_bytes: int = 0
    #: What the month's run holds in staging at its peak on top (decoded dumps, or the
    #: compare's staged tables and spill), freed when it ends.
    staging_bytes: int = 0
    #: The seconds by step: download, ingest, compare, export (the hints' JSON Lines, when
    #: tunnels_export), reports; `seconds` is their sum.
    step_seconds: dict[str, float] = field(default_factory=dict)
    #: What its hints export adds under DATA_DIR: an upper bound, or as the data dir's own
    #: exported months (the module docstring).
    export_bytes: int = 0
    #: The month's estimated entries (every active snapshot, published or not) and routes
    #: (those the data dir holds of it, and each collector's new snapshots' by NEW_ROUTES), the VP partitions the DuckDB compare would use for the
    #: routes at the config's memory limit, and its estimated peak DuckDB memory
    #: (pipeline/partitions.py; an even split assumed).
    entries: int = 0
    routes: int = 0
    partitions: int = 1
    compare_peak_bytes: int = 0


@dataclass
class Plan:
    months: list[MonthPlan]
    download_bytes: int = 0
    disk_bytes: int = 0  # what the run adds under DATA_DIR (the months' disk_bytes summed)
    #: The most the run holds on top of that at once: the largest month's staging, and with
    #: cache_policy delete the MRT files decoded at once. The checks add it to disk_bytes.
    staging_bytes: int = 0
    seconds: float = 0.0
    step_seconds: dict[str, float] = field(default_factory=dict)  # the months' step_seconds summed
    export_bytes: int = 0  # the months' export_bytes summed (an upper bound until learned: MonthPlan)
    free_bytes: int | None = None
    used_bytes: int = 0  # what DATA_DIR holds now
    budget_bytes: int | None = None
    assumed: list[str] = field(default_factory=list)  # collectors sized by Config.plan_entries_per_snapshot
    sized_by_files: list[str] = field(default_factory=list)  # collectors sized by their files in a local archive
    rates: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


#: Per collector, the newest snapshots whose sizes the plan takes (each one's footer is read).
LEARN_LATEST = 20


def _span(data_dir: Path, r: dict):
    """A manifest row's address span (ingest/writer.py), read from its file for an earlier version's row."""
    return json.loads(r["address_span"]) if r.get("address_span") else \
        address_span(Path(data_dir) / r["output"]) if r["output"] else None


#: The newest whole months of the data dir whose sizes the plan learns (each kind its own),
#: among at most LEARN_SCAN of its newest whole months.
LEARN_MONTHS, LEARN_SCAN = 3, 12


def _month_routes(data_dir: Path, month: str) -> tuple[list[str], int]:
    """(the month's routes files, their rows): its routes as stored now."""
    files = [f for fs in R.month_files(data_dir, month).values() for f in fs]
    return files, sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def _whole_months(data_dir: Path):
    """(month, its routes files, their rows), newest first, for the data dir's months of whole
    tables: a month holding a cut sample (ingest/writer.py `partial`) does not count, its few
    prefixes pair unlike a whole table's."""
    for m in reversed(layout.months_in(data_dir, "routes")):
        rows = [r for r in manifest.read(data_dir, m).values() if r["status"] == "ok"]
        if not rows or any(is_partial(_span(data_dir, r)) for r in rows):
            continue
        files, n = _month_routes(data_dir, m)
        if n:
            yield m, files, n


def _learned_sizes(data_dir: Path, kinds: tuple[str, ...]) -> dict[str, tuple[list[str], float, int]]:
    """kind -> (months, bytes per route of their routes, the routes of the largest) for what a
    month stores, from the data dir's own newest whole months (at most LEARN_MONTHS each, among LEARN_SCAN): "routes", the
    routes files; "published", the compare's tables (common/tables.MONTH_TABLES, the catalog's
    files); "export", the hints' tunnels.jsonl; "staging", the most the month's compare staged
    at once, as its run recorded it (pipeline/job._StagingPeak, the state's `measured`): the
    highest of the months' bytes per route, which Sizes keeps no lower than the generated
    months' for a month larger than those it learned from. Real months pair far fewer paths than the
    generated ones behind PUBLISHED_BYTES_PER_ROUTE and EXPORT_BYTES_PER_ROUTE. What is older
    than the month's routes (a snapshot merged since, the month not compared or exported again
    yet) describes other routes and does not count; nor does an empty export (a month with no
    hints says nothing of a hint's size). A kind no month qualifies for is left out, as are the
    published tables when the catalog cannot be read now (held by a commit, a server down)."""
    got: dict[str, tuple[list[str], int, int, int]] = {}  # months, bytes, routes, the largest's

    def wants(kind: str) -> bool:
        return kind in kinds and (kind not in got or len(got[kind][0]) < LEARN_MONTHS)

    peaks: list[float] = []  # the staging's bytes per route, per month

    def add(kind: str, m: str, size: int, n: int) -> None:
        months, b, r, most = got.get(kind, ([], 0, 0, 0))
        got[kind] = (months + [m], b + size, r + n, max(most, n))
        if kind == "staging":
            peaks.append(size / n)

    with pinned(data_dir, hold=True):  # one catalog connection for every month's files
        for m, files, n in islice(_whole_months(data_dir), LEARN_SCAN):
            stats = [Path(f).stat() for f in files]
            newest = max(st.st_mtime for st in stats)
            if wants("routes"):
                add("routes", m, sum(st.st_size for st in stats), n)
            if wants("published"):
                try:
                    out = [Path(f).stat() for fs in published.files(data_dir, MONTH_TABLES, m).values() for f in fs]
                except LakeError:
                    kinds = tuple(k for k in kinds if k != "published")
                    out = []
                if out and min(st.st_mtime for st in out) >= newest:
                    add("published", m, sum(st.st_size for st in out), n)
            if wants("staging") and (peak := _staging_peak(data_dir, m, newest)):
                add("staging", m, peak, n)
            jsonl = Path(layout.export_file(data_dir, m))
            st = jsonl.stat() if wants("export") and jsonl.is_file() else None
            if st and st.st_size and st.st_mtime >= newest:
                add("export", m, st.st_size, n)
            if not any(wants(k) for k in kinds):
                break
    # What a month stores grows with its routes: their bytes over their routes. The staging
    # does not (a month that fits the memory limit spills nothing): the largest month's rate.
    return {k: (months, max(peaks) if k == "staging" else b / r, most) for k, (months, b, r, most) in got.items()}


def _staging_peak(data_dir: Path, m: str, newest: float) -> int | None:
    """The staging peak the month's last compare recorded, when it compared the routes the
    month holds (recorded since they were written; its time is to the second)."""
    try:
        rec = json.loads(Path(layout.state_file(data_dir, m)).read_text())["steps"].get("compare") or {}
        peak = (rec.get("measured") or {}).get("staging_peak_bytes")
        if rec.get("status") != "done" or not peak or datetime.fromisoformat(rec["at"]).timestamp() + 1 < newest:
            return None
        return int(peak)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # no record, or not one this version wrote
        return None


def _learned(data_dir: Path, partial: set[str] | None = None) -> dict[str, tuple[int, int]]:
    """collector -> (median MRT bytes, median entries) of its LEARN_LATEST newest ok snapshots
    in the data dir. Snapshots whose prefixes all sit at the low end of the address space
    (cut samples: ingest/writer.py `partial`) do not count; their collectors go into `partial`."""
    rows: dict[str, list[dict]] = {}
    for m in reversed(layout.months_in(data_dir, "manifest")):  # newest first
        for r in manifest.read(data_dir, m).values():
            if r["status"] == "ok" and r["bytes"]:
                rows.setdefault(r["collector"], []).append(r)
    seen: dict[str, list[tuple[int, int]]] = {}
    for c, rs in rows.items():
        for r in sorted(rs, key=lambda r: r["slot"], reverse=True):
            if len(seen.get(c, ())) >= LEARN_LATEST:
                break
            if is_partial(_span(data_dir, r)):
                if partial is not None:
                    partial.add(c)
                continue
            seen.setdefault(c, []).append((r["bytes"], (r["entries_v4"] or 0) + (r["entries_v6"] or 0)))
    return {c: (int(statistics.median(b for b, _ in v)), int(statistics.median(e for _, e in v)))
            for c, v in seen.items()}


@dataclass(frozen=True)
class Sizes:
    """Bytes per route of what a month stores: the data dir's own (_learned_sizes) or the defaults."""

    routes: float
    published: float
    export: float
    staging: float  # the compare's, at its peak
    learned: dict
    #: The routes of the largest month the staging was learned from (0: not learned). The
    #: staging per route grows once a month spills: past that size the generated months'
    #: bound is kept as a floor.
    staging_routes: int = 0

    @classmethod
    def of(cls, cfg: Config, data: Path, kinds: tuple[str, ...] = ("routes", "published", "export")) -> Sizes:
        """The sizes of `kinds` learned where the data dir has them (the export's only with tunnels_export)."""
        kinds = tuple(k for k in kinds if k != "export" or cfg.tunnels_export)
        got = _learned_sizes(data, kinds) if data.exists() else {}

        def size(kind: str, default: float) -> float:
            return got[kind][1] if kind in got else default
        return cls(size("routes", ROUTES_BYTES_PER_ROUTE), size("published", PUBLISHED_BYTES_PER_ROUTE),
                   size("export", EXPORT_BYTES_PER_ROUTE), size("staging", COMPARE_STAGING_BYTES_PER_ROUTE),
                   {k: v[0] for k, v in got.items()}, got["staging"][2] if "staging" in got else 0)

    @property
    def export_rate(self) -> float:
        """The hints export's routes per second: its bytes per second over its bytes per route."""
        return EXPORT_BYTES_PER_S / self.export

    def compare_costs(self, routes: int) -> tuple[int, int, float]:
        """The compare of a month of `routes`: its tables' bytes, its staging's, its seconds."""
        staging = self.staging if routes <= self.staging_routes else max(self.staging, COMPARE_STAGING_BYTES_PER_ROUTE)
        return int(routes * self.published), int(routes * staging), routes / COMPARE_ROUTES_PER_S

    @staticmethod
    def sensitivity_costs(routes: int) -> tuple[int, float]:
        """The sensitivity step of a month of `routes` (config sensitivity): its staging's
        bytes, its seconds (SENSITIVITY_PER_COMPARE times the compare's)."""
        return int(routes * SENSITIVITY_STAGING_BYTES_PER_ROUTE), routes / COMPARE_ROUTES_PER_S * SENSITIVITY_PER_COMPARE

    def export_costs(self, routes: int) -> tuple[int, float]:
        """The hints export of a month of `routes`: its bytes, its seconds."""
        return int(routes * self.export), routes / self.export_rate

    def rates(self, cfg: Config) -> dict:
        return {
            "routes_bytes_per_route": round(self.routes, 2), "routes_from_data_dir": self.learned.get("routes", []),
            "published_bytes_per_route": round(self.published, 2),
            "published_from_data_dir": self.learned.get("published", []),
            "export_routes_per_s": round(self.export_rate) if cfg.tunnels_export else None,
            "export_bytes_per_route": round(self.export, 1) if cfg.tunnels_export else None,
            "export_from_data_dir": self.learned.get("export", []),
            "staging_rates": {"ingest_bytes_per_entry": round(INGEST_STAGING_BYTES_PER_ENTRY, 2),
                              "compare_bytes_per_route": round(self.staging, 2)},
            "staging_from_data_dir": self.learned.get("staging", [])}


def make(cfg: Config, months: list[str], only: str | None = None, forced: frozenset | set = frozenset()) -> Plan:
    """The plan of `congruency run` over `months` (`only` "ingest": that step alone, no
    compare's tables or staging counted; `forced`: the steps --force redoes).

    A month is compared when it has something new to ingest, when --force names the compare,
    or when a month before it in the range is: its compare reads the month before's
    published tables (its transitions), so it runs again. A month the data dir holds whose
    recorded compare no longer stands (a changed [method], never compared) is compared too
    (runner/state.would_run, the run's own check)."""
    data = Path(cfg.data_dir)
    cat = catalogue.load(cfg.catalogue)
    names = catalogue.expand(cfg.collectors, cfg.catalogue)
    cut: set[str] = set()
    learned = _learned(data, cut) if data.exists() else {}
    compares = only is None
    sizes = Sizes.of(cfg, data, ("routes", "published", "export", "staging") if compares else ("routes",))
    plan = Plan(months=[], rates=_rates(cfg, sizes, learned, cut))
    assumed, by_files = set(), set()
    cascade = compares and "compare" in forced
    for m in months:
        targets = discovery.window(m, cfg.days, cfg.times)
        done = {k: r for k, r in manifest.read(data, m).items() if r["status"] == "ok"} if data.exists() else {}
        # A month whose ingest stands as recorded is not ingested again: its slots stay as the
        # manifest says (runner/state.would_run, the run's own check).
        ingests = not data.exists() or step_runs(cfg, m, "ingest", "ingest" in forced)
        mp = MonthPlan(m, {}, [], [], 0, 0, 0, 0, 0, 0.0)
        entries = before = 0  # the entries to ingest; the routes the month holds already (estimated)
        for n in names:
            col = cat[n]
            states = [col.state_at(t) for t in targets]
            asked = [t for t, st in zip(targets, states) if st != "inactive"]
            local = _in_local_archive(cfg, col, m, asked) if asked else None
            if local is not None and ingests:  # listed as the run lists it: a dump read in place, or none
                # (missing where the collector is active; inactive where no source gives its start
                # and the archive has no such folder; ingest/run.slots_of)
                mp.missing += sum(st == "active" and t not in local for t, st in zip(targets, states))
                live = [t for t in asked if t in local]
            else:
                live = [t for t, st in zip(targets, states) if st == "active"]
                if "unknown" in states:
                    mp.probes.append(n)
            if not live:
                if "active" in states:  # active, but every snapshot missing: still one of the month's
                    mp.collectors[n] = col.month_state(m)
                elif "unknown" not in states:
                    mp.inactive.append(n)
                continue

            root = (archive_root(cfg, col) or col.project.root).rstrip("/") + "/"

            def published_(t) -> bool:
                """Ingest skips a slot merged from the same file (ingest/run.run): the file
                the local archive has, else one under the same root (a changed root reads
                every dump again)."""
                r = done.get(f"{n}@{t:%Y%m%dT%H%M}")
                if r is None or not ingests or cfg.bgpstream_csv:  # a lab's listing names its own files
                    return r is not None
                return r.get("url") == local[t][0] if local is not None else str(r.get("url")).startswith(root)
            ext = "bz2" if col.project.layout == "routeviews" else "gz"
            kind = "rib" if col.project.layout == "routeviews" else "bview"
            mp.collectors[n] = col.month_state(m)
            bpe = learned[n][0] / learned[n][1] if n in learned and learned[n][1] else MRT_BYTES_PER_ENTRY[col.project.name]
            if local:  # its own files: their bytes, at its bytes per entry (learned, else the sample's)
                by_files.add(n)
                size = int(statistics.median(b for _url, b in local.values()))
                ents = int(size / bpe)
            elif n in learned:
                size, ents = learned[n]
            else:
                assumed.add(n)
                ents = cfg.plan_entries_per_snapshot
                size = int(ents * bpe)
            mp.routes += _routes_of(ents, [t for t in live if ingests or published_(t)])
            before += _routes_of(ents, [t for t in live if published_(t)])
            for t in live:
                if published_(t):
                    mp.snapshots += 1
                    mp.entries += ents
                    mp.published += 1
                elif not ingests:  # missing or failed when the month was ingested; not asked again
                    mp.missing += 1
                    continue
                else:
                    mp.snapshots += 1
                    mp.entries += ents
                    entries += ents
                    if local is not None:  # read in place, nothing downloaded or cached (ingest/download.py)
                        mp.in_place += 1
                    elif (cfg.cache_dir / n / f"{kind}.{t:%Y%m%d.%H%M}.{ext}").exists():
                        mp.cached += 1
                    else:
                        mp.to_fetch += 1
                        mp.download_bytes += size
        held = _month_routes(data, m)[1] if data.exists() else 0
        if held:  # the routes the data dir holds, and those the new snapshots add
            mp.routes, before = held + mp.routes - before, held
        mp.partitions, mp.compare_peak_bytes = _compare_memory(cfg, mp.routes, m)
        # ... or when its recorded compare no longer stands (a changed [method] or engine, a
        # month ingested by --only ingest and never compared): the check the run makes
        compared = compares and mp.routes > 0 and (entries > 0 or cascade or (held > 0 and step_runs(cfg, m, "compare")))
        cascade = cascade or compared
        # a month not compared again is not reported or exported again either, but for an
        # export missing (a month published before the export was on)
        export = compares and cfg.tunnels_export and (compared or not Path(layout.export_file(data, m)).exists())
        tables, staged, compare_s = sizes.compare_costs(mp.routes) if compared else (0, 0, 0.0)
        # The sensitivity step after it (config sensitivity): when the month is compared, or
        # its recorded variants no longer stand.
        sens = compares and cfg.sensitivity and mp.routes > 0 and (compared or step_runs(cfg, m, "sensitivity"))
        sens_staged, sens_s = sizes.sensitivity_costs(mp.routes) if sens else (0, 0.0)
        staged = max(staged, sens_staged)
        mp.export_bytes, export_s = sizes.export_costs(mp.routes) if export else (0, 0.0)
        mp.step_seconds = {k: round(v, 1) for k, v in (
            ("download", mp.download_bytes * 8 / (cfg.plan_download_mbit_s * 1e6)),
            ("ingest", entries / INGEST_ENTRIES_PER_S),
            ("compare", compare_s),
            *([("sensitivity", sens_s)] if cfg.sensitivity else []),  # a step of the run only with it on
            ("export", export_s),
            ("reports", REPORTS_SECONDS if compared else 0.0))}
        mp.seconds = round(sum(mp.step_seconds.values()), 1)
        # What the month adds: the routes beyond those it holds (the merge writes the month's
        # routes anew and deletes the older ones) and the compare's tables (a re-published
        # month's older files stay until the lake's vacuum). What it stages meanwhile: the
        # decoded dumps until their merge, beside the older routes the merge replaces; then
        # the compare's staged tables and spill.
        mp.routes_bytes = int((mp.routes - before) * sizes.routes) if entries else 0
        mp.published_bytes = tables
        mp.staging_bytes = max(int(entries * INGEST_STAGING_BYTES_PER_ENTRY + before * sizes.routes) if entries else 0,
                               staged)
        _add(plan, mp, mp.routes_bytes + mp.published_bytes + (mp.download_bytes if cfg.cache_policy == "keep" else 0))
    if cfg.cache_policy == "delete":  # at most `concurrency` downloaded MRT files on disk at once
        biggest = max((learned.get(n, (int(cfg.plan_entries_per_snapshot * MRT_BYTES_PER_ENTRY[cat[n].project.name]), 0))[0]
                       for n in names if _local_root(cfg, cat[n]) is None), default=0)
        plan.staging_bytes += biggest * max(1, cfg.concurrency)
    plan.assumed, plan.sized_by_files = sorted(assumed), sorted(by_files)
    _room(plan, cfg, data)
    plan.seconds = round(plan.seconds, 1)
    plan.step_seconds = {k: round(v, 1) for k, v in plan.step_seconds.items()}
    return plan


def _rates(cfg: Config, sizes: Sizes, learned: dict, cut: set) -> dict:
    """The rates and sizes a plan used (`plan --json`: rates), whichever steps it counts."""
    return {
        "ingest_entries_per_s": round(INGEST_ENTRIES_PER_S), "compare_routes_per_s": round(COMPARE_ROUTES_PER_S),
        **sizes.rates(cfg),
        "reports_seconds_per_month": REPORTS_SECONDS,
        **({"sensitivity_per_compare": round(SENSITIVITY_PER_COMPARE, 2),
            "sensitivity_staging_bytes_per_route": round(SENSITIVITY_STAGING_BYTES_PER_ROUTE, 1)} if cfg.sensitivity else {}),
        "new_routes_per_snapshot": {f"{h}h": round(v, 4) for h, v in NEW_ROUTES.items()},
        "mrt_bytes_per_entry": {k: round(v, 2) for k, v in MRT_BYTES_PER_ENTRY.items()},
        "download_mbit_s": cfg.plan_download_mbit_s, "default_entries_per_snapshot": cfg.plan_entries_per_snapshot,
        "sizes_from_data_dir": sorted(learned), "partial_samples": sorted(cut - set(learned))}


def step_runs(cfg: Config, month: str, step: str, force: bool = False) -> bool:
    """runner/state.would_run, counted as run when the catalog cannot be read now (a
    LakeError: the plan errs toward more work, as the run would find out)."""
    try:
        return would_run(cfg, month, step, force)
    except LakeError:
        return True


def _local_root(cfg: Config, col) -> str | None:
    """The collector's archive root when the run lists it as a local folder (config
    archive_root or archive_roots, as ingest/run.slots_of reads them; not with a
    bgpstream_csv listing), else None."""
    root = archive_root(cfg, col)
    return None if cfg.bgpstream_csv or root is None or download.is_remote(root) else root


def _in_local_archive(cfg: Config, col, month: str, targets: list) -> dict | None:
    """target time -> (path, bytes) of the dump the run would read for it (discovery's match,
    within tolerance_minutes), where the archive root is a local folder: listing a folder
    asks no archive, and its files are what the run ingests, so they size the month instead
    of an assumption (make demo's 3 MB sample is not planned as two full RIBs). None for a
    remote root, or a folder that cannot be read now (the run reports it; the plan sizes the
    collector as it would a remote one's)."""
    root = _local_root(cfg, col)
    if root is None:
        return None
    try:
        slots = discovery.discover(col, month, targets, root=root, tolerance=timedelta(minutes=cfg.tolerance_minutes))
        return {s.target: (s.url, Path(s.url).stat().st_size) for s in slots if s.url and Path(s.url).is_file()}
    except OSError:
        return None


def _routes_of(entries: int, snapshots: list) -> int:
    """A collector's routes in `snapshots` (its times, in order) of `entries` each: the first's
    entries and each later one's new routes (NEW_ROUTES by the hours since the one before)."""
    if not snapshots:
        return 0
    gaps = [(b - a).total_seconds() / 3600 for a, b in zip(snapshots, snapshots[1:])]
    return int(entries * (1 + sum(new_routes(g) for g in gaps)))


def _room(plan: Plan, cfg: Config, data: Path) -> None:
    """The plan's free space (where the data dir is, or would be made), what the data dir
    holds, and the budget."""
    probe = data if data.exists() else next((p for p in data.parents if p.exists()), Path("."))
    plan.free_bytes = shutil.disk_usage(probe).free
    plan.used_bytes = layout.bytes_under(data)
    plan.budget_bytes = parse_bytes(cfg.disk_budget) if cfg.disk_budget else None


def _add(plan: Plan, mp: MonthPlan, disk: int) -> None:
    """A month into the plan's sums: `disk` what it adds, its staging the most held at once."""
    mp.disk_bytes = disk
    plan.months.append(mp)
    plan.download_bytes += mp.download_bytes
    plan.disk_bytes += disk
    plan.staging_bytes = max(plan.staging_bytes, mp.staging_bytes)
    plan.export_bytes += mp.export_bytes
    plan.seconds += mp.seconds
    for k, v in mp.step_seconds.items():
        plan.step_seconds[k] = plan.step_seconds.get(k, 0.0) + v


#: The steps `run --only STEP` checks the disk for besides ingest (make): what they write
#: follows the month's routes, which the data dir holds by then.
STEP_CHECKED = ("compare", "hints")


def for_step(cfg: Config, months: list[str], step: str) -> Plan:
    """The plan of `run --only STEP` (STEP_CHECKED) over `months`, those whose step would run
    (cli/run.py: runner/state.would_run, and every month after the first such, which reads
    the one before's tables): their routes counted in the data dir; the compare adds its
    tables and stages its own (the rates of make), the hints add their export (when
    tunnels_export)."""
    data = Path(cfg.data_dir)
    sizes = Sizes.of(cfg, data, ("published", "staging") if step == "compare" else ("export",))
    plan = Plan(months=[], rates=_rates(cfg, sizes, {}, set()))
    cat = catalogue.load(cfg.catalogue)
    for m in months:
        mp = MonthPlan(m, {}, [], [], 0, 0, 0, 0, 0, 0.0)
        if data.exists():
            _stored(data, m, mp, cat)
        if step == "compare":
            mp.partitions, mp.compare_peak_bytes = _compare_memory(cfg, mp.routes, m)
            mp.published_bytes, mp.staging_bytes, seconds = sizes.compare_costs(mp.routes)
            mp.step_seconds = {"compare": round(seconds, 1)}
        elif cfg.tunnels_export:
            mp.export_bytes, seconds = sizes.export_costs(mp.routes)
            mp.step_seconds = {"export": round(seconds, 1)}
        mp.seconds = sum(mp.step_seconds.values())
        _add(plan, mp, mp.published_bytes)
    _room(plan, cfg, data)
    return plan


def _stored(data: Path, month: str, mp: MonthPlan, cat: dict[str, catalogue.Collector]) -> None:
    """What `run --only` reads of a month the data dir holds: its collectors (`cat`: the
    catalogue), snapshots and entries as its manifest records them (every one published),
    and its routes."""
    rows = [r for r in manifest.read(data, month).values() if r["status"] == "ok"]
    for r in rows:
        col = cat.get(r["collector"])
        state = col.month_state(month) if col else "active"  # it has snapshots: active, or partial
        mp.collectors.setdefault(r["collector"], state if state in ("active", "partial") else "active")
    mp.snapshots = mp.published = len(rows)
    mp.entries = sum((r["entries_v4"] or 0) + (r["entries_v6"] or 0) for r in rows)
    mp.routes = _month_routes(data, month)[1]


def _compare_memory(cfg: Config, routes: int, month: str) -> tuple[int, int]:
    """(partitions, peak DuckDB bytes) of the compare of a month of `routes` (the rows it
    reads), by the rule of pipeline/partitions.py with the month split evenly (the run splits
    by the VPs' hash and their real sizes, so its partitions can be a few more). PlanError
    when no split fits."""
    limit = P.limit_bytes(cfg)
    even = lambda k: [routes // k + (i < routes % k) for i in range(k)]  # noqa: E731
    try:
        k = P.choose(even, routes, limit, cfg.compare_partitions)
    except P.Unfit as exc:
        raise PlanError(f"{month}: {exc}") from None
    return k, P.peak_bytes(-(-routes // k), limit) if routes else 0


def check(plan: Plan, cfg: Config, what: str = "the run") -> None:
    """PlanError when the run (`what`) would not fit in the budget or the free space: what it
    adds, and the most it stages at once on top."""
    need = plan.disk_bytes + plan.staging_bytes
    parts = f"{human(plan.disk_bytes)} it adds and {human(plan.staging_bytes)} staged at once" + (
        f"; cache_policy {cfg.cache_policy!r}; see congruency plan" if what == "the run" else "")
    if plan.budget_bytes is not None and plan.used_bytes + need > plan.budget_bytes:
        raise PlanError(f"disk_budget {cfg.disk_budget}: {cfg.data_dir} holds {human(plan.used_bytes)} and {what} "
                        f"needs about {human(need)} more ({parts})")
    if plan.free_bytes is not None and need > plan.free_bytes:
        raise PlanError(f"{cfg.data_dir}: {what} needs about {human(need)} but only "
                        f"{human(plan.free_bytes)} is free ({parts})")


def warnings(plan: Plan) -> list[str]:
    """One line each for what may not fit but is not refused: the hints export's estimate (an
    upper bound until the data dir has exported a month: the module docstring) past the
    budget or the free space."""
    if not plan.export_bytes:
        return []
    need = plan.disk_bytes + plan.staging_bytes + plan.export_bytes
    if plan.budget_bytes is not None and plan.used_bytes + need > plan.budget_bytes:
        where, limit = "the disk_budget", plan.budget_bytes
    elif plan.free_bytes is not None and need > plan.free_bytes:
        where, limit = "the free space", plan.free_bytes
    else:
        return []
    bound = "about" if plan.rates.get("export_from_data_dir") else "up to"
    return [f"the hints export may need {bound} {human(plan.export_bytes)} more, past {where} ({human(limit)}); "
            "tunnels_export = false leaves it out (see congruency plan)"]


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError


def duration(s: float) -> str:
    h, rest = divmod(int(round(s)), 3600)
    return f"{h} h {rest // 60:02d} min" if h else f"{rest // 60} min {rest % 60:02d} s"
