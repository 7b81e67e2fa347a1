"""Write a synthetic RouteViews + RIS archive of MRT RIB dumps, with its ground truth.

Routing is computed once per month and family (topology.Graph.route per destination);
each (VP, destination) route is pre-encoded as attribute bytes, so writing a RIB entry is
a few bytes concatenations. Files are streamed record by record. When ground truth is on,
the rows of the month are yielded while the files are written and consumed directly by
congruency.reference.compute_month, so nothing is materialised. Without ground truth the
month's files are independent: `workers` processes (forked after routing, so they share the
routed month) write them side by side, and they are byte for byte what one process writes.
"""
from __future__ import annotations

import gc
import json
import multiprocessing
import os
import random
import struct
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from ipaddress import IPv4Address, IPv6Address
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bgp_congruency.common import atomic
from bgp_congruency.common.params import MethodParams, load_groups
from bgp_congruency.common.tables import TABLES
from bgp_congruency.congruency import reference

from .churn import Churn
from .mrt_writer import (
    ORIGIN_IGP,
    RIB_IPV4_UNICAST,
    RIB_IPV6_UNICAST,
    MrtWriter,
    as_path,
    mp_reach_abbreviated,
    next_hop,
    rib_entry_head,
)
from .topology import CUSTOMER, PROVIDER, TIER1, TIER2, TIER3, Graph, Internet, Prefix

VERSION = 2
#: Share of (VP, destination) routes that have a second-best path: without churn they flap to it
#: in about half the snapshots (the months of VERSION 1); with churn (synth/churn.py) they take
#: it or not in the month's first snapshot, and then change as churn says.
UNSTABLE = 0.04
PARTIAL = 0.25  # share of VPs that send only customer routes


@dataclass(frozen=True)
class Collector:
    name: str
    project: str
    site: str  # VPs peer with a site; route-views2 + route-views6 are one site
    afis: tuple[int, ...]
    bgp_id: str

    def relpath(self, ts: datetime) -> str:
        stamp = ts.strftime("%Y%m%d.%H%M")
        if self.project == "routeviews":
            return f"{self.name}/bgpdata/{ts:%Y.%m}/RIBS/rib.{stamp}.bz2"
        return f"{self.name}/{ts:%Y.%m}/bview.{stamp}.gz"


COLLECTORS = (
    Collector("route-views2", "routeviews", "route-views", (4,), "192.0.2.2"),
    Collector("route-views6", "routeviews", "route-views", (6,), "192.0.2.6"),
    Collector("rrc00", "ris", "rrc00", (4, 6), "192.0.2.100"),
    Collector("rrc01", "ris", "rrc01", (4, 6), "192.0.2.101"),
)
SITES = ("route-views", "rrc00", "rrc01")


@dataclass
class VP:
    pos: int  # position in the VP list (route tables are indexed by it)
    idx: int  # AS index in the Internet
    asn: int
    partial: bool
    default_route: bool  # a partial feed that also sends 0.0.0.0/0 and ::/0
    sites: tuple[str, ...]
    sessions: dict[str, dict[int, int]]  # site -> afi -> number of sessions


@dataclass
class Session:
    peer_index: int
    vpos: int
    asn: int
    ip: str
    head: bytes  # rib_entry_head(peer_index, originated)
    nh: bytes  # NEXT_HOP or abbreviated MP_REACH_NLRI attribute


