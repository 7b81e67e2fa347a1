"""Router-level congruency of one destination: each family's stable path (dataplane/stable.py),
its hops mapped to ASes by longest-prefix match over the month's RIB prefixes (the same
match `advise` uses, selector/month.py), the AS path that results checked against the BGP
paths the month's `advise` gives, and the two families compared at AS and router level.

Choices, named:
- A hop's AS is the origin of the longest RIB prefix of the month covering its address
  (the most seen origin where a prefix has several). An address no prefix covers is
  `private` when it is not globally routable (RFC 1918, link-local, ...) and `unmapped`
  otherwise (an IXP LAN or an unannounced router link: the month's RIBs cannot tell them
  apart, so neither is guessed). Both are left out of the AS path.
- The trace's AS path: the source AS, then the hops' ASes in order, repeats folded,
  unmapped and `*` hops skipped (a trace shows no hop inside its own host). Against the BGP path: `equal`; `consistent` (the trace's ASes appear on the
  BGP path in the same order, some unseen: no answer or unmapped); else `differs`.
- Across families, only where both stable paths reach the destination (the destination
  answered at their last hop: a path cut short is not the whole path), at AS level as the
  selector classes a pair (selector/rules.classify: congruent, disjoint, shared-edge,
  shared-core); traces of several sources are never merged (--source picks one); at
  router level, an IPv4 and an IPv6 address are never the same address, so shared routers
  need alias data (`aliases`: each entry the addresses of one router); without it the
  router-level answer is a lower bound (0 shared routers known).
"""
from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from bgp_congruency.common import duck
from bgp_congruency.common.config import Config
from bgp_congruency.dataplane.stable import StablePath, stable_path
from bgp_congruency.dataplane.traces import Trace, TraceError, address
from bgp_congruency.selector.advice import advise
from bgp_congruency.selector.month import lookup_origins, resolve_month
from bgp_congruency.selector.question import parse_source
from bgp_congruency.selector.rules import classify


def select(traces: Sequence[Trace], to: Sequence[str] | None, sources: Sequence[str] | None = None
           ) -> dict[int, list[Trace]]:
    """The traces of each family from one source toward one destination: per family the only
    one, or with `to` (`sources`) the family's address there (a family `to` does not name is
    left out). Traces of several sources are never merged into one stable path."""
    wanted = dict(address(a, "--to") for a in to or ())  # canonical address -> family
    froms = dict(address(a, "--source") for a in sources or ())
    out: dict[int, list[Trace]] = {}
    for fam in (4, 6):
        ts = [t for t in traces if t.family == fam]
        dsts = sorted({t.dst for t in ts})
        mine = {a for a, v in wanted.items() if v == fam}
        pick = [d for d in dsts if d in mine] if wanted else dsts  # --to names the families wanted
        if len(pick) > 1:
            raise TraceError(f"IPv{fam} traces go to {len(pick)} destinations ({', '.join(pick[:4])}): "
                             "choose one with --to ADDR")
        if not pick:
            continue
        ts = [t for t in ts if t.dst == pick[0]]
        own = {a for a, v in froms.items() if v == fam}
        srcs = sorted({t.src or "?" for t in ts})
        if own:
            ts = [t for t in ts if t.src in own]
        elif len(srcs) > 1:
            raise TraceError(f"IPv{fam} traces to {pick[0]} come from {len(srcs)} sources ({', '.join(srcs[:4])}): "
                             "one stable path is one source's; choose it with --source ADDR")
        if ts:
            out[fam] = ts
    if not out:
        raise TraceError("no traceroute toward " + (", ".join(sorted(wanted)) if wanted else "any destination")
                         + (" from " + ", ".join(sorted(froms)) if froms else ""))
    return out


def as_path(hop_asns: Sequence[int | None]) -> list[int]:
    """The ASes of the hops in order, repeats folded, unmapped hops skipped."""
    out: list[int] = []
    for a in hop_asns:
        if a is not None and (not out or out[-1] != a):
            out.append(a)
    return out


def agreement(trace_path: Sequence[int], bgp: Sequence[int] | None) -> str:
    """`equal`, `consistent` (an in-order subsequence of the BGP path), `differs`, or `no BGP path`."""
    if not bgp:
        return "no BGP path"
    if list(trace_path) == list(bgp):
        return "equal"
    it = iter(bgp)
    return "consistent" if trace_path and all(a in it for a in trace_path) else "differs"


def shared_routers(v4: set[str], v6: set[str], aliases: Sequence[Sequence[str]] | None) -> list[list[str]]:
    """The routers (alias sets) with an address on both families' stable paths."""
    out = []
    for router in aliases or ():
        addrs = {str(ipaddress.ip_address(a)) for a in router}
        if addrs & v4 and addrs & v6:
            out.append(sorted(addrs & (v4 | v6)))
    return out


