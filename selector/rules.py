"""The path selector's definitions as pure functions: hint class, confidence, advice, and the
choice of k underlay paths that share the fewest ASes.

Path logic (shared ASes, adjacency) comes from congruency/method.py, the functions the
reference and the compare job's tests use; nothing here re-derives it. I/O (reading a month,
address lookups, publishing the `hints` table) is in selector/; rendering to
tunnel configurations is in selector/exports/. Each mode's rationale ends with what the
multipath testbed measured for it (selector/gain.py, from bench/multipath.py).

Class (from one IPv4 path and one IPv6 path from the same source AS):
- `congruent`: the two paths are identical (METHOD.md step 7).
- `disjoint`: not congruent and no shared AS besides the two ends (`shared_asns` empty).
- `shared-edge`: shared ASes exist and every one is adjacent to the source or to the
  destination on BOTH paths: exactly the pairs table's `shared_adjacent = true`. An AS next
  to an end on one path but deep inside the other is a shared transit, so it counts as core.
- `shared-core`: shared ASes exist and at least one is not adjacent on both paths
  (`shared_adjacent = false`).
- `unknown`: the question is valid but the data can't answer it; `reason` says why.

Sources that are not vantage points (`advise --from ASN` where no VP has that ASN). BGP
speakers export only their best path, so a VP path that crosses the source S shows S's own
route from S on; nothing else in the data does. The rule (open choices marked *choice*;
tried in the order through; for a stub provider, then one-neighbour; for any other source
destination; then upstream):
1. Proxies. The VPs whose path to the destination crosses S ("through" proxies; for a host
   whose IPv4 and IPv6 addresses have different origins, the VPs whose IPv4 path to the one or
   IPv6 path to the other crosses S). Only when
   none shows S's route in both families and rules 5-7 give no class: the VPs seen right
   AFTER S on a month's path
   ([.., S, U, ..]: S hands traffic to U, so U is S's provider or peer: an "upstream"),
   with S put in front of their paths (*choice*: the guess that S uses U for this
   destination). A VP that routes THROUGH S (seen right before it) is S's customer or
   peer, never its upstream: its own paths are not S's paths.
2. Each proxy's two paths are built the same way (`from_source`): both from S on, or both
   with S in front. When one family crosses S and the other would be a guess, the guess is
   dropped and that family is unknown for this proxy.
3. Combining proxies that give a class (`combine_proxies`): the most cautious class among
   them (congruent, then shared-core, shared-edge, disjoint: the order of less to more
   aggregation), with the share of proxies that agree with it (*choice*: the cautious
   class rather than the majority, so no proxy's evidence of a shared AS is outvoted).
4. Confidence is the shown proxy's confidence x PROXY_FACTOR x that agreement; when the
   month has been evaluated (`congruency evaluate`), the share of such answers that were
   right there instead (selector/calibration.py). When the proxies disagree or the
   confidence is below PROXY_MIN_CONFIDENCE, an `aggregate` advice falls back to `backup`
   (`advice(..., cautious=why)`).
5. Stubs (`provider`), only when the through proxies give no class and the source is never seen handing
   traffic on (no AS after it on any path of the month: an edge AS, the operator's usual
   case). Per family, its neighbours are the ASes seen right before it on that family's
   paths (its providers and peers); a neighbour's route to the destination is the suffix from
   it on of the paths that cross it, the one most VP ASes show (then the shortest, then the
   lowest ASNs). The source's path is itself in front of the shortest such route
   (`stub_route`), ties to the lowest neighbour ASN (*choice*: Gao-Rexford's
   tie-breaks, without local preference among providers, which the paths do not show).
   Each family chooses on its own, so a stub whose IPv6 provider differs shows it. A transit
   source is kept out: it reaches most destinations through its customers, not through the
   ASes seen before it (measured: that guess is right 37% of the time on the real sample).
6. The destination (`destination`), only when the through proxies give no class and the
   source is not a stub: the class most of the month's pairs to the destination show, whoever their VP
   (`destination_class`; ties to the more cautious class), with the share of pairs that show
   it as the stated confidence; no path is given. *choice*: it is tried before the upstream
   rule, which it beats on the same questions in the held-out evaluation (real sample: 340
   of 484 right against 286; generated month: 61 of 83 against 44 for held-out VPs, 58 of 69
   against 34 for transit ASes); the upstream rule stays for a destination no other VP has a
   pair to, and for a host whose IPv4 and IPv6 addresses have different origins (no pair is
   about both). As for proxies (rule 4), an `aggregate` advice falls back to `backup` unless
   every pair shows the class; the stated confidence is the share of pairs, 1.0 for one pair
   of one (the month's evaluation replaces it with a measured one). Stubs are kept out: on
   the generated month their class is what most VPs see only 42% of the time (203 of 478),
   as a stub's IPv6 often takes another provider than its IPv4, which the VPs' pairs do not
   show.
7. A stub behind one neighbour (`one-neighbour`), only when rule 5 gives no class: the same
   single AS P is seen right before it in both families, so both its paths are P's with it
   in front, and its class follows P's (`BEHIND_ONE_NEIGHBOUR`): congruent stays congruent,
   disjoint becomes shared-edge (P is shared, next to the stub), shared-core stays. Each
   pair to the destination is seen behind P first, then rule 6's vote is taken (so a
   disjoint and a shared-edge pair vote alike). P's class is rule 6's (*choice*: P's own
   pair where P is a VP changed none of the rule's 455 answers on the generated month), and
   shared-edge stays shared-edge (*choice*: a shared AS next to P would be two hops from the
   stub, which the method calls shared-core, but not one next to the destination; not told
   apart here). Measured: 100 of 143 answers right for generated stubs, 228 of 312 for
   held-out VPs that are stubs on the other VPs' paths. A stub whose neighbours differ
   between the families is left unknown: its paths differ from the first hop, but which non-congruent class they
   make was right only half the time (86 of 173, the destination's most common
   non-congruent class).

Rules 8-11 answer from the source's own evidence (declared neighbours, its traceroutes'
first hops) instead of rules 1-7; they are written out below, above their functions
(`best_route`, `exported`, `neighbour_key`), with the two fallbacks measured: rule 11 on
(INFERRED_ROUTES), rule 6 after them off (DESTINATION_FALLBACK).
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from bgp_congruency.congruency.method import shared_adjacent, shared_asns
from bgp_congruency.selector import gain

CLASSES = ("disjoint", "shared-edge", "shared-core", "congruent", "unknown")
MODES = ("aggregate", "backup", "single-path")

#: Stated by every hint.
LOWER_BOUND = (
    "AS-level disjointness is a lower bound: routers, links and IXPs inside an AS, "
    "and the access link, can still be shared."
)
#: Confidence is multiplied by this when the source is not a VP and a proxy VP's paths stand in.
PROXY_FACTOR = 0.5
#: Below this confidence a proxy-based `aggregate` advice is held back to `backup`.
PROXY_MIN_CONFIDENCE = 0.25
#: Classes from less to more cautious advice (aggregate, aggregate, backup, single-path).
CAUTION = ("disjoint", "shared-edge", "shared-core", "congruent")

#: MPT (GRE-in-UDP multipath tunnels) path status codes (its STAT_* values).
MPT_STATUS_OK = 0
MPT_STATUS_DISABLED = 255
#: MPT splits packets over the paths in proportion to weight_out; it must be >= 1.
MPT_WEIGHT_PRIMARY = 10
MPT_WEIGHT_BACKUP = 1

_CC_UPSTREAM = (
    "per-subflow TCP congestion control (each subflow uses net.ipv4.tcp_congestion_control, "
    "e.g. cubic); upstream Linux MPTCP has no coupled congestion control: OLIA and BALIA "
    "existed only in the out-of-tree multipath-tcp.org kernel"
)


def hint_class(congruent: bool, shared: Sequence[int], adjacent: bool | None) -> str:
    """The class of a pair from the method's columns (`congruent`, `shared_asns`, `shared_adjacent`)."""
    if congruent:
        return "congruent"
    if not shared:
        return "disjoint"
    return "shared-edge" if adjacent else "shared-core"


