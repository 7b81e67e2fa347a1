"""A synthetic AS-level Internet and its Gao-Rexford routing.

`Internet.build` makes a tiered AS graph (Tier-1 clique, transit tiers, stubs) whose
IPv4 and IPv6 relationship sets differ the way real ones do: ASes adopt IPv6 over time
(links to non-adopters vanish), some links simply carry no IPv6, one large transit
(the "IPv6 hub") peers openly in IPv6 only, and adopters whose providers lack IPv6 tunnel
to it. `Graph.route` computes the stable Gao-Rexford state for one destination.

AS indices are positions in the sorted ASN list, so comparing indices compares ASNs:
the last tie-break ("lowest neighbour ASN") is a plain integer comparison.
"""
from __future__ import annotations

import ipaddress
import random
from bisect import bisect_left
from dataclasses import dataclass, field

TIER1, TIER2, TIER3, STUB = 1, 2, 3, 4
#: Route classes, in order of preference: how the AS learned its route.
OWN, CUSTOMER, PEER, PROVIDER = 0, 1, 2, 3

#: IPv6 adoption probability per tier in ANCHOR_MONTH, and its growth per month.
ANCHOR_MONTH = (2026, 7)
ADOPTION = {TIER1: (1.0, 0.0), TIER2: (0.85, 0.006), TIER3: (0.62, 0.012), STUB: (0.42, 0.015)}


def month_index(month: str) -> int:
    y, m = (int(x) for x in month.split("-"))
    return y * 12 + m - 1


@dataclass
class Routes:
    """Stable routing state towards one destination: per AS index, its route's length
    (ASNs incl. prepends, -1 = no route), next hop (neighbour index) and class."""

    dest: int
    dist: list[int]
    nh: list[int]
    cls: list[int]


