"""Pure-Python reference of the whole method (METHOD.md) for one month: rows in, output tables out.

The Spark job (`pipeline/engines/spark.py`) must agree with `compute_month` row for row.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from bgp_congruency.common.params import MethodParams
from bgp_congruency.common.tables import TABLES
from bgp_congruency.congruency.method import (
    KEPT,
    clean_path,
    divergence,
    edit_distance,
    non_adopters,
    quantiles_linear,
    representative_path,
    set_hop_path,
    shared_adjacent,
    shared_asns,
)

AFIS = (4, 6)


def _frac(num: int, den: int) -> float | None:
    return num / den if den else None


def compute_month(rows: Iterable[Mapping[str, Any]], month: str, params: MethodParams) -> dict[str, list[dict]]:
    """All output tables of one month, as lists of dicts keyed by the columns of common/tables.py."""
    stats: Counter[tuple[int, str]] = Counter()
    sessions: dict[tuple[str, int], dict[int, set[str]]] = defaultdict(lambda: {4: set(), 6: set()})
    # (vp_group, vp_asn, origin, afi) -> cleaned path -> [observations, prefixes, snapshots]
    obs: dict[tuple[str, int, int, int], dict[tuple[int, ...], list]] = defaultdict(dict)

    by_prefix = params.destination == "prefix"
    # (vp_group, vp_asn, afi, prefix) -> cleaned path -> [observations, snapshots]
    obs_p: dict[tuple[str, int, int, str], dict[tuple[int, ...], list]] = defaultdict(dict)
    if params.snapshots == "first":  # each collector's first snapshot of the month only
        rows = list(rows)
        first: dict[str, Any] = {}
        for r in rows:
            t = r["snapshot_time"]
            if t is not None and (r["collector"] not in first or t < first[r["collector"]]):
                first[r["collector"]] = t
        rows = [r for r in rows if r["snapshot_time"] is not None and r["snapshot_time"] == first[r["collector"]]]
    # -- one pass: cleaning (step 1-2) and aggregation by (VP, origin, AFI, path) (step 3-4)
    for r in rows:
        afi, peer_asn = int(r["afi"]), int(r["peer_asn"])
        as_path, has_set = r["as_path"], bool(r["has_as_set"])
        if has_set and params.as_set == "hop" and (hop := set_hop_path(r.get("as_path_raw"))) is not None:
            as_path, has_set = list(hop), False  # each AS_SET one hop (METHOD.md "Sensitivity")
        reason, path = clean_path(r["prefix"], as_path, has_set, peer_asn, params)
        stats[(afi, reason or KEPT)] += 1
        if reason is not None:
            continue
        vp = (params.group_of(r["collector"]), peer_asn)
        sessions[vp][afi].add(str(r["peer_ip"]))
        acc = obs[(*vp, path[-1], afi)].get(path)
        if acc is None:
            acc = obs[(*vp, path[-1], afi)][path] = [0, set(), set()]
        acc[0] += 1
        acc[1].add(r["prefix"])
        acc[2].add(r["snapshot_time"])
        if by_prefix:  # destination "prefix": observations per (VP, AFI, prefix) as well
            pacc = obs_p[(*vp, afi, r["prefix"])].setdefault(path, [0, set()])
            pacc[0] += 1
            pacc[1].add(r["snapshot_time"])

    # -- step 4: representative paths; month-wide sets for steps 5, 6, 7 and 8
    origins_all: dict[int, set[int]] = {4: set(), 6: set()}
    vp_origins: dict[tuple[str, int], dict[int, set[int]]] = defaultdict(lambda: {4: set(), 6: set()})
    v6_asns: set[int] = set()
    intermediate: set[int] = set()
    rep: dict[tuple[str, int, int, int], tuple[int, ...]] = {}
    paths = []
    for key in sorted(obs):
        group, vp_asn, origin, afi = key
        by_path = obs[key]
        for p in by_path:
            intermediate.update(p[1:-1])
            if afi == 6:
                v6_asns.update(p)
        origins_all[afi].add(origin)
        vp_origins[(group, vp_asn)][afi].add(origin)
        best = rep[key] = representative_path({p: (a[0], len(a[1]), len(a[2])) for p, a in by_path.items()},
                                              params.representative)
        n_all, (n_best, prefixes, snaps) = sum(a[0] for a in by_path.values()), by_path[best]
        paths.append(dict(
            month=month, vp_group=group, vp_asn=vp_asn, dest_asn=origin, afi=afi, path=list(best),
            observations=n_all, path_observations=n_best, stability=n_best / n_all,
            prefixes=len(prefixes), snapshots=len(snaps),
        ))

    # destination "prefix": a representative path per (VP, AFI, prefix); a VP's origins are
    # its representatives' (the pairs then match IPv4 and IPv6 prefixes by origin)
    by_origin_prefixes: dict[tuple[str, int, int, int], list[tuple[int, ...]]] = defaultdict(list)
    if by_prefix:
        vp_origins = defaultdict(lambda: {4: set(), 6: set()})
        for (group, vp_asn, afi, prefix), by_path in sorted(obs_p.items()):
            best = representative_path({p: (a[0], 1, len(a[1])) for p, a in by_path.items()}, params.representative)
            vp_origins[(group, vp_asn)][afi].add(best[-1])
            by_origin_prefixes[(group, vp_asn, best[-1], afi)].append(best)

    # -- step 5: VPs; step 7: pairs of default-free VPs
    pairs, vps = [], []
    for vp in sorted(sessions):
        group, vp_asn = vp
        orig = vp_origins[vp]
        cov = {a: _frac(len(orig[a]), len(origins_all[a])) for a in AFIS}
        dual = bool(orig[4]) and bool(orig[6])
        default_free = dual and all(cov[a] >= params.min_coverage for a in AFIS)
        vp_pairs = []
        if default_free:
            combos = [(dest, v4, v6) for dest in sorted((orig[4] & orig[6]) - {vp_asn})  # dual-stacked
                      for v4 in (by_origin_prefixes[(group, vp_asn, dest, 4)] if by_prefix else
                                 [rep[(group, vp_asn, dest, 4)]])
                      for v6 in (by_origin_prefixes[(group, vp_asn, dest, 6)] if by_prefix else
                                 [rep[(group, vp_asn, dest, 6)]])]
            for dest, v4, v6 in combos:
                shared = shared_asns(v4, v6, vp_asn, dest)
                # "any": congruent when the VP saw one path in both families; "share": when at
                # least half of the (IPv4 path, IPv6 path) combinations are equal (METHOD.md 7)
                p4s, p6s = obs[(group, vp_asn, dest, 4)].keys(), obs[(group, vp_asn, dest, 6)].keys()
                congruent = {"representative": v4 == v6, "any": v4 == v6 or bool(p4s & p6s),
                             "share": len(p4s & p6s) >= params.SHARE_CONGRUENT * len(p4s) * len(p6s)}[params.comparison]
                vp_pairs.append(dict(
                    month=month, vp_group=group, vp_asn=vp_asn, dest_asn=dest,
                    v4_path=list(v4), v6_path=list(v6), congruent=congruent,
                    hops_v4=len(v4) - 1, hops_v6=len(v6) - 1,
                    shared_asns=shared, shared_adjacent=shared_adjacent(v4, v6, shared),
                    non_adopters=non_adopters(v4, vp_asn, dest, v6_asns),
                    edit_distance=0 if congruent else edit_distance(v4, v6),
                ))
        n_nc = sum(not p["congruent"] for p in vp_pairs)
        pairs.extend(vp_pairs)
        vps.append(dict(
            month=month, vp_group=group, vp_asn=vp_asn,
            sessions_v4=sorted(sessions[vp][4]), sessions_v6=sorted(sessions[vp][6]),
            origins_v4=len(orig[4]), origins_v6=len(orig[6]),
            coverage_v4=cov[4], coverage_v6=cov[6],
            dual_stacked=dual, default_free=default_free,
            vp_class="transit" if vp_asn in intermediate else "edge",
            pairs=len(vp_pairs), noncongruent_pairs=n_nc, noncongruent_fraction=_frac(n_nc, len(vp_pairs)),
        ))

    # -- month summary
    nc = [p for p in pairs if not p["congruent"]]
    cong_hops = Counter(min(p["hops_v4"], 3) for p in pairs if p["congruent"])
    nc_shared = Counter(min(len(p["shared_asns"]), 2) for p in nc)
    with_shared = sum(bool(p["shared_asns"]) for p in nc)
    all_adj = sum(p["shared_adjacent"] is True for p in nc)
    with_na = sum(bool(p["non_adopters"]) for p in nc)
    q = quantiles_linear(
        [v["noncongruent_fraction"] for v in vps if v["pairs"] > 0], (0.0, 0.25, 0.5, 0.75, 1.0)
    )
    summary = dict(
        month=month,
        vps=len(vps),
        vps_dual_stacked=sum(v["dual_stacked"] for v in vps),
        vps_default_free=sum(v["default_free"] for v in vps),
        vps_with_pairs=sum(v["pairs"] > 0 for v in vps),
        destinations=len(origins_all[4] & origins_all[6]),
        pairs=len(pairs),
        noncongruent_pairs=len(nc),
        noncongruent_fraction=_frac(len(nc), len(pairs)),
        congruent_1hop=cong_hops[1],
        congruent_2hop=cong_hops[2],
        congruent_3plus_hops=cong_hops[3],
        noncongruent_shared_0=nc_shared[0],
        noncongruent_shared_1=nc_shared[1],
        noncongruent_shared_2plus=nc_shared[2],
        noncongruent_with_shared=with_shared,
        shared_all_adjacent=all_adj,
        shared_all_adjacent_fraction=_frac(all_adj, with_shared),
        noncongruent_with_non_adopter=with_na,
        non_adopter_fraction=_frac(with_na, len(nc)),
        vp_noncongruent_min=q[0],
        vp_noncongruent_q1=q[1],
        vp_noncongruent_median=q[2],
        vp_noncongruent_q3=q[3],
        vp_noncongruent_max=q[4],
    )

    cleaning = [dict(month=month, afi=afi, reason=reason, entries=n) for (afi, reason), n in sorted(stats.items())]
    div = [dict(month=month, vp_group=p["vp_group"], vp_asn=p["vp_asn"], dest_asn=p["dest_asn"],
                **divergence(p["v4_path"], p["v6_path"])) for p in nc]
    return {"cleaning_stats": cleaning, "paths": paths, "vps": vps, "pairs": pairs, "divergence": div,
            "month_summary": [summary]}


def transitions(month: str, pairs: Iterable[Mapping], prev_pairs: Iterable[Mapping],
                prev_vps: Iterable[Mapping], prev_paths: Iterable[Mapping]) -> list[dict]:
    """Pairs of `month` that became congruent since the month before (METHOD.md)."""
    before = {(r["vp_group"], r["vp_asn"], r["dest_asn"]): r for r in prev_pairs}
    old_vps = {(r["vp_group"], r["vp_asn"]) for r in prev_vps}
    had_v6 = {r["dest_asn"] for r in prev_paths if r["afi"] == 6}
    out = []
    for r in pairs:
        key = (r["vp_group"], r["vp_asn"], r["dest_asn"])
        prev = before.get(key)
        if not r["congruent"] or key[:2] not in old_vps or (prev and prev["congruent"]):
            continue
        kind = "existing_pair" if prev else "new_pair" if r["dest_asn"] in had_v6 else "new_ipv6_destination"
        out.append(dict(month=month, vp_group=key[0], vp_asn=key[1], dest_asn=key[2], kind=kind,
                        v4_path=list(r["v4_path"]), v6_path=list(r["v6_path"]),
                        prev_v4_path=list(prev["v4_path"]) if prev else None,
                        prev_v6_path=list(prev["v6_path"]) if prev else None))
    return sorted(out, key=lambda x: (x["vp_group"], x["vp_asn"], x["dest_asn"]))


def to_arrow(tables: Mapping[str, list[dict]]) -> dict[str, pa.Table]:
    """The tables of `compute_month` as Arrow tables with the schemas of common/tables.py."""
    return {name: pa.Table.from_pylist(list(tables[name]), schema=TABLES[name]) for name in TABLES if name in tables}