def classify(v4: Sequence[int], v6: Sequence[int], src: int, dest_v4: int,
             dest_v6: int | None = None) -> tuple[str, list[int]]:
    """(class, shared ASes) of an IPv4 and an IPv6 path from `src`, with the method's functions.

    When a host's IPv4 and IPv6 addresses have different origins, both ends are excluded
    from the shared ASes, as the method excludes the one destination of a pair.
    """
    dest_v6 = dest_v4 if dest_v6 is None else dest_v6
    shared = [a for a in shared_asns(v4, v6, src, dest_v4) if a != dest_v6]
    return hint_class(tuple(v4) == tuple(v6), shared, shared_adjacent(v4, v6, shared)), shared


def primary_afi(stability_v4: float | None, stability_v6: float | None,
                hops_v4: int | None, hops_v6: int | None) -> int | None:
    """The family to prefer when only one is used: the one with a path, then the more stable,
    then the shorter; IPv4 on a full tie (the older, usually better provisioned, family)."""
    if stability_v4 is None and stability_v6 is None:
        return None
    if stability_v6 is None:
        return 4
    if stability_v4 is None:
        return 6
    if stability_v4 != stability_v6:
        return 4 if stability_v4 > stability_v6 else 6
    return 6 if (hops_v6 or 0) < (hops_v4 or 0) else 4