class Graph:
    """One address family's relationships, ready for per-destination routing.

    c2p: (customer, provider) index pairs; p2p: peer index pairs; prepend: {(exporter,
    importer): extra copies}. With `observers` (the VPs), peer and provider routes are
    computed only for the observers and their provider ancestors (their "up-cone"): no
    other AS's route can reach an observer, so the per-destination work stays small.
    """

    def __init__(self, asns, c2p, p2p, prepend=None, observers=None, present=None):
        n = len(asns)
        self.asns, self.n, self.prepend = asns, n, dict(prepend or {})
        self.present = list(present) if present is not None else [True] * n
        pre = self.prepend
        up = [[] for _ in range(n)]  # providers, weight of exporting to them
        upin = [[] for _ in range(n)]  # providers, weight of importing from them
        peers = [[] for _ in range(n)]
        #: rel[(a, b)] = class of a route AS a learns from neighbour b.
        self.rel: dict[tuple[int, int], int] = {}
        for c, p in c2p:
            up[c].append((p, 1 + pre.get((c, p), 0)))
            upin[c].append((p, 1 + pre.get((p, c), 0)))
            self.rel[(p, c)], self.rel[(c, p)] = CUSTOMER, PROVIDER
        for a, b in p2p:
            peers[a].append((b, 1 + pre.get((a, b), 0)))
            peers[b].append((a, 1 + pre.get((b, a), 0)))
            self.rel[(a, b)] = self.rel[(b, a)] = PEER
        #: Neighbours of each AS as (neighbour, class from the AS's view, import weight).
        self.nbrs = [[] for _ in range(n)]
        for (a, b), c in self.rel.items():
            self.nbrs[a].append((b, c, 1 + pre.get((b, a), 0)))
        for lst in (up, upin, peers, self.nbrs):
            for x in lst:
                x.sort()
        keep = [True] * n
        if observers is not None:  # the up-cone: observers and all their providers' ancestors
            keep = [False] * n
            stack = list(observers)
            while stack:
                v = stack.pop()
                if not keep[v]:
                    keep[v] = True
                    stack.extend(p for p, _ in up[v])
            peers = [[(b, w) for b, w in x if keep[b]] for x in peers]
        # Kept ASes with providers before customers (Kahn on the acyclic c2p graph).
        ncust = [0] * n
        for c in range(n):
            for p, _ in up[c]:
                ncust[p] += 1
        order = [v for v in range(n) if ncust[v] == 0]
        for v in order:
            for p, _ in up[v]:
                ncust[p] -= 1
                if ncust[p] == 0:
                    order.append(p)
        if len(order) != n:
            raise ValueError("the customer-provider graph has a cycle")
        self.order = [v for v in reversed(order) if keep[v] and upin[v]]
        self.up, self.upin, self.peers = up, upin, peers

    @classmethod
    def from_asns(cls, c2p=(), p2p=(), prepend=None) -> "Graph":
        """A graph given in ASNs (tests, hand-built examples)."""
        asns = sorted({a for link in (*c2p, *p2p) for a in link})
        ix = {a: i for i, a in enumerate(asns)}
        pre = {(ix[a], ix[b]): k for (a, b), k in (prepend or {}).items()}
        return cls(asns, [(ix[c], ix[p]) for c, p in c2p], [(ix[a], ix[b]) for a, b in p2p], pre)

    def index(self, asn: int) -> int:
        i = bisect_left(self.asns, asn)
        if i == len(self.asns) or self.asns[i] != asn:
            raise KeyError(asn)
        return i

    def route(self, d: int) -> Routes:
        """Gao-Rexford state for destination d: customer routes (up the provider edges,
        shortest first), then one peer hop, then provider routes (providers before
        customers); within a class, shortest path (prepends count), then lowest neighbour."""
        n, up, peers, upin = self.n, self.up, self.peers, self.upin
        dist, nh, cls = [-1] * n, [-1] * n, [-1] * n
        dist[d], nh[d], cls[d] = 0, d, OWN
        routed = []
        buckets = [[d]]  # a bucket queue: lengths are small integers
        k = 0
        while k < len(buckets):  # 1. customer routes
            for u in buckets[k]:
                if dist[u] != k:
                    continue
                routed.append(u)
                for p, w in up[u]:
                    nd, dp = k + w, dist[p]
                    if dp < 0 or nd < dp:
                        dist[p], nh[p], cls[p] = nd, u, CUSTOMER
                        while len(buckets) <= nd:
                            buckets.append([])
                        buckets[nd].append(p)
                    elif nd == dp and u < nh[p]:
                        nh[p] = u
            k += 1
        for q in routed:  # 2. peer routes: one hop from an AS with its own/customer route
            dq = dist[q]
            for a, w in peers[q]:
                ca = cls[a]
                if 0 <= ca <= CUSTOMER:
                    continue
                nd = dq + w
                if ca < 0 or nd < dist[a] or (nd == dist[a] and q < nh[a]):
                    dist[a], nh[a], cls[a] = nd, q, PEER
        for v in self.order:  # 3. provider routes: the best of the providers' routes
            if cls[v] >= 0:
                continue
            best = bp = -1
            for p, w in upin[v]:  # ascending p: on a tie the lowest neighbour stays
                dp = dist[p]
                if dp >= 0 and (best < 0 or dp + w < best):
                    best, bp = dp + w, p
            if bp >= 0:
                dist[v], nh[v], cls[v] = best, bp, PROVIDER
        return Routes(d, dist, nh, cls)

    def path(self, r: Routes, v: int) -> list[int] | None:
        """The AS path v announces for its route (v first, prepends kept), or None."""
        if r.dist[v] < 0:
            return None
        asns, pre, nh = self.asns, self.prepend, r.nh
        out, cur = [asns[v]], v
        while (n := nh[cur]) != cur:
            out.extend([asns[n]] * (1 + pre.get((n, cur), 0)))
            cur = n
        return out

    def candidates(self, r: Routes, v: int) -> list[tuple[int, int, int]]:
        """Every route v is offered, as (class, length, neighbour), best first: what the
        stable state must pick the minimum of (tests) and where a second-best comes from."""
        dist, cls = r.dist, r.cls
        out = []
        for n, c, w in self.nbrs[v]:
            if dist[n] < 0 or (c != PROVIDER and cls[n] > CUSTOMER):
                continue  # no route, or n exports only own/customer routes to v
            out.append((c, dist[n] + w, n))
        out.sort()
        return out

    def alternative(self, r: Routes, v: int) -> tuple[int, list[int]] | None:
        """v's second-best loop-free route as (class, path): a transient path change."""
        if v == r.dest or r.dist[v] < 0:
            return None
        nh = r.nh
        for c, _, n in self.candidates(r, v)[1:]:
            cur = n
            while cur != v and (nxt := nh[cur]) != cur:
                cur = nxt
            if cur == v:
                continue  # v is on n's path: BGP loop detection drops it
            rest = self.path(r, n)
            return c, [self.asns[v]] + [rest[0]] * self.prepend.get((n, v), 0) + rest
        return None


