"""The source's neighbours from its own traceroutes (issue 47): per family and destination,
the first hop in another AS on the stable path of the traces toward it (dataplane/stable.py),
hops mapped to ASes by longest-prefix match over the month's RIB prefixes (as `trace` does,
dataplane/analysis.py). What `advise --atlas/--warts/--stored-traces` hands the selector
(selector/question.Evidence): the neighbour toward that destination, and a neighbour for the
other destinations.

Along the stable path, in order:
- leading hops that are private (not globally routable: a LAN, a CPE) or unmapped (no RIB
  prefix covers them), or that did not answer, are skipped;
- the trace must start at the source: the host's address (Atlas's `from`) is in the source AS
  (`--from`), or, where it maps to no AS, its first mapped hop is; a trace whose first mapped
  AS is another one is refused, naming the file, the trace and the AS found;
- then the first hop mapped to another AS is the neighbour. An unmapped hop between the
  source's last hop and it (an IXP LAN, or an unannounced link) makes the boundary unknown:
  refused, naming the hop. A hop that did not answer there is passed over (no address to map).
- A trace with no mapped hop, or that never leaves the source AS, is refused too.

A refused trace is left out, and the answer says so (`Evidence.left_out`): a RIPE Atlas
measurement mixes probes in many ASes and several targets. Only a file none of whose traces
is usable is refused, in one line. Traces are grouped by the host they start from (Atlas's
`from`), family and destination: different probes' paths are never merged into one.
"""
from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Sequence

from bgp_congruency.common.config import Config
from bgp_congruency.dataplane.analysis import map_addresses
from bgp_congruency.dataplane.stable import stable_path
from bgp_congruency.dataplane.traces import Trace, TraceError
from bgp_congruency.lake import published
from bgp_congruency.selector.month import data_root
from bgp_congruency.selector.question import Evidence, Neighbour


def first_hop(hops: Sequence[tuple[str | None, str, int | None]], src: int, where: str) -> int:
    """The neighbour AS from one stable path's hops, each (address or None, kind, ASN) with kind
    `mapped`, `private`, `unmapped` or `no answer` (the module's rules)."""
    seen_src = False
    pending = None  # an unmapped hop after the source's hops: the boundary is not known
    for addr, kind, asn in hops:
        if kind == "mapped":
            if not seen_src and asn != src:
                raise TraceError(f"{where}: the first hop that maps to an AS ({addr}) is in AS{asn}, not in --from "
                                 f"AS{src}: the trace does not start at the source (another host's trace?)")
            if asn == src:
                seen_src, pending = True, None
                continue
            if pending is not None:
                raise TraceError(f"{where}: hop {pending} between the source's last hop and AS{asn} maps to no "
                                 "AS (an IXP LAN or an unannounced link): which AS is the neighbour is not known")
            return int(asn)
        if kind == "unmapped" and seen_src:
            pending = addr
    if not hops:
        raise TraceError(f"{where}: no hop answered on the traces' stable path: no neighbour to read")
    if not seen_src:
        raise TraceError(f"{where}: no hop maps to an AS of the month's RIB prefixes (only "
                         + ", ".join(sorted({k for _a, k, _n in hops})) + " hops): no neighbour to read")
    raise TraceError(f"{where}: the trace never leaves AS{src} (its destination is inside it): no neighbour to read")