def map_addresses(cfg: Config, month: str, addrs: set[str]) -> dict[str, tuple[str, int | None, str | None]]:
    """address -> (kind, asn, prefix): kind `private`, `unmapped` or `mapped`."""
    nets = {a: ipaddress.ip_network(a) for a in addrs}  # a host network: /32 or /128
    con = duck.connect(cfg)
    try:
        hits = lookup_origins(con, cfg, month, nets)
    finally:
        con.close()
    out = {}
    for a in nets:
        hit = hits.get(a)
        out[a] = ("mapped", hit[1], hit[0]) if hit else \
            ("unmapped", None, None) if ipaddress.ip_address(a).is_global else ("private", None, None)
    return out


def analyse(cfg: Config, traces: Sequence[Trace], *, source: str | None = None, to: Sequence[str] | None = None,
            month: str | None = None, aliases: Sequence[Sequence[str]] | None = None,
            sources: Sequence[str] | None = None) -> dict:
    """The answer for one destination (both families where traces reach it), as a dict (--json)."""
    month = resolve_month(cfg, month)
    src_asn = parse_source(source).asn if source is not None else None  # ASN, AS6939 or GROUP:ASN
    groups = select(traces, to, sources)
    paths: dict[int, StablePath] = {f: stable_path([t.hops for t in ts]) for f, ts in groups.items()}
    addrs = {a for sp in paths.values() for h in sp.hops for a in h.addresses}
    srcs = {t.src for ts in groups.values() for t in ts if t.src}
    dsts = {f: groups[f][0].dst for f in groups}
    mapping = map_addresses(cfg, month, addrs | srcs | set(dsts.values()))
    if src_asn is None:
        found = sorted({mapping[s][1] for s in srcs if mapping[s][1] is not None})
        if len(found) != 1:
            raise TraceError("--from: the traces' source addresses map to "
                             + (f"{len(found)} ASes ({', '.join(map(str, found))})" if found else "no AS")
                             + f" in {month}; give the source AS")
        src_asn = found[0]
        source = str(src_asn)
    hint = advise(cfg, source, [dsts[f] for f in sorted(dsts)], month=month)["hints"][0]
    fams, stable_as = {}, {}
    for f, sp in sorted(paths.items()):
        hops = []
        for h in sp.hops:
            kinds = [mapping[a] for a in h.addresses]
            asns = sorted({k[1] for k in kinds if k[1] is not None})
            hops.append({"ttl": h.ttl, "addresses": list(h.addresses), "load_balanced": h.load_balanced,
                         "asn": asns[0] if len(asns) == 1 else None, "asns": asns,
                         "kind": "no answer" if not h.addresses else
                         ("mapped" if asns else "private" if all(k[0] == "private" for k in kinds) else "unmapped"),
                         "prefix": next((k[2] for k in kinds if k[2]), None)})
        path = as_path([src_asn, *(h["asn"] for h in hops)])
        # The destination answered on the stable path: only then is it the whole path.
        reached = bool(sp.hops) and dsts[f] in sp.hops[-1].addresses
        bgp = hint.get(f"v{f}_path")
        fams[str(f)] = {"destination": dsts[f], "destination_asn": mapping[dsts[f]][1], "traces": sp.traces,
                        "methods": sorted({t.method for t in groups[f]}), "stable": sp.stable,
                        "stable_support": sp.support, "stable_share": round(sp.share, 3), "reached": reached,
                        "hops": hops, "as_path": path, "bgp_path": list(bgp) if bgp else None,
                        "agreement": agreement(path, bgp) if sp.stable else "no stable path"}
        if sp.stable and reached:
            stable_as[f] = path
    comparison = {"as_level": None, "shared_asns": None, "router_level": None}
    if len(stable_as) == 2:  # both families' stable paths reach the destination
        v4, v6 = stable_as[4], stable_as[6]
        d4, d6 = mapping[dsts[4]][1], mapping[dsts[6]][1]
        cls, shared = classify(v4, v6, src_asn, d4 if d4 is not None else v4[-1], d6 if d6 is not None else v6[-1])
        comparison["as_level"], comparison["shared_asns"] = cls, shared
        on = {f: {a for h in fams[str(f)]["hops"] for a in h["addresses"]} for f in (4, 6)}
        routers = shared_routers(on[4], on[6], aliases)
        comparison["router_level"] = {
            "shared_routers": routers, "aliases_known": aliases is not None,
            "disjoint": not routers if aliases is not None else None,  # unknown without alias data
            "note": ("with the given aliases" if aliases is not None else
                     "no alias data: an IPv4 and an IPv6 address are never equal, so 0 shared routers "
                     "is a lower bound (give --aliases)")}
    missing = [f"IPv{f}: no traceroute toward the destination's IPv{f} address, so the families are not "
               f"compared (give one: --atlas/--warts results or --live ADDR, and --to)" for f in (4, 6) if f not in groups]
    missing += [f"IPv{f}: the stable path does not reach {dsts[f]}, so the families are not compared at AS level"
                for f, sp in sorted(paths.items()) if sp.stable and f not in stable_as]
    return {"month": month, "source_asn": src_asn, "families": fams, "comparison": comparison, "missing": missing,
            "advise": {k: hint.get(k) for k in ("hint_class", "mode", "confidence", "reason")}}