@dataclass
class FamilyMonth:
    """Routes of one family in one month: table[origin][vp.pos] = ORIGIN+AS_PATH bytes
    or None; flaps[snapshot][origin][vp.pos] = the second-best route used instead."""

    afi: int
    prefixes: list[Prefix]
    table: dict[int, list]
    flaps: list[dict[int, dict[int, bytes]]]
    present: list[bool]
    churn: Churn | None = None  # per snapshot, the routes perturbed (synth/churn.py)

    def changed(self, snap: int) -> dict[int, dict[int, bytes | None]]:
        """prefix index -> {VP position: its route at this snapshot (None: withdrawn)}, for the
        routes churn perturbs at it."""
        out: dict[int, dict[int, bytes | None]] = {}
        if self.churn is not None:
            n = self.churn.vps
            for slot, blob in self.churn.at(snap).items():
                out.setdefault(slot // n, {})[slot % n] = blob
        return out


def choose_vps(net: Internet, seed: int, count: int) -> list[VP]:
    """Collector peers: mostly transit ASes, a quarter partial feeds, each at 1-2 sites."""
    rng = random.Random(f"synth:{seed}:vps")
    weight = {TIER1: 8.0, TIER2: 8.0, TIER3: 3.0}
    keyed = sorted(range(len(net.asns)), key=lambda i: -rng.random() ** (1 / weight.get(net.tier[i], 1.0)))
    chosen = sorted(keyed[:count], key=lambda i: net.asns[i])
    vps = []
    for pos, i in enumerate(chosen):
        partial = rng.random() < PARTIAL
        sites = {SITES[pos % len(SITES)]}
        if rng.random() < 0.35:
            sites.add(rng.choice(SITES))
        sessions = {s: {4: 2 if rng.random() < 0.1 else 1, 6: 2 if rng.random() < 0.05 else 1} for s in sorted(sites)}
        vps.append(VP(pos, i, net.asns[i], partial, partial and rng.random() < 0.5, tuple(sorted(sites)), sessions))
    if vps and all(vp.partial for vp in vps):
        vps[0].partial = vps[0].default_route = False
    if len(vps) >= 4 and not any(vp.partial for vp in vps):
        vps[-1].partial = True
    return vps


_ASNS = [struct.Struct(f">{k}I") for k in range(256)]


def _encode(path) -> bytes:
    """ORIGIN + AS_PATH (one AS_SEQUENCE) bytes; the hot path of routing, so inlined."""
    k = len(path)
    if k > 63:  # value over 255 bytes: the general encoder (extended length)
        return ORIGIN_IGP + as_path(path)
    return ORIGIN_IGP + bytes((0x40, 2, 2 + 4 * k, 2, k)) + _ASNS[k].pack(*path)


def _decode(blob: bytes) -> list[int]:
    """The ASNs of an ORIGIN+AS_PATH blob made by _encode (one AS_SEQUENCE segment)."""
    off = 10 if blob[4] & 0x10 else 9
    return list(_ASNS[blob[off - 1]].unpack_from(blob, off))


def family_month(net: Internet, vps: list[VP], month: str, afi: int, seed: int, snapshots: int, tick=None,
                 hours: list[float] | None = None) -> FamilyMonth:
    """Route every destination of the month once; VPs export per their feed type. `hours`:
    each snapshot's time since the first, for the churn between them (synth/churn.py; None:
    no churn)."""
    present = net.adopted(month) if afi == 6 else [True] * len(net.asns)
    active = [vp for vp in vps if present[vp.idx]]
    g: Graph = net.graph(afi, month, observers=[vp.idx for vp in active])
    prefixes = net.month_prefixes(afi, month)
    dests = sorted({p.origin for p in prefixes})
    rng = random.Random(f"synth:{seed}:{month}:{afi}:unstable")
    table: dict[int, list] = {}
    unstable = []
    for k, d in enumerate(dests):
        r = g.route(d)
        cls = r.cls
        row = [None] * len(vps)
        for vp in active:
            c = cls[vp.idx]
            if c < 0 or (vp.partial and c > CUSTOMER):
                continue
            row[vp.pos] = _encode(g.path(r, vp.idx))
            if vp.idx != d and rng.random() < UNSTABLE:
                alt = g.alternative(r, vp.idx)
                if alt and not (vp.partial and alt[0] > CUSTOMER):
                    unstable.append((d, vp.pos, _encode(alt[1])))
        table[d] = row
        if tick and k % 256 == 0:
            tick(k / len(dests), f"{month} routing IPv{afi}: {len(dests)} origins")
    defaults = [None] * len(vps)
    for vp in active:
        ups = [n for n, c, _ in g.nbrs[vp.idx] if c == PROVIDER]
        if vp.default_route and ups:
            defaults[vp.pos] = _encode([vp.asn, net.asns[min(ups)]])
    if any(defaults):
        table[-1] = defaults
        prefixes = [Prefix(afi, 0, 0, -1)] + prefixes
    flaps = []
    for s in range(snapshots if hours is None else 1):  # with churn, the first's flaps hold all month
        rs = random.Random(f"synth:{seed}:{month}:{afi}:snapshot{s}")
        fl: dict[int, dict[int, bytes]] = {}
        for d, pos, blob in unstable:
            if rs.random() < 0.5:
                fl.setdefault(d, {})[pos] = blob
        flaps.append(fl)
    fm = FamilyMonth(afi, prefixes, table, flaps if hours is None else flaps * snapshots, present)
    if hours is not None:
        seconds = {(d, pos): blob for d, pos, blob in unstable}  # the routing's second bests

        def usual(slot: int):
            p = prefixes[slot // len(vps)]
            return table[p.origin][slot % len(vps)] if p.kind is None and p.origin >= 0 else None

        def other(slot: int, blob: bytes) -> bytes:
            pos = slot % len(vps)
            alt = seconds.get((prefixes[slot // len(vps)].origin, pos))
            return alt if alt is not None else _encode([vps[pos].asn] + _decode(blob))

        fm.churn = Churn(seed, month, afi, len(prefixes) * len(vps), usual, other, hours)
        fm.churn.vps = len(vps)
    return fm


def _sessions(c: Collector, vps: list[VP], fams: dict[int, FamilyMonth], ts: int):
    """Peer-index table and per-family sessions of one collector file."""
    si = SITES.index(c.site)
    peers, by_afi = [], {afi: [] for afi in c.afis}
    for vp in vps:
        if c.site not in vp.sites:
            continue
        for afi in c.afis:
            if not fams[afi].present[vp.idx]:
                continue
            for k in range(vp.sessions[c.site][afi]):
                if afi == 4:
                    ip = str(IPv4Address(int(IPv4Address("198.18.0.0")) + si * 8192 + vp.pos * 8 + k + 1))
                    nh = next_hop(ip)
                else:
                    ip = str(IPv6Address(int(IPv6Address("2001:db8::")) + (si << 80) + (vp.pos << 16) + k + 1))
                    link_local = f"fe80::{vp.pos + 1:x}:{k + 1}"
                    nh = mp_reach_abbreviated(ip, link_local) if (vp.pos + si) % 3 == 0 else mp_reach_abbreviated(ip)
                uptime = 86400 * (1 + (vp.pos * 7 + si * 3 + k) % 40) + 3600 * k
                head = rib_entry_head(len(peers), ts - uptime)
                by_afi[afi].append(Session(len(peers), vp.pos, vp.asn, ip, head, nh))
                peers.append((str(IPv4Address(0x0A000000 + vp.pos + 1)), ip, vp.asn))
    return peers, by_afi


_LEN = [struct.pack(">H", k) for k in range(4096)]


def write_file(
    path: Path, c: Collector, snap: int, when: datetime, fams: dict[int, FamilyMonth], vps: list[VP],
    emit: bool, stats: dict, tick=None,
):
    """Write one RIB dump; yields its rows (reference input) when `emit`. Fills stats."""
    ts = int(when.timestamp())
    peers, by_afi = _sessions(c, vps, fams, ts)
    counts = {afi: 0 for afi in c.afis}
    nrec = sum(len(fams[a].prefixes) for a in c.afis) or 1
    done = 0
    with MrtWriter(path, ts) as w:
        w.peer_index(c.bgp_id, "", peers)
        for afi in c.afis:
            fm, sessions = fams[afi], by_afi[afi]
            if not sessions:
                continue
            subtype = RIB_IPV4_UNICAST if afi == 4 else RIB_IPV6_UNICAST
            flaps, table, n = fm.flaps[snap], fm.table, 0
            changed = fm.changed(snap)
            fast = [(s.vpos, s.head, len(s.nh), s.nh) for s in sessions]
            for pi, p in enumerate(fm.prefixes):
                done += 1
                if tick and done % 2048 == 0:
                    tick(done / nrec, f"{c.name} {when:%Y-%m-%d %H:%M}")
                tab = table[p.origin]
                fl = flaps.get(p.origin)
                ch = changed.get(pi)
                if ch is not None:  # churn: this prefix's perturbed routes replace the usual ones
                    fl = {**(fl or {}), **ch}
                ents = []
                rows = [] if emit else None
                if p.kind is None and not emit:  # the hot loop
                    for vpos, head, nhl, nh in fast:
                        blob = tab[vpos] if fl is None or vpos not in fl else fl[vpos]
                        if blob is not None:
                            ents.append(head + _LEN[len(blob) + nhl] + blob + nh)
                elif p.kind is None:
                    for s in sessions:
                        blob = tab[s.vpos] if fl is None or s.vpos not in fl else fl[s.vpos]
                        if blob is None:
                            continue
                        ents.append(s.head + _LEN[len(blob) + len(s.nh)] + blob + s.nh)
                        rows.append({
                            "collector": c.name, "snapshot_time": when, "peer_asn": s.asn, "peer_ip": s.ip,
                            "afi": afi, "prefix": p.text, "as_path": _decode(blob), "has_as_set": False,
                        })
                else:
                    for s in sessions:  # dirty originations: rare, so the slow path
                        blob = tab[s.vpos] if fl is None or s.vpos not in fl else fl[s.vpos]
                        if blob is None:
                            continue
                        path, has_set = _decode(blob), False
                        if p.kind == "as_set":
                            attrs, has_set = ORIGIN_IGP + as_path(path, p.extra), True
                        elif p.kind == "reserved":
                            attrs = _encode(path + [p.extra[0]])
                        else:  # poison: an AS on the path would have dropped the route
                            if p.extra[0] in path:
                                continue
                            attrs = _encode(path + [p.extra[0], path[-1]])
                        ents.append(s.head + _LEN[len(attrs) + len(s.nh)] + attrs + s.nh)
                        if emit:
                            rows.append({
                                "collector": c.name, "snapshot_time": when, "peer_asn": s.asn, "peer_ip": s.ip,
                                "afi": afi, "prefix": p.text, "as_path": None if has_set else _decode(attrs),
                                "has_as_set": has_set,
                            })
                if ents:
                    w.rib(subtype, p.wire, ents)
                    n += len(ents)
                    if emit:
                        yield from rows
            counts[afi] = n
    stats.update(entries={str(a): counts[a] for a in c.afis}, records=w.seq, bytes=w.size, sha256=w.sha256)


def snapshot_times(month: str, days: int, every_hours: int = 24) -> list[datetime]:
    """The first N days of the month, at 00:00 UTC and every `every_hours` hours after it."""
    y, m = (int(x) for x in month.split("-"))
    first = datetime(y, m, 1, tzinfo=timezone.utc)
    return [first + timedelta(days=k, hours=h) for k in range(days) for h in range(0, 24, every_hours)]


GROUND_TRUTH_TABLES = ("pairs", "vps", "month_summary", "cleaning_stats")


def _write_ground_truth(out: Path, month: str, result: dict) -> None:
    d = out / "ground_truth" / f"month={month}"
    d.mkdir(parents=True, exist_ok=True)
    for name in GROUND_TRUTH_TABLES:
        if name in result:
            pq.write_table(pa.Table.from_pylist(result[name], schema=TABLES[name]), d / f"{name}.parquet")


def _remove_previous(out: Path) -> None:
    """Delete what an earlier run wrote here (only files its files.json lists, and its
    ground truth), so a re-run with other parameters leaves no stale dumps behind."""
    listing = out / "ground_truth" / "files.json"
    if not listing.is_file():
        return
    stale = [out / f["path"] for f in json.loads(listing.read_text())["files"]]
    stale += [p for p in (out / "ground_truth").glob("month=*/*.parquet") if p.stem in GROUND_TRUTH_TABLES]
    for p in stale + [listing, out / "SYNTH.json"]:
        p.unlink(missing_ok=True)
        d = p.parent
        while d != out and d.is_dir() and not any(d.iterdir()):
            d.rmdir()
            d = d.parent


@dataclass
class _Progress:
    callback: object
    total: int
    done: int = 0
    extra: dict = field(default_factory=dict)

    def tick(self, frac: float, desc: str) -> None:
        if self.callback:
            self.callback(self.done + min(frac, 1.0), self.total, desc)

    def finish_unit(self, desc: str) -> None:
        self.done += 1
        if self.callback:
            self.callback(self.done, self.total, desc)


#: What a forked file writer reads (set in the parent before the pool starts, so each child
#: inherits the routed month instead of receiving it pickled).
_WRITER: dict = {}


def _write_one(job: tuple[int, datetime, int]) -> dict:
    snap, when, ci = job
    c, out, month = COLLECTORS[ci], _WRITER["out"], _WRITER["month"]
    stats = _file_stats(c, month, when)
    for _ in write_file(out / stats["path"], c, snap, when, _WRITER["fams"], _WRITER["vps"], False, stats):
        pass
    return stats


def _file_stats(c: Collector, month: str, when: datetime) -> dict:
    """A file's row of files.json before writing (write_file adds its counts and hash)."""
    return {"path": c.relpath(when), "collector": c.name, "project": c.project, "month": month,
            "snapshot_time": when.strftime("%Y-%m-%dT%H:%M:%SZ")}


def _write_parallel(out: Path, month: str, fams, vplist, jobs, workers: int, prog) -> list[dict]:
    """The month's files (no ground truth) by `workers` forked processes; their stats.

    gc.freeze() before the fork keeps the collector from touching (and so copying) every
    page of the routed month in each child. A worker that fails or dies (the OOM killer)
    stops the month with its error; the temp files of the files not finished are removed."""
    done = []
    _WRITER.update(out=out, month=month, fams=fams, vps=vplist)
    gc.freeze()
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            try:
                for stats in pool.map(_write_one, jobs):
                    done.append(stats)
                    prog.finish_unit(f"{stats['collector']} {stats['snapshot_time']} done")
            except BaseException as exc:
                pool.shutdown(wait=True, cancel_futures=True)
                atomic.clean_stale(*(out / COLLECTORS[ci].relpath(when) for _, when, ci in jobs))
                if isinstance(exc, BrokenProcessPool):
                    raise RuntimeError(f"synth {month}: a file writer died (killed, or out of memory?); "
                                       f"its unfinished files under {out} were removed") from exc
                raise
    finally:
        gc.unfreeze()
        _WRITER.clear()
    return done


def default_workers() -> int:
    """One writer per CPU this process may run on (affinity and cpusets, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity on this platform
        return os.cpu_count() or 1


def generate(
    out_dir: Path,
    *,
    seed: int = 1,
    ases: int = 300,
    vps: int = 12,
    months=("2026-07",),
    snapshots_per_month: int = 2,
    progress=None,
    min_coverage: float = 0.9,
    ground_truth: bool = True,
    method_params=None,
    workers: int | None = None,
    every_hours: int = 24,
    churn: bool = True,
) -> dict:
    """Generate the archive under out_dir and return a summary.

    progress(completed, total, description) is called as work advances (units: one per
    routing pass and one per file). ground_truth=False skips the reference (fast path for
    very large archives). method_params (a MethodParams) replaces the default one, which
    has the groups of common/groups.toml and `min_coverage`. workers: processes writing
    files when ground_truth is off (default: one per CPU); with ground truth one process
    writes, since the reference reads the rows in order. Each of the first
    `snapshots_per_month` days has a snapshot every `every_hours` hours from 00:00; `churn`:
    routes change between them as real ones do (synth/churn.py; off: the months of before).
    """
    t0 = time.perf_counter()
    out = Path(out_dir)
    months = list(months)
    if not 1 <= snapshots_per_month <= 28:
        raise ValueError("snapshots_per_month must be in 1..28")
    if every_hours not in (1, 2, 3, 4, 6, 8, 12, 24):
        raise ValueError("every_hours must divide 24")
    if not 1 <= vps <= min(ases, 1000):
        raise ValueError("vps must be in 1..min(ases, 1000)")
    if not 0.0 <= min_coverage <= 1.0:
        raise ValueError("min_coverage must be in [0, 1]")
    workers = default_workers() if workers is None else workers
    if workers < 1:
        raise ValueError("workers must be at least 1")
    compute_month = params = None
    if ground_truth:
        compute_month = reference.compute_month
        params = method_params or MethodParams(min_coverage=min_coverage, groups=load_groups())
    net = Internet.build(seed, ases)
    vplist = choose_vps(net, seed, vps)
    _remove_previous(out)
    per_month = snapshots_per_month * (24 // every_hours)
    prog = _Progress(progress, len(months) * (2 + per_month * len(COLLECTORS)))
    files, gt = [], {}
    for month in months:
        fams = {}
        times = snapshot_times(month, snapshots_per_month, every_hours)
        hours = [(t - times[0]).total_seconds() / 3600 for t in times] if churn else None
        for afi in (4, 6):
            fams[afi] = family_month(net, vplist, month, afi, seed, per_month, prog.tick, hours)
            prog.finish_unit(f"{month} routing IPv{afi} done")

        def month_rows():
            for snap, when in enumerate(times):
                for c in COLLECTORS:
                    stats = _file_stats(c, month, when)
                    emit = compute_month is not None
                    yield from write_file(out / stats["path"], c, snap, when, fams, vplist, emit, stats, prog.tick)
                    files.append(stats)
                    prog.finish_unit(f"{c.name} {when:%Y-%m-%d %H:%M} done")

        rows = month_rows()
        if compute_month is None and workers > 1:
            jobs = [(snap, when, ci) for snap, when in enumerate(times) for ci in range(len(COLLECTORS))]
            files += _write_parallel(out, month, fams, vplist, jobs, min(workers, len(jobs)), prog)
        elif compute_month is None:
            for _ in rows:
                pass
        else:
            result = compute_month(rows, month, params)
            if next(rows, rows) is not rows:
                raise RuntimeError("compute_month did not consume every row")
            _write_ground_truth(out, month, result)
            gt[month] = (result.get("month_summary") or [None])[0]
    files.sort(key=lambda f: f["path"])
    by_afi = {a: sum(f["entries"].get(a, 0) for f in files) for a in ("4", "6")}
    total = sum(by_afi.values())
    (out / "ground_truth").mkdir(parents=True, exist_ok=True)
    listing = {"files": files, "entries": total, "entries_by_afi": by_afi}
    (out / "ground_truth" / "files.json").write_text(json.dumps(listing, indent=1) + "\n")
    params_doc = {
        "generator": "synth",
        "version": VERSION,
        "seed": seed,
        "ases": ases,
        "vps": vps,
        "months": months,
        "snapshots_per_month": snapshots_per_month,
        "every_hours": every_hours,
        "churn": churn,
        "min_coverage": params.min_coverage if params else min_coverage,
        "ground_truth": ground_truth,
        "collectors": [{"name": c.name, "project": c.project, "site": c.site, "afis": list(c.afis)} for c in COLLECTORS],
        "vantage_points": [
            {"asn": vp.asn, "tier": net.tier[vp.idx], "partial": vp.partial, "default_route": vp.default_route,
             "sites": list(vp.sites)}
            for vp in vplist
        ],
        "topology": {
            "tiers": {str(t): net.tier.count(t) for t in (1, 2, 3, 4)},
            "c2p_v4": len(net.c2p),
            "p2p_v4": len(net.p2p),
            "ipv6_hub": net.asns[net.hub],
            "ipv6_adopters": {m: sum(net.adopted(m)) for m in months},
            "prefixes": {m: {"4": len(net.month_prefixes(4, m)), "6": len(net.month_prefixes(6, m))} for m in months},
        },
    }
    (out / "SYNTH.json").write_text(json.dumps(params_doc, indent=1) + "\n")
    seconds = time.perf_counter() - t0
    return {
        **{k: params_doc[k] for k in ("seed", "ases", "vps", "months", "snapshots_per_month", "min_coverage")},
        "out": str(out),
        "files": len(files),
        "entries": total,
        "entries_by_afi": by_afi,
        "seconds": round(seconds, 3),
        "entries_per_second": round(total / seconds) if seconds else None,
        "ground_truth": gt if ground_truth else None,
    }