@dataclass
class Prefix:
    afi: int
    net: int  # network address as an integer
    plen: int
    origin: int  # AS index; -1 for a default route
    #: None, or a dirty origination: "as_set" (aggregate), "reserved" (private ASN
    #: behind the origin), "poison" (path ends origin, x, origin: a loop).
    kind: str | None = None
    extra: tuple[int, ...] = ()
    text: str = ""
    wire: bytes = b""  # MRT encoding: length byte + significant address bytes

    def __post_init__(self):
        cls = ipaddress.IPv4Network if self.afi == 4 else ipaddress.IPv6Network
        bits = 32 if self.afi == 4 else 128
        self.text = str(cls((self.net, self.plen)))
        nbytes = (self.plen + 7) // 8
        self.wire = bytes([self.plen]) + self.net.to_bytes(bits // 8, "big")[:nbytes]


#: /8s never used for synthetic IPv4 prefixes (private, loopback, CGN, link-local, ...).
_BAD_V4_OCTETS = {0, 10, 100, 127, 169, 172, 192, 198} | set(range(224, 256))
#: Prefix lengths per tier (choices). IPv6 comes from 3fff::/20 (RFC 9637 documentation).
_V4_LENS = {TIER1: (16, 17, 18), TIER2: (18, 19, 20), TIER3: (20, 21, 22), STUB: (22, 23, 24, 24)}
_V6_LENS = {TIER1: (32,), TIER2: (36, 40), TIER3: (40, 44), STUB: (44, 48, 48)}
_NPFX = {
    4: {TIER1: (2, 3, 4), TIER2: (1, 2, 3), TIER3: (1, 1, 2, 3), STUB: (1, 1, 1, 2, 2, 3)},
    6: {TIER1: (1, 2), TIER2: (1, 1, 2), TIER3: (1, 1, 2), STUB: (1, 1, 1, 2)},
}
DIRTY_RATE = 0.012  # per prefix and kind


@dataclass
class Internet:
    asns: list[int]
    tier: list[int]
    rank: list[int]  # providers always have a lower rank than their customers
    c2p: list[tuple[int, int]]
    p2p: list[tuple[int, int]]
    prepend4: dict[tuple[int, int], int]
    prepend6: dict[tuple[int, int], int]
    adopt_u: list[float]
    hub: int  # the transit that peers openly in IPv6 and takes tunnelled adopters
    no_v6: set[tuple[int, int]]  # links (sorted pair) without IPv6
    hub_peer_u: list[float]
    prefixes: dict[int, list[Prefix]] = field(default_factory=dict)

    # --- construction -------------------------------------------------------------
    @classmethod
    def build(cls, seed: int, ases: int) -> "Internet":
        """Deterministic from (seed, ases); providers attach preferentially (rich get richer)."""
        if ases < 20:
            raise ValueError("ases must be >= 20")
        rng = random.Random(f"synth:{seed}:internet")
        n1 = max(3, min(15, round(ases * 0.015)))
        n2 = max(3, round(ases * 0.07))
        n3 = max(4, round(ases * 0.2))
        t1_asns = rng.sample(range(1, 10000), n1)
        used = set(t1_asns)
        rest = []
        while len(rest) < ases - n1:
            a = rng.randint(1, 64495) if rng.random() < 0.75 else rng.randint(131072, 399999)
            if a not in used and a != 23456:
                used.add(a)
                rest.append(a)
        order = t1_asns + rest  # rank order: tier-1, tier-2, tier-3, stubs
        asns = sorted(order)
        ix = {a: i for i, a in enumerate(asns)}
        ranked = [ix[a] for a in order]
        rank = [0] * ases
        tier = [STUB] * ases
        for r, i in enumerate(ranked):
            rank[i] = r
            tier[i] = TIER1 if r < n1 else TIER2 if r < n1 + n2 else TIER3 if r < n1 + n2 + n3 else STUB
        T1, T2 = ranked[:n1], ranked[n1 : n1 + n2]
        T3, S = ranked[n1 + n2 : n1 + n2 + n3], ranked[n1 + n2 + n3 :]
        hub = T2[0]

        linked: set[tuple[int, int]] = set()
        c2p: list[tuple[int, int]] = []
        p2p: list[tuple[int, int]] = []
        attach = {TIER1: list(T1), TIER2: list(T2), TIER3: []}  # one slot + one per customer

        def add_c2p(c, p):
            key = (min(c, p), max(c, p))
            if c != p and key not in linked:
                linked.add(key)
                c2p.append((c, p))
                attach[tier[p]].append(p)

        def add_p2p(a, b):
            key = (min(a, b), max(a, b))
            if a != b and key not in linked:
                linked.add(key)
                p2p.append(key)

        for i, a in enumerate(T1):
            for b in T1[i + 1 :]:
                add_p2p(a, b)
        for j, a in enumerate(T2):
            for p in rng.sample(T1, min(len(T1), 2 if a == hub else rng.choice((1, 2, 2, 3)))):
                add_c2p(a, p)
            if j > 1 and rng.random() < 0.25:
                add_c2p(a, rng.choice(T2[1:j]))
        for a in T2:
            for _ in range(rng.randint(1, 4)):
                add_p2p(a, rng.choice(T2))
        for a in T3:
            for _ in range(rng.choice((1, 2, 2, 3))):
                x = rng.random()
                pool = TIER1 if x < 0.15 else TIER3 if x > 0.8 and attach[TIER3] else TIER2
                add_c2p(a, rng.choice(attach[pool]))
            attach[TIER3].append(a)
        for a in T3:
            for _ in range(rng.randint(0, 3)):
                add_p2p(a, rng.choice(T3 if rng.random() < 0.6 else T2))
        for a in S:
            for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
                x = rng.random()
                add_c2p(a, rng.choice(attach[TIER1 if x < 0.05 else TIER2 if x < 0.45 else TIER3]))
            if rng.random() < 0.05:
                add_p2p(a, rng.choice(S if rng.random() < 0.5 else T3))

        prepend4: dict[tuple[int, int], int] = {}
        for c, p in c2p:
            if rng.random() < 0.08:  # backup provider: the customer prepends
                prepend4[(c, p)] = rng.choice((1, 1, 2, 3))
            if rng.random() < 0.03:
                prepend4[(p, c)] = rng.choice((1, 2))
        for a, b in p2p:
            for e in ((a, b), (b, a)):
                if rng.random() < 0.05:
                    prepend4[e] = rng.choice((1, 2))
        # IPv6 traffic engineering differs: some prepends are absent, a few are new.
        prepend6 = {e: k for e, k in prepend4.items() if rng.random() < 0.7}
        for c, p in c2p:
            if rng.random() < 0.02:
                prepend6[(c, p)] = rng.choice((1, 2))
        no_v6 = set()
        for c, p in c2p:
            if rng.random() < 0.08:
                no_v6.add((min(c, p), max(c, p)))
        for a, b in p2p:
            if tier[a] != TIER1 or tier[b] != TIER1:
                if rng.random() < 0.25:
                    no_v6.add((a, b))
        adopt_u = [rng.random() for _ in range(ases)]
        hub_peer_u = [rng.random() for _ in range(ases)]
        net = cls(asns, tier, rank, c2p, p2p, prepend4, prepend6, adopt_u, hub, no_v6, hub_peer_u)
        net._make_prefixes(rng)
        return net

    def _make_prefixes(self, rng: random.Random) -> None:
        """1..k unique prefixes per AS per family, a small share of them dirty."""
        units = 1 << 16  # IPv4 allocation cursor in /24 units, starting at 1.0.0.0
        v6 = 0  # IPv6 cursor in /48 units inside 3fff::/20
        out: dict[int, list[Prefix]] = {4: [], 6: []}
        for i in sorted(range(len(self.asns)), key=lambda i: self.rank[i]):
            t = self.tier[i]
            for _ in range(rng.choice(_NPFX[4][t])):
                plen = rng.choice(_V4_LENS[t])
                size = 1 << (24 - plen)
                while True:
                    units = -(-units // size) * size
                    if (units >> 16) not in _BAD_V4_OCTETS:
                        break
                    if units >> 16 >= 224:
                        raise ValueError("too many ASes for the synthetic IPv4 space")
                    units = ((units >> 16) + 1) << 16
                out[4].append(Prefix(4, units << 8, plen, i))
                units += size
            for _ in range(rng.choice(_NPFX[6][t])):
                plen = rng.choice(_V6_LENS[t])
                size = 1 << (48 - plen)
                v6 = -(-v6 // size) * size
                if v6 + size > 1 << 28:
                    raise ValueError("too many ASes for the synthetic IPv6 space")
                out[6].append(Prefix(6, (0x3FFF0 << 108) | (v6 << 80), plen, i))
                v6 += size
        for afi, lst in out.items():
            always = [p for p in lst if self.tier[p.origin] == TIER1 or p.origin == self.hub]
            for kind in ("as_set", "reserved", "poison"):
                picked = [p for p in lst if p.kind is None and rng.random() < DIRTY_RATE]
                if not picked:  # at least one of each, on a prefix visible in every month
                    picked = [rng.choice([p for p in always if p.kind is None])]
                for p in picked:
                    p.kind = kind
                    if kind == "as_set":
                        p.extra = tuple(sorted(rng.sample(self.asns, 2)))
                    elif kind == "reserved":
                        p.extra = (rng.randint(64512, 65534) if rng.random() < 0.7 else rng.randint(4200000000, 4294967294),)
                    else:  # poisoned with another AS: origin, x, origin
                        x = rng.randrange(len(self.asns) - 1)
                        p.extra = (self.asns[x + (x >= p.origin)],)
            lst.sort(key=lambda p: (p.net, p.plen))
        self.prefixes = out

    # --- per month -------------------------------------------------------------------
    def adopted(self, month: str) -> list[bool]:
        """IPv6 adopters in a month; monotone in time (fixed draw vs a rising threshold)."""
        dm = month_index(month) - (ANCHOR_MONTH[0] * 12 + ANCHOR_MONTH[1] - 1)
        th = {t: min(0.98, max(0.02, b + g * dm)) if t != TIER1 else 1.0 for t, (b, g) in ADOPTION.items()}
        return [i == self.hub or u < th[t] for i, (u, t) in enumerate(zip(self.adopt_u, self.tier))]

    def relationships(self, afi: int, month: str):
        """(c2p, p2p, prepend, present) of one family in one month."""
        if afi == 4:
            return list(self.c2p), list(self.p2p), self.prepend4, [True] * len(self.asns)
        present = self.adopted(month)
        hub, no = self.hub, self.no_v6
        c2p = [(c, p) for c, p in self.c2p if present[c] and present[p] and c != hub and (min(c, p), max(c, p)) not in no]
        p2p = [(a, b) for a, b in self.p2p if present[a] and present[b] and (a, b) not in no]
        linked = {(min(a, b), max(a, b)) for a, b in c2p + p2p}
        rate = {TIER1: 1.0, TIER2: 0.6, TIER3: 0.5, STUB: 0.04}
        for a in range(len(self.asns)):  # the IPv6 hub: IPv6-only open peering
            key = (min(a, hub), max(a, hub))
            if a != hub and present[a] and self.hub_peer_u[a] < rate[self.tier[a]] and key not in linked:
                p2p.append(key)
                linked.add(key)
        providers: dict[int, list[int]] = {}
        for c, p in c2p:
            providers.setdefault(c, []).append(p)
        connected = [False] * len(self.asns)
        for a in sorted(range(len(self.asns)), key=lambda i: self.rank[i]):
            if not present[a]:
                continue
            if self.tier[a] == TIER1 or a == hub or any(connected[p] for p in providers.get(a, ())):
                connected[a] = True
                continue
            key = (min(a, hub), max(a, hub))  # no IPv6 upstream: tunnel to the IPv6 hub
            if key in linked:
                p2p.remove(key)
            c2p.append((a, hub))
            linked.add(key)
            connected[a] = True
        return c2p, p2p, self.prepend6, present

    def graph(self, afi: int, month: str, observers=None) -> Graph:
        c2p, p2p, pre, present = self.relationships(afi, month)
        return Graph(self.asns, c2p, p2p, pre, observers, present)

    def month_prefixes(self, afi: int, month: str) -> list[Prefix]:
        if afi == 4:
            return self.prefixes[4]
        present = self.adopted(month)
        return [p for p in self.prefixes[6] if present[p.origin]]