#: Why primary_afi kept its family, as the congruent advice says it: the more stable; as
#: stable, the shorter; as stable and as long (IPv4); or no path of the source known (rule 6).
WHY_PRIMARY = ("steadier", "shorter", "tie", "pathless")


def primary_why(stability_v4: float | None, stability_v6: float | None,
                hops_v4: int | None, hops_v6: int | None) -> str:
    """Which of WHY_PRIMARY made primary_afi's choice (the one family with a path: steadier)."""
    if stability_v4 is None or stability_v6 is None or stability_v4 != stability_v6:
        return "steadier"
    return "tie" if (hops_v4 or 0) == (hops_v6 or 0) else "shorter"


def confidence(stability_v4: float | None, stability_v6: float | None, snapshots: int | None,
               month_snapshots: int | None, proxy: bool = False, agreement: float = 1.0) -> float:
    """How far to trust a hint, in [0, 1]:
    min(stability_v4, stability_v6) x min(1, snapshots / month_snapshots) x (PROXY_FACTOR if
    a proxy VP stands in for the source) x agreement (the share of proxies whose paths give
    the same class). `snapshots` is the fewer of the two paths' snapshot counts and
    `month_snapshots` the most any path of the month has. 0 when a path is missing."""
    if stability_v4 is None or stability_v6 is None or not snapshots or not month_snapshots:
        return 0.0
    c = min(stability_v4, stability_v6) * min(1.0, snapshots / month_snapshots)
    if proxy:
        c *= PROXY_FACTOR * agreement
    return round(c, 6)


def from_source(src: int, v4: Sequence[int] | None, v6: Sequence[int] | None,
                upstream: bool) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """A proxy VP's IPv4 and IPv6 paths as the non-VP source `src`'s (rule 2 above): a path
    that crosses `src` from `src` on; else, only for an upstream VP, `src` in front. Both
    families are built the same way: a guess beside an observed route is dropped (None)."""
    def build(p):
        if p is None:
            return None, None
        p = tuple(p)
        if src in p[1:]:
            return "through", p[p.index(src):]
        return ("upstream", (src, *p)) if upstream else (None, None)

    (k4, q4), (k6, q6) = build(v4), build(v6)
    if k4 and k6 and k4 != k6:
        q4, q6 = (None, q6) if k4 == "upstream" else (q4, None)
    return q4, q6


def stub_route(src: int, routes: dict[int, tuple[int, ...]]) -> tuple[int, tuple[int, ...]] | None:
    """(neighbour, the stub `src`'s path) from neighbour -> its route to the destination
    (rule 5 above): `src` in front of the shortest route, ties to the lowest neighbour ASN;
    None without a route."""
    if not routes:
        return None
    n = min(routes, key=lambda a: (len(routes[a]), a))
    return n, (src, *routes[n])


def destination_class(counts: dict[str, int]) -> tuple[str, float]:
    """(the class most pairs to a destination show, the share of pairs showing it) from class
    -> pairs (rule 6 above); ties to the more cautious class; ("unknown", 0.0) without pairs."""
    known = {c: n for c, n in counts.items() if c in CAUTION and n}
    if not known:
        return "unknown", 0.0
    cls = max(known, key=lambda c: (known[c], CAUTION.index(c)))
    return cls, known[cls] / sum(known.values())