def evidence(cfg: Config, month: str, traces: Sequence[Trace], src: int, how: str) -> Evidence:
    """Evidence from the traces that start at the source: per probe host, family and
    destination the traces' stable path, its first hop in another AS. A RIPE Atlas measurement
    mixes probes and targets: a trace the rules refuse (another host's, one that never leaves
    the source, an unmapped boundary) is left out and said in `left_out`; where the source's
    hosts disagree on a destination's first hop, the one most of them show (ties: the first
    host's). TraceError (one line naming the file) when no trace is left."""
    groups: dict[tuple[str | None, int, str], list[Trace]] = defaultdict(list)
    for t in traces:
        groups[(t.src, t.family, t.dst)].append(t)
    addrs = {a for t in traces for h in t.hops for a in h if a} | {t.dst for t in traces}
    mapping = map_addresses(cfg, month, addrs)
    shown: dict[tuple[int, int], list[int]] = defaultdict(list)
    file = traces[0].origin.rsplit(" result ", 1)[0] if traces else "the traces"
    first_other, other_hops = "", ((), "")
    left: list[str] = []  # the source's own traces refused, and why
    others = 0  # traces of hosts elsewhere (their first mapped hop, or their address, in another AS)
    for (host, fam, dst), ts in sorted(groups.items(), key=lambda kv: (kv[0][0] or "", kv[0][1], kv[0][2])):
        sp = stable_path([t.hops for t in ts])
        hops = []
        for h in sp.hops:
            if not h.addresses:
                hops.append((None, "no answer", None))
                continue
            a = h.addresses[0]
            kind, asn, _prefix = mapping[a]
            hops.append((a, kind if asn is not None or kind != "mapped" else "unmapped", asn))
        where = ts[0].origin + (f" (and {len(ts) - 1} more trace(s) from {host} to {dst})" if len(ts) > 1 else "")
        host_as = mapping[host][1] if host in mapping else None
        first_as = next((asn for _a, kind, asn in hops if kind == "mapped" and asn is not None), None)
        other = (host_as if host_as is not None else first_as) != src
        try:
            if other:  # another probe of the measurement, or one nothing places in the source AS
                raise TraceError(f"{where}: from {host}, " + (f"in AS{host_as}" if host_as is not None else
                                 f"its first mapped hop in AS{first_as}" if first_as is not None else
                                 "no hop of it in the month's prefixes") + f", not in --from AS{src}")
            n = first_hop(hops, src, where)
            dest = mapping[dst][1]
            if dest is None:
                raise TraceError(f"{where}: the destination {dst} maps to no AS of the month's RIB prefixes")
        except TraceError as exc:
            if not other:
                left.append(str(exc))
            elif not others:
                first_other, other_hops = str(exc), (hops, where)
            others += len(ts) if other else 0
            continue
        shown[(fam, int(dest))].append(n)
    if others:
        left.append(f"{others} trace(s) of hosts that are not in AS{src} (the first: "
                    f"{first_other.removeprefix(file + ' ')})")
    if not shown:
        if len(groups) == 1:  # one trace (group): its own reason, as the rules give it
            if others:
                first_hop(*other_hops[:1], src, other_hops[1])
                raise TraceError(first_other + ": the trace does not start at the source (another host's trace?)")
            raise TraceError(left[0])
        said = [x.removeprefix(file + " ") for x in left[:3]]
        raise TraceError(f"{file}: no trace of AS{src} gives a first hop: " + "; ".join(said)
                         + ("; ..." if len(left) > 3 else ""))
    first: dict[tuple[int, int], int] = {}
    order: dict[int, list[int]] = {4: [], 6: []}
    for (fam, dest), ns in sorted(shown.items()):
        first[(fam, dest)] = n = max(dict.fromkeys(ns), key=ns.count)
        if len(set(ns)) > 1:
            left.append(f"the source's hosts disagree on IPv{fam} AS{dest}'s first hop (" + ", ".join(
                f"AS{a} x{ns.count(a)}" for a in dict.fromkeys(ns)) + f"): AS{n} is used")
        if n not in order[fam]:
            order[fam].append(n)
    via = {fam: tuple(Neighbour(a, "provider", i) for i, a in enumerate(ns)) for fam, ns in order.items() if ns}
    return Evidence(via, first, how, tuple(left))


def stored_evidence(cfg: Config, month: str, src: int) -> Evidence:
    """Evidence from the month's stored traces of the source (`congruency trace --store`): each
    stored stable path's hops (address, ASN as mapped when stored), the latest run per family
    and destination. TraceError when the month has none of this source."""
    root = data_root(cfg)
    rows = [r for r in published.read(root, "traces", month).to_pylist() if r["source_asn"] == src] \
        if month in published.months(root, "traces") else []
    if not rows:
        raise TraceError(f"--stored-traces: {month} has no stored traces from AS{src} (congruency trace --store)")
    latest: dict[tuple[int, int], dict] = {}
    for r in sorted(rows, key=lambda r: r["traced_at"]):
        if r["dest_asn"] is not None and r["stable"]:
            latest[(int(r["afi"]), int(r["dest_asn"]))] = r
    first: dict[tuple[int, int], int] = {}
    order: dict[int, list[int]] = {4: [], 6: []}
    for (fam, dest), r in sorted(latest.items()):
        hops = []
        for a, asn in zip(r["hop_addresses"], r["hop_asns"]):
            if not a:
                hops.append((None, "no answer", None))
            elif asn is not None:
                hops.append((a, "mapped", int(asn)))
            else:
                hops.append((a, "unmapped" if ipaddress.ip_address(a).is_global else "private", None))
        n = first_hop(hops, src, f"stored trace of {month} to {r['destination']} (IPv{fam}, {r['traced_at']})")
        first[(fam, dest)] = n
        if n not in order[fam]:
            order[fam].append(n)
    via = {fam: tuple(Neighbour(a, "provider", i) for i, a in enumerate(ns)) for fam, ns in order.items() if ns}
    return Evidence(via, first, "stored traces")