# ------------------------------------------------------------------ the source's own evidence
# Rules 8-11 (issues 47 and 59): the operator says which ASes its host hands traffic to in each family
# (`--via4/--via6`, an endpoints or config [source] table) or traces show it (`--atlas`,
# `--warts`, stored traces: the first hop in another AS). Each family's path is chosen on its
# own, in this order:
#  8. `first-hop`: the neighbour toward this destination is known (a trace to it, the
#     evaluation's --reveal first-hop, or the family's sole declared neighbour: `sole_neighbour`):
#     the source in front of that neighbour's route (`best_route`), or (source, destination)
#     when the neighbour is the destination.
#  9. `through`: VPs' paths to the destination cross the source: its own route, the one most VP
#     ASes show (then the shortest, then the lowest ASNs) from the source on. Only when no first
#     hop toward the destination is known: a route through the source that leaves by the known
#     first hop holds that hop's route, which rule 8 takes first, so rule 9 after rule 8 could
#     only give a route that contradicts the trace (measured before this: on the generated
#     scale-250 month with first hops revealed, 555 such answers, 0-22% right; none on the
#     real sample).
# 10. `neighbours`: the source's neighbours in the family are known, not which one this
#     destination uses: among those whose route the month shows and that would give it to
#     the source (`exported`: a provider gives every route, a peer or a customer only its own
#     and its customers'), Gao-Rexford preference (`neighbour_key`): a route through a
#     customer, then a peer, then a provider; then the shortest; then the declared order.
#     The neighbour's relationship is the month's (as_relationships) where it has the link,
#     else the declared one (default: provider); a family's sole neighbour is rule 8's first
#     hop toward every destination (`sole_neighbour`). The export check
#     stays for two or more: measured on the real 2026-07 sample (evaluate --reveal
#     neighbours), without it 2,153 answers, 1,407 right (65.4%); with it 1,987, 1,615 right
#     (81.3%): it makes 208 more answers right than it leaves missing (with the relationships
#     of 2026-11-29, 1,991 and 1,619 with it). Where it falls short is the month's evidence,
#     not the choice: on the generated 400-AS month (12 VPs; its multi-homed stubs and transit
#     sources, true neighbours revealed) 704 of 1,800 family questions get no path, 689 of them
#     because the true first hop is a provider whose route to the destination no VP path shows,
#     and 163 of the 199 that take another neighbour miss an unobserved one the same way.
#     Every route simulated by this preference over the month's inferred relationships would
#     answer 96% of those sources' pairs, 79% right; over the generator's true ones 100%, 92%
#     right; over the inferred links with their true labels 98%, 81% right
#     (bench/route_simulation.py): the links no VP path shows, not the rule or the labels,
#     are what is missing.
# 11. `inferred` (INFERRED_ROUTES): the neighbour the rule reads (a first hop, or a declared
#     neighbour) has no observed route to the destination: it is given one AS further, from
#     the month's relationships of the family: among its neighbours m (not the source) whose
#     best observed route (`best_route`, neither crossing the source nor the neighbour) m would
#     give it (m is its provider, or the route is m's own or its customers'), a customer's
#     first, then a peer's, then a provider's, then the shortest, then the lowest m; the
#     neighbour in front. A declared neighbour that is not the source's provider passes on only
#     such a route through its customer (rule 10's export check).
# The pair's rule is the least sure of its two families' (EVIDENCE_RULES order): without a
# first hop, `through` then `neighbours` then `inferred`; with one whose route is not
# observed, only rule 11. A family with no path by these rules leaves the answer unknown, the other family's
# path kept (DESTINATION_FALLBACK: rule 6 was measured as a further fallback and left out).
# The two fallbacks were first left out as not calibrated (worst bins 0.26-0.29 on the real
# sample); with the reliability bins of the stated confidence (selector/calibration.py: the
# earlier bins split a cell by its sources' accuracy) they are within 0.10 wherever measured,
# so what decided each is written beside it.

#: Rule 6 (`destination`) as the last fallback of the evidence rules: off. Measured on the real
#: 2026-07 sample with first hops revealed, it answered the 542 pairs the evidence rules left
#: (coverage 75.0% -> 100%) 50.7% right (worst calibrated bin 0.023, 0.26 in the earlier bins;
#: bench/reveal.py): right half the time, the weakest answer of any rule, and the month-only
#: rules are not mixed into the evidence rules for less; a family without a path stays unknown.
DESTINATION_FALLBACK = False
#: Rule 11 (`inferred`: a neighbour's route not observed, taken one AS further from the month's
#: relationships): on (since 2026-11-30: calibrated wherever measured, and at scale within the
#: 1.5x of the first-hop mode's cost issue 59 set; the rows it answers carry rule `inferred` and
#: their own calibrated confidence, so an operator who wants only observed routes cuts on it).
#: Measured on the real 2026-07 sample it answered the pairs the first hop's
#: observed route left (coverage 75.0% -> 99.9%, 82.7% of them right; neighbours revealed 64.0%);
#: on the generated 400-AS month it raised the neighbours mode's coverage from 39% to 75% at 71%
#: accuracy; its worst calibrated bin is 0.005-0.051 on both (bench/RESULTS.md; 0.27-0.29 in the
#: earlier bins, from one source's answers, AS1403: 84 congruent, 29% right). On the real sample
#: (2026-11-29) the neighbours mode with it takes 3.4 s against 2.3 s without (it took 12.1 s: a
#: candidate's next link was joined to the relationships in a nested loop, and each neighbour's
#: best route was read once per question instead of once per destination: reveal._inferred).
#: On the generated scale-250 month (2026-11-30, `bench/reveal.py --inferred-at-scale`, 4GB)
#: the first-hop mode's answers take 299.2 s with it against 213.7 s without (1.40x; peak RSS
#: 4.6 GiB; 590.4 s against 374.2 s before each neighbour's best route without the source was
#: read once per source, destination and neighbour), coverage 51.7% -> 90.1%, its own answers
#: 96.0% right.
INFERRED_ROUTES = True
#: What a neighbour is to the source, the most preferred route first (Gao-Rexford).
NEIGHBOUR_CLASSES = ("customer", "peer", "provider")
#: The evidence rules from the surest; a pair's rule is its two families' later one.
EVIDENCE_RULES = ("first-hop", "through", "neighbours", "inferred")


def best_route(cands: Sequence[tuple[bool, int, Sequence[int]]]) -> int | None:
    """The index of the route to use among (own, VP ASes showing it, route) candidates of one
    AS to one destination: its own path where it is a VP (the route it uses), then the route
    most VP ASes show from it on, then the shortest, then the lowest ASNs; None when empty."""
    if not cands:
        return None
    return min(range(len(cands)), key=lambda i: (not cands[i][0], -cands[i][1], len(cands[i][2]), list(cands[i][2])))


def exported(neighbour_is: str, route: Sequence[int], next_is: str | None) -> bool:
    """Whether a neighbour gives the source this route of its (valley-free export): a provider
    every route; a peer or a customer only its own (the route is the neighbour alone) and its
    customers' (`next_is`: what the route's next AS is to the neighbour; unknown: given)."""
    return neighbour_is == "provider" or len(route) == 1 or next_is in (None, "customer")


def sole_neighbour(neighbours: Sequence) -> bool:
    """Whether the source declared one neighbour in the family: the first hop toward every
    destination (rule 8, before rule 9, as a trace's), so its routes are the source's whatever
    the month's relationships call the link (they are inferred, and a sole neighbour that is a
    peer still carries everything the source sends: what it would not export is moot). The
    issue 59 case: AS7018 held out and given its own first hop per destination lost 5 of 22
    answers to the month's inferred 7018-1299 peering, vetoing no wrong answer; and so
    `advise --via4 H4 --via6 H6` answers as `evaluate --reveal first-hop`."""
    return len(neighbours) == 1


def neighbour_key(neighbour_is: str, route: Sequence[int], order: int, asn: int) -> tuple:
    """Rule 10's preference among a source's neighbours for one destination: the route through
    a customer, then a peer, then a provider; then the shortest; then the declared order."""
    return NEIGHBOUR_CLASSES.index(neighbour_is), len(route), order, asn


def weakest(rules: Sequence[str]) -> str:
    """The pair's rule: the later of its families' rules in EVIDENCE_RULES."""
    return max(rules, key=EVIDENCE_RULES.index)


#: The class of a stub behind its one neighbour P (the same in both families), from the class
#: of P's paths (rule 7): P is then shared, next to the stub on both paths.
BEHIND_ONE_NEIGHBOUR = {"congruent": "congruent", "disjoint": "shared-edge", "shared-edge": "shared-edge",
                        "shared-core": "shared-core"}


def combine_proxies(classes: Sequence[str]) -> tuple[str, float]:
    """(the most cautious class, the share of proxies that give it) over the known classes
    of a non-VP source's proxies (rule 3 above); ("unknown", 0.0) when none is known."""
    known = [c for c in classes if c in CAUTION]
    if not known:
        return "unknown", 0.0
    cls = max(known, key=CAUTION.index)
    return cls, known.count(cls) / len(known)


@dataclass(frozen=True)
class Advice:
    """What to configure; every value is true for upstream Linux MPTCP and for MPT."""

    mode: str
    path_manager: str
    congestion_control: str
    transport: str
    rationale: str
    #: `ip mptcp endpoint` flags for the local address of each family (None: no endpoint).
    mptcp_flags_v4: str | None
    mptcp_flags_v6: str | None
    #: MPT [path_N] weight_out and status per family (None: no such path).
    mpt_weight_v4: int | None
    mpt_weight_v6: int | None
    mpt_status_v4: int | None
    mpt_status_v6: int | None

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@functools.lru_cache(maxsize=None)
def advice(cls: str, primary: int | None, cautious: str | None = None, why: str = "steadier") -> Advice:
    """Mode and settings for a class; `primary` is the family kept when only one is used.
    `cautious` says why an `aggregate` advice must not be trusted (a proxy source whose
    proxies disagree or whose confidence is low): it becomes `backup`, the reason in its
    rationale. `why` (WHY_PRIMARY) is why `primary` was kept, as a congruent advice says it:
    steadier, shorter (as steady), a full tie, or pathless (the class comes without the
    source's paths, rule 6).

    disjoint -> aggregate (no shared AS: the case where aggregation works best);
    shared-edge -> aggregate (the shared AS sits next to an end, often the access provider:
    expect at most about +15% unless the bottleneck lies elsewhere);
    shared-core -> backup (a shared transit AS may be the common bottleneck, and uncoupled
    subflows over one bottleneck only take more than a fair share);
    congruent -> single-path (the same AS path twice gives nothing to aggregate);
    unknown -> single-path on the family that has a path.
    """
    other = {4: 6, 6: 4}.get(primary)
    flags: dict[int, str | None] = {4: None, 6: None}
    weight: dict[int, int | None] = {4: None, 6: None}
    status: dict[int, int | None] = {4: None, 6: None}
    mpt_both = ("MPTCP for TCP; MPT (GRE-in-UDP tunnel; measured over 96% efficient on IPv4 underlays "
                "and over 91% on IPv6) to carry UDP as well")
    if cls in ("disjoint", "shared-edge") and cautious and primary is not None:
        mode = "backup"
        flags[primary], weight[primary], status[primary] = "subflow", MPT_WEIGHT_PRIMARY, MPT_STATUS_OK
        flags[other], weight[other], status[other] = "subflow backup", MPT_WEIGHT_BACKUP, MPT_STATUS_DISABLED
        pm = (f"in-kernel path manager: IPv{primary} endpoint 'subflow', IPv{other} endpoint "
              f"'subflow backup' (the server 'signal backup's its IPv{other} address)")
        cc = _CC_UPSTREAM
        transport = mpt_both + (" (MPT has no standby state: the backup path is written "
                                "disabled, status 255; set status 0 to fail over)")
        rationale = (f"The paths look {cls}, but {cautious}, so IPv{other} is kept as a backup "
                     f"for IPv{primary} rather than aggregated.")
    elif cls in ("disjoint", "shared-edge"):
        mode = "aggregate"
        for a in (4, 6):
            flags[a], weight[a], status[a] = "subflow fullmesh", MPT_WEIGHT_PRIMARY, MPT_STATUS_OK
        pm = ("in-kernel path manager: client endpoints 'subflow fullmesh' on its IPv4 and IPv6 "
              "addresses, the server 'signal's its addresses")
        cc = _CC_UPSTREAM + "; uncoupled cubic did better across separate ISPs"
        transport = mpt_both
        rationale = ("The IPv4 and IPv6 paths share no AS, so both can carry traffic at once."
                     if cls == "disjoint" else
                     "The paths share only ASes next to an end, so aggregating both gains at most "
                     "about 15% when the bottleneck lies elsewhere and nothing when it is that AS "
                     "or the access link.")
    elif cls == "shared-core":
        mode = "backup"
        flags[primary], weight[primary], status[primary] = "subflow", MPT_WEIGHT_PRIMARY, MPT_STATUS_OK
        flags[other], weight[other], status[other] = "subflow backup", MPT_WEIGHT_BACKUP, MPT_STATUS_DISABLED
        pm = (f"in-kernel path manager: IPv{primary} endpoint 'subflow', IPv{other} endpoint "
              f"'subflow backup' (the server 'signal backup's its IPv{other} address)")
        cc = _CC_UPSTREAM + "; with a shared bottleneck, keep the second path as backup"
        transport = mpt_both + (" (MPT has no standby state: the backup path is written "
                                "disabled, status 255; set status 0 to fail over)")
        rationale = ("The paths share a transit AS in the core, which can be the common bottleneck, "
                     f"so IPv{other} is kept as a backup for IPv{primary}.")
    elif cls in ("congruent", "unknown"):
        mode = "single-path"
        if primary is not None:
            flags[primary], weight[primary], status[primary] = "subflow", MPT_WEIGHT_PRIMARY, MPT_STATUS_OK
        pm = (f"in-kernel path manager: one 'subflow' endpoint on the IPv{primary} address"
              if primary else "none: no path to use")
        cc = _CC_UPSTREAM
        transport = (f"plain TCP/UDP over IPv{primary}; MPTCP or MPT add failover only"
                     if primary else "none")
        steadier = {"pathless": f"no path of the source is known, so IPv{primary}, the older family, is kept",
                    "shorter": f"both are as steady and IPv{primary} is the shorter one",
                    "tie": f"both are as steady and as long, so IPv{primary}, the older family, is kept",
                    }.get(why, f"IPv{primary} is the steadier one")
        rationale = ("Both families follow the same AS path, so a second subflow adds no AS-level "
                     f"diversity; {steadier}." if cls == "congruent" else
                     (f"Only IPv{primary} has a path, so there is nothing to combine it with."
                      if primary else "There is no path in either family."))
    else:
        raise ValueError(f"unknown hint class {cls!r}")
    rationale += gain.sentence(mode, cls)
    return Advice(mode, pm, cc, transport, rationale, flags[4], flags[6], weight[4], weight[6],
                  status[4], status[6])


# ------------------------------------------------------------------ k paths
@dataclass(frozen=True)
class Candidate:
    """One underlay path to a candidate endpoint: `key` names it (e.g. ('fra1', 6))."""

    key: tuple
    path: tuple[int, ...]
    stability: float


def shared_among(paths: Sequence[Sequence[int]], src: int) -> set[int]:
    """ASes on at least two of the paths, besides the source and besides an AS that is only
    ever the last AS (an endpoint's own network, as the method excludes the destination)."""
    seen: dict[int, int] = {}
    inner: set[int] = set()
    for p in paths:
        for i, a in enumerate(p):
            if a == src:
                continue
            seen[a] = seen.get(a, 0) + 1
            if i != len(p) - 1:
                inner.add(a)
    return {a for a, n in seen.items() if n >= 2 and a in inner}


def selection_key(paths: Sequence[Candidate], src: int) -> tuple:
    """What choose_k minimises: shared ASes; then more distinct AS paths (identical paths, one
    endpoint's IPv4 and IPv6 over the same ASes, never tie with paths that part); then
    -total stability; then total hops."""
    return (len(shared_among([c.path for c in paths], src)), -collapsed(paths),
            -round(sum(c.stability for c in paths), 9), sum(len(c.path) - 1 for c in paths))


def collapsed(paths: Sequence[Candidate]) -> int:
    """How many distinct AS paths the chosen candidates are (fewer than chosen: some follow
    the same ASes, e.g. one endpoint's IPv4 and IPv6 paths)."""
    return len({tuple(c.path) for c in paths})


def rank(cands: Sequence[Candidate]) -> list[Candidate]:
    """Single paths best first: more stable, then shorter, then by key."""
    return sorted(cands, key=lambda c: (-c.stability, len(c.path), repr(c.key)))


#: choose_k gives up (ValueError) rather than search longer than this many subsets.
MAX_SEARCH_NODES = 2_000_000


def choose_k(cands: Sequence[Candidate], k: int, src: int) -> list[Candidate]:
    """The k candidates that share the fewest ASes (ties: the most distinct AS paths, then
    most stable, then shortest, then the earliest in rank order: selection_key). Exact: a
    branch-and-bound search over subsets in rank order; a branch is cut when even its best
    completion (shared ASes so far, which never decrease; every remaining path a new one;
    the most stable and the shortest remaining paths) cannot beat the best set found.
    Raises ValueError past MAX_SEARCH_NODES."""
    if k < 1:
        raise ValueError("k must be >= 1")
    order = rank(cands)
    if k >= len(order):
        return order
    stab = [c.stability for c in order]  # descending: rank sorts by stability first
    hops = [len(c.path) - 1 for c in order]
    best: list | None = None
    best_key: tuple | None = None
    nodes = 0

    def walk(start: int, chosen: list[Candidate], s: float, h: int):
        nonlocal best, best_key, nodes
        nodes += 1
        if nodes > MAX_SEARCH_NODES:
            raise ValueError(f"choosing {k} of {len(order)} paths needs too large a search; ask for fewer")
        need = k - len(chosen)
        if need == 0:
            key = selection_key(chosen, src)
            if best_key is None or key < best_key:
                best, best_key = list(chosen), key
            return
        if best_key is not None:
            bound = (len(shared_among([c.path for c in chosen], src)), -(collapsed(chosen) + need),
                     -round(s + sum(stab[start:start + need]), 9), h + sum(sorted(hops[start:])[:need]))
            if bound >= best_key:
                return
        for i in range(start, len(order) - need + 1):
            chosen.append(order[i])
            walk(i + 1, chosen, s + stab[i], h + hops[i])
            chosen.pop()

    walk(0, [], 0.0, 0)
    return best


def hint_fields(cls: str, stability_v4: float | None, stability_v6: float | None,
                hops_v4: int | None, hops_v6: int | None, snapshots: int | None,
                month_snapshots: int | None, proxy: bool = False, agreement: float = 1.0,
                calibrated: float | None = None, stated: float | None = None) -> dict:
    """Everything a hint derives from its class and its paths' numbers (the columns of the
    `hints` table after the paths): one composition for the table and for `advise`. A proxy
    hint whose proxies disagree or whose confidence is low gets the cautious advice.
    `calibrated`: the month's measured confidence for such an answer (selector/calibration.py),
    used instead of the stated one. `stated`: a rule's own confidence where it gives a class
    without paths (rule 6), whose primary family is then IPv4, primary_afi's full tie."""
    primary = primary_afi(stability_v4, stability_v6, hops_v4, hops_v6)
    if stated is not None and primary is None and cls != "unknown":
        primary = 4
    conf = 0.0 if cls == "unknown" else calibrated if calibrated is not None else stated if stated is not None \
        else confidence(stability_v4, stability_v6, snapshots, month_snapshots, proxy, agreement)
    why = None
    if proxy and cls != "unknown":
        if agreement < 1:
            why = (f"only {agreement:.0%} of the month's pairs to the destination show this class" if stated is not None
                   else f"only {agreement:.0%} of the proxy VPs agree on the class")
        elif conf < PROXY_MIN_CONFIDENCE:
            why = f"the confidence {conf:.2f} is below {PROXY_MIN_CONFIDENCE}"
    return {"hint_class": cls, "confidence": conf, "primary_afi": primary,
            **advice(cls, primary, why, "pathless" if stated is not None else
                     primary_why(stability_v4, stability_v6, hops_v4, hops_v6)).as_dict(), "caveat": LOWER_BOUND}


# ------------------------------------------------------------------ the same, over arrays
# The hints table has one row per pair: these give primary_afi and confidence (no proxy) for
# whole numpy columns, equal value for value to the functions above (tests/test_selector.py).

def primary_afi_array(stability_v4, stability_v6, hops_v4, hops_v6):
    """primary_afi over arrays of pairs that have both paths (no stability is null); int8."""
    s4, s6 = np.asarray(stability_v4, dtype=float), np.asarray(stability_v6, dtype=float)
    h4, h6 = np.nan_to_num(np.asarray(hops_v4, dtype=float)), np.nan_to_num(np.asarray(hops_v6, dtype=float))
    v6 = np.where(s4 != s6, s6 > s4, h6 < h4)
    return np.where(v6, 6, 4).astype(np.int8)


def primary_why_array(stability_v4, stability_v6, hops_v4, hops_v6):
    """primary_why over arrays of pairs that have both paths, as indexes into WHY_PRIMARY; int8."""
    s4, s6 = np.asarray(stability_v4, dtype=float), np.asarray(stability_v6, dtype=float)
    h4, h6 = np.nan_to_num(np.asarray(hops_v4, dtype=float)), np.nan_to_num(np.asarray(hops_v6, dtype=float))
    return np.where(s4 != s6, 0, np.where(h4 == h6, 2, 1)).astype(np.int8)


def confidence_array(stability_v4, stability_v6, snapshots, month_snapshots: int | None, factor=1.0):
    """confidence over arrays (`factor`: PROXY_FACTOR where a proxy stands in, per row or for
    all); rounded exactly as Python's round(c, 6) (numpy's rounding of c * 1e6 is exact except
    within rounding error of a half: those few are redone)."""
    s4, s6 = np.asarray(stability_v4, dtype=float), np.asarray(stability_v6, dtype=float)
    snaps = np.asarray(snapshots, dtype=float)
    if not month_snapshots:
        return np.zeros(len(s4))
    c = np.minimum(s4, s6) * np.minimum(1.0, snaps / month_snapshots)
    c = np.where(np.asarray(factor) != 1.0, c * factor, c)
    y = c * 1e6
    out = np.rint(y) / 1e6
    near_half = np.abs(y - np.floor(y) - 0.5) < 1e-6
    for i in np.flatnonzero(near_half):
        out[i] = round(float(c[i]), 6)
    bad = np.isnan(s4) | np.isnan(s6) | np.isnan(snaps) | (snaps == 0)
    out[bad] = 0.0
    return out
