"""AS relationships of one address family from its paths, as pure functions (METHOD.md).

The input is `Evidence`: the family's paths reduced to what the inference reads (links,
triplets of consecutive ASes with their direction, each VP's reach). It is built in SQL
from the month's `paths` (relationships/evidence.py) or, for tests and hand-made cases, by
`evidence_of` below from a list of paths: the two must agree. `infer` then walks the
steps of METHOD.md in order; each relationship records the step that decided it.

The steps follow AS-Rank (Luckie et al., IMC 2013) in its published order; where this
version departs (the clique search, the refutation of clique links, the thresholds read on
one representative path per VP and destination), METHOD.md says so and why.
"""
from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations, takewhile

from bgp_congruency.common.params import RelationshipParams

#: The relationship words of the published table (CAIDA serial-1's -1 and 0 as words).
P2C, P2P, S2S = "p2c", "p2p", "s2s"
#: The step that labels what no valley-free evidence decides (METHOD.md step 9): its links
#: are published undecided, p2p by default.
UNDECIDED = "rest-p2p"
#: The steps in the order they run; every relationship names the one that decided it.
STEPS = ("clique", "top-down", "partial-vp", "larger-customer", "provider-less", "clique-stub", "stub-providers",
         "fold-p2p", UNDECIDED)


@dataclass
class Trip:
    """Paths that show three ASes in a row, nearest the VP first: how many, toward how many
    destinations, how many end at the third (it is their origin), and how many are exactly
    those three ASes. `dests` is None where it was not counted: only the clique search
    reads it, on the trips of its candidates (find_clique's `count_dests`)."""

    paths: int = 0
    dests: int | None = 0
    ends: int = 0
    whole: int = 0


@dataclass
class Evidence:
    """One family's paths as the inference reads them.

    links: (a, b) with a < b -> (paths, VP ASes) that show the two ASes next to each other;
    trips: (near, mid, far) -> Trip, `near` on the VP's side of `mid`, `far` on the origin's;
    reach: VP AS -> distinct origins it has a path to (a partial feed reaches few)."""

    links: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    trips: dict[tuple[int, int, int], Trip] = field(default_factory=dict)
    reach: dict[int, int] = field(default_factory=dict)


#: What the paths show of a link (METHOD.md, "Evidence levels"): which of its two ASes is seen
#: passing the other's routes on to a third AS. For a p2c link, as1 (the provider) carrying is
#: the view from above; as2 (the customer) alone carrying, the view only from below, which a
#: peering gives too.
BOTH_CARRY, AS1_CARRIES, AS2_CARRIES, VP_LINK_ONLY = "both-carry", "as1-carries", "as2-carries", "vp-link-only"


@dataclass(frozen=True)
class Relationship:
    """One inferred link: `p2c` with as1 the provider of as2, `p2p` with as1 < as2; the
    evidence (paths and VP ASes that show the link, and its evidence level), and the step
    that decided it."""

    as1: int
    as2: int
    rel: str
    step: str
    paths: int
    vps: int
    evidence: str
    #: Whether valley-free evidence decided the link: not for the last step's links, nor for
    #: the peerings the provider-less step assumes (METHOD.md step 5).
    decided: bool = True


# ------------------------------------------------------------------ input
def sanitise(paths: Iterable[Sequence[int]], route_servers: frozenset[int] | set[int],
             reserved=lambda a: False) -> list[tuple[int, ...]]:
    """Paths the inference may read: route-server ASNs taken out (an IXP's route server
    relays routes, it is no AS on the way), then paths with a reserved ASN or a loop left
    out (the compare's cleaning already dropped those; paths from elsewhere may have them)."""
    out = []
    for p in paths:
        q = tuple(a for a in p if a not in route_servers)
        if q and not any(reserved(a) for a in q) and len(set(q)) == len(q):
            out.append(q)
    return out


def poisoned(path: Sequence[int], clique: frozenset[int] | set[int]) -> bool:
    """Clique ASes that are not next to each other on the path: an AS between two members
    of the transit-free clique, which no valley-free route shows (path poisoning, or a
    route leak); such a path is left out once the clique is known."""
    seen = gap = False
    for a in path:
        if a in clique:
            if seen and gap:
                return True
            seen, gap = True, False
        elif seen:
            gap = True
    return False


def evidence_of(paths: Iterable[tuple[int, Sequence[int]]]) -> Evidence:
    """Evidence from (VP AS, path) items, each distinct item counted once (the reference
    of relationships/evidence.py's SQL). A path is VP first, origin last."""
    ev = Evidence()
    links: dict[tuple[int, int], list] = defaultdict(lambda: [0, set()])
    dests: dict[tuple[int, int, int], set] = defaultdict(set)
    reach: dict[int, set] = defaultdict(set)
    for vp, path in dict.fromkeys((int(v), tuple(int(a) for a in p)) for v, p in paths):
        reach[vp].add(path[-1])
        for i in range(1, len(path)):
            key = (min(path[i - 1], path[i]), max(path[i - 1], path[i]))
            links[key][0] += 1
            links[key][1].add(vp)
        for i in range(1, len(path) - 1):
            key = (path[i - 1], path[i], path[i + 1])
            t = ev.trips.setdefault(key, Trip())
            t.paths += 1
            t.ends += i + 1 == len(path) - 1
            t.whole += len(path) == 3
            dests[key].add(path[-1])
    ev.links = {k: (n, len(v)) for k, (n, v) in links.items()}
    for k, d in dests.items():
        ev.trips[k].dests = len(d)
    ev.reach = {v: len(o) for v, o in reach.items()}
    return ev


# ------------------------------------------------------------------ the graph the steps read
class Graph:
    """Evidence indexed for the steps, and the relationships decided so far."""

    def __init__(self, ev: Evidence):
        self.ev = ev
        self.nbrs: dict[int, set[int]] = defaultdict(set)
        for a, b in ev.links:
            self.nbrs[a].add(b)
            self.nbrs[b].add(a)
        #: ASes seen on either side of an AS where it is in the middle of a path.
        self.transit: dict[int, set[int]] = defaultdict(set)
        #: (a, b) -> the ASes c seen on the other side of b from a (a, b, c in a row, either way).
        self.beyond: dict[tuple[int, int], set[int]] = defaultdict(set)
        #: (mid, near) -> the ASes `far` whose routes `mid` passes on to `near`.
        self.passed_to: dict[tuple[int, int], set[int]] = defaultdict(set)
        #: (mid, far): mid is seen passing far's routes on.
        self.carries: set[tuple[int, int]] = set()
        for near, mid, far in ev.trips:
            self.carries.add((mid, far))
            self.transit[mid].update((near, far))
            self.beyond[(near, mid)].add(far)
            self.beyond[(far, mid)].add(near)
            self.passed_to[(mid, near)].add(far)
        self.clique: frozenset[int] = frozenset()
        self.rel: dict[tuple[int, int], str] = {}  # (a, b) -> "p2c": a provider of b; "c2p"; "p2p"
        self.providers: dict[int, set[int]] = defaultdict(set)
        self.customers: dict[int, set[int]] = defaultdict(set)
        self.peers: dict[int, set[int]] = defaultdict(set)
        self.decided: list[Relationship] = []

    # --- what the paths show
    def td(self, a: int) -> int:
        """Transit degree: the neighbours an AS is seen carrying traffic between."""
        return len(self.transit.get(a, ()))

    def degree(self, a: int) -> int:
        return len(self.nbrs.get(a, ()))

    def passes(self, origin_side: int, mid: int, vp_side: int) -> int:
        """Paths where `mid` passed the route it learned from `origin_side` on to `vp_side`."""
        t = self.ev.trips.get((vp_side, mid, origin_side))
        return t.paths if t else 0

    def in_a_row(self, a: int, mid: int, b: int) -> int:
        """Paths that show a, mid, b in a row, in either direction."""
        return sum(t.paths for t in (self.ev.trips.get((a, mid, b)), self.ev.trips.get((b, mid, a))) if t)

    def rank_key(self, a: int) -> tuple:
        """The top-down order: clique members first, then the larger transit degree, the
        larger degree, the lower ASN."""
        return (a not in self.clique, -self.td(a), -self.degree(a), a)

    def ranked(self, ases: Iterable[int]) -> list[int]:
        return sorted(ases, key=self.rank_key)

    # --- what is decided
    def known(self, a: int, b: int) -> bool:
        return (a, b) in self.rel

    def in_cone(self, top: int, a: int) -> bool:
        """Whether `a` is `top` or below it through customer links (a p2c from a to top would
        make a cycle)."""
        todo, seen = [top], {top}
        while todo:
            x = todo.pop()
            if x == a:
                return True
            for c in self.customers.get(x, ()):
                if c not in seen:
                    seen.add(c)
                    todo.append(c)
        return False

    def may_provide(self, p: int, c: int) -> bool:
        """p may be c's provider: c is not in the clique and p is not in c's cone."""
        return c not in self.clique and not self.in_cone(c, p)

    def evidence_level(self, as1: int, as2: int) -> str:
        """Which of the link's two ASes, in the published order, is seen passing the other's
        routes on; VP_LINK_ONLY: neither, the link is only ever a VP's first hop."""
        one, two = (as1, as2) in self.carries, (as2, as1) in self.carries
        return BOTH_CARRY if one and two else AS1_CARRIES if one else AS2_CARRIES if two else VP_LINK_ONLY

    def set(self, a: int, b: int, rel: str, step: str, decided: bool = True) -> None:
        """Decide a-b: `p2c` (a provider of b) or `p2p`; `decided`: whether valley-free
        evidence decides it, or an assumption labels it (published undecided)."""
        if self.known(a, b):
            raise ValueError(f"AS{a}-AS{b} is decided already ({self.rel[(a, b)]})")
        paths, vps = self.ev.links.get((min(a, b), max(a, b)), (0, 0))
        if rel == P2C:
            self.rel[(a, b)], self.rel[(b, a)] = "p2c", "c2p"
            self.customers[a].add(b)
            self.providers[b].add(a)
        else:
            a, b = min(a, b), max(a, b)
            self.rel[(a, b)] = self.rel[(b, a)] = "p2p"
            self.peers[a].add(b)
            self.peers[b].add(a)
        self.decided.append(Relationship(a, b, rel, step, paths, vps, self.evidence_level(a, b), decided))


# ------------------------------------------------------------------ the clique
LINK, MISSING, REFUTED = "link", "missing", "refuted"


def clique_link(g: Graph, a: int, b: int, members: Iterable[int], p: RelationshipParams) -> str:
    """How a and b look at the top: LINK (linked, and no third member m is seen carrying one's
    routes to the other toward at least `p.clique_refute_dests` destinations), REFUTED (such a
    member is seen, or they are not linked and one reaches the other through a member at
    all: then one is below that member), or MISSING (not linked and no path shows either
    reaching the other: an absent peering, as Hurricane Electric and Cogent in IPv6)."""
    linked = (min(a, b), max(a, b)) in g.ev.links
    need = p.clique_refute_dests
    for m in members:
        if m in (a, b):
            continue
        for x, y in ((a, b), (b, a)):
            t = g.ev.trips.get((y, m, x))
            # a trip's destinations are at most its paths: only those with enough paths are read
            if t and (not linked or (t.paths >= need and t.dests >= need)):
                return REFUTED
    return LINK if linked else MISSING


def refuting(g: Graph, ases: Iterable[int], p: RelationshipParams) -> list[tuple[int, int, int]]:
    """The trips among `ases` whose destinations clique_link may read, not counted yet:
    (y, m, x) with y and x linked, on at least `p.clique_refute_dests` paths."""
    s = set(ases)
    return [k for k, t in g.ev.trips.items()
            if t.dests is None and t.paths >= p.clique_refute_dests and k[0] in s and k[1] in s and k[2] in s
            and (min(k[0], k[2]), max(k[0], k[2])) in g.ev.links]


#: count_dests(trips): fills Trip.dests of these trips of the evidence (relationships/evidence.py
#: counts them in SQL).
CountDests = Callable[[list[tuple[int, int, int]]], None]


def find_clique(g: Graph, p: RelationshipParams, missing: int, count_dests: CountDests | None = None) -> frozenset[int]:
    """The transit-free clique (METHOD.md, step 1): the largest set of the top
    `p.clique_candidates` ASes by transit degree in which no two members are REFUTED and
    every member lacks a link (MISSING) to at most `missing` others (0: a full mesh; IPv6
    allows one), ties to the larger sum of transit degrees (an exact branch-and-bound
    search); then the ASes after them in rank order that keep that true, until their degree
    is below the clique's size.

    Only the trips among the ASes looked at are read for their destinations (clique_link):
    with `count_dests`, the evidence's other trips need not have them counted (the distinct
    count was two thirds of the SQL triplets' time: 3.3 s with it, 1.0 s without, for the
    9.0M IPv4 items of synthetic scale 50; about a third of the whole SQL evidence's)."""
    order = g.ranked(a for a in g.nbrs)
    top = order[: p.clique_candidates]
    if count_dests is not None:
        count_dests(refuting(g, top, p))
    look = {(a, b): clique_link(g, a, b, top, p) for a in top for b in top if a < b}

    def status(a, b):
        return look[(a, b) if a < b else (b, a)]

    best: list = []
    best_key = (0, 0)

    def grow(chosen: list, lacking: dict, cands: list) -> None:
        nonlocal best, best_key
        key = (len(chosen), sum(g.td(a) for a in chosen))
        if key > best_key:
            best, best_key = list(chosen), key
        if len(chosen) + len(cands) < best_key[0]:
            return
        for i, c in enumerate(cands):
            miss = [a for a in chosen if status(a, c) == MISSING]
            if len(miss) > missing or any(lacking[a] >= missing for a in miss):
                continue
            nxt = dict(lacking)
            for a in miss:
                nxt[a] += 1
            nxt[c] = len(miss)
            grow(chosen + [c], nxt, [d for d in cands[i + 1:] if status(c, d) != REFUTED])

    grow([], {}, list(top))

    def fits(members: Sequence[int]) -> bool:
        for a in members:
            looks = [clique_link(g, a, b, members, p) for b in members if b != a]
            if REFUTED in looks or looks.count(MISSING) > missing:
                return False
        return True

    chosen = list(best)
    if count_dests is not None:  # the ASes the loop below may look at (the clique only grows)
        more = list(takewhile(lambda a: g.degree(a) >= len(chosen), order[p.clique_candidates:]))
        if more:
            count_dests(refuting(g, chosen + more, p))
    for a in order[p.clique_candidates:]:
        if g.degree(a) < len(chosen):
            break
        if fits(chosen + [a]):
            chosen.append(a)
    return frozenset(chosen)


# ------------------------------------------------------------------ the steps
def _top_down(g: Graph, p: RelationshipParams) -> None:
    """Step 2: in rank order, a neighbour y of x is x's provider when y is seen passing x's
    routes to one of y's providers or peers, or (a peer z) when x, y, z are seen in a row on
    at least `p.min_triplet_paths` paths; or (downhill, not in AS-Rank) when y is seen
    handing x a route it learned from one of its peers or providers, which valley-free
    export gives to customers only."""
    for x in g.ranked(g.nbrs):
        if x in g.clique:
            continue
        for y in g.ranked(g.nbrs[x]):
            if g.known(x, y):
                continue
            above = g.providers.get(y, set()) | g.peers.get(y, set())
            up = any(g.passes(x, y, z) for z in g.providers.get(y, ()))
            up = up or any(g.passes(x, y, z) or g.in_a_row(x, y, z) >= p.min_triplet_paths
                           for z in g.peers.get(y, ()))
            down = any(g.passes(z, y, x) for z in above if z != x)
            if (up or down) and g.may_provide(y, x):
                g.set(y, x, P2C, "top-down")


def _partial_vps(g: Graph, p: RelationshipParams) -> None:
    """Step 3: a VP that reaches at most `p.partial_feed_share` of the ASes sends only its
    customers' and peers' routes; on its paths of three ASes (VP, y, z) with z never in the
    middle of a path, y is z's provider."""
    limit = p.partial_feed_share * len(g.nbrs)
    partial = {v for v, n in g.ev.reach.items() if n <= limit}
    if not partial:
        return
    for vp, y, z in sorted(k for k, t in g.ev.trips.items() if t.whole and k[0] in partial):
        if not g.known(y, z) and g.td(z) == 0:
            g.set(y, z, P2C, "partial-vp")


def _larger_customers(g: Graph, p: RelationshipParams) -> None:
    """Step 4: a customer with a larger transit degree than its provider escapes step 2.
    Where x is y's provider and the paths show y passing the routes of z (z their origin) up
    to x, y is z's provider, most-seen triplets first, on at least `p.min_triplet_paths`
    paths; z's own neighbours whose routes z passes to y follow (as z's customers when they
    are smaller, as candidates of their own when larger)."""
    heap: list = []

    def offer(x, y, z, first=True):
        t = g.ev.trips.get((x, y, z))
        if t and (not first or (t.ends and g.td(y) <= g.td(z))) and not g.known(y, z):
            heapq.heappush(heap, (-t.paths, x, y, z))

    for (x, y), rel in list(g.rel.items()):
        if rel == "p2c":
            for z in sorted(g.beyond.get((x, y), ())):
                if g.passes(z, y, x):
                    offer(x, y, z)
    while heap:
        n, x, y, z = heapq.heappop(heap)
        if -n < p.min_triplet_paths or g.known(y, z) or not g.may_provide(y, z):
            continue
        g.set(y, z, P2C, "larger-customer")
        for zz in sorted(g.nbrs[z]):
            if g.known(z, zz) or not g.passes(zz, z, y):
                continue
            if g.td(zz) > g.td(z):
                offer(y, z, zz, first=False)
            elif g.may_provide(z, zz):
                g.set(z, zz, P2C, "larger-customer")


def _carried_up(g: Graph, y: int, x: int) -> bool:
    """Whether y is seen passing x's routes to a neighbour that is not known to be y's
    customer: valley-free export allows that only when x is y's customer, so the paths do not
    show x and y as peers."""
    return any(x in g.passed_to.get((y, z), ()) and g.rel.get((y, z)) != "p2c" for z in g.nbrs[y] if z != x)


def _provider_less(g: Graph, p: RelationshipParams) -> None:
    """Step 5: an AS with no provider, outside the clique, seen carrying traffic between at
    least `p.provider_less_transit` neighbours (a regional or research network): it peers
    with the neighbours it carries traffic for, unless one is seen passing its routes to a
    neighbour not known to be that one's customer (then the link is left to the later
    steps: valley-free export shows it a provider); and the routes it passes to those
    neighbours come from its customers."""
    for x in g.ranked(g.nbrs):
        if g.providers.get(x) or x in g.clique or g.td(x) < p.provider_less_transit:
            continue
        for y in g.ranked(g.nbrs[x]):
            if g.known(x, y) or not g.beyond.get((y, x)):
                continue
            if not _carried_up(g, y, x):
                g.set(x, y, P2P, "provider-less", decided=False)
            for z in sorted(g.beyond[(y, x)]):
                if g.known(x, z) or not g.may_provide(x, z):
                    continue
                g.set(x, z, P2C, "provider-less")
                for zz in sorted(g.nbrs[z]):
                    if (not g.known(z, zz) and g.passes(zz, z, x) and g.td(zz) < g.td(z)
                            and g.may_provide(z, zz)):
                        g.set(z, zz, P2C, "provider-less")


def _clique_stubs(g: Graph, open_peering: bool) -> None:
    """Step 6: a clique member's neighbour never seen in the middle of a path is its customer;
    with `open_peering` (IPv6, where clique members such as Hurricane Electric peer with
    whoever asks), only a neighbour that has no provider yet."""
    for x in sorted(g.clique):
        for y in sorted(g.nbrs.get(x, ())):
            if not g.known(x, y) and g.td(y) == 0 and not (open_peering and g.providers.get(y)):
                g.set(x, y, P2C, "clique-stub")


def _stub_providers(g: Graph) -> None:
    """Step 7 (not in AS-Rank): an AS never seen in the middle of a path and still without a
    provider reaches the Internet through someone: its undecided neighbours that are seen
    in the middle of paths carry its routes, as its providers."""
    for x in sorted(g.nbrs):
        if g.td(x) or g.providers.get(x) or x in g.clique:
            continue
        for y in sorted(g.nbrs[x]):
            if not g.known(x, y) and g.td(y) and g.may_provide(y, x):
                g.set(y, x, P2C, "stub-providers")


def _fold_p2p(g: Graph) -> None:
    """Step 8: valley-free export. Routes x passes to a neighbour y that is not its customer
    (a peer, or undecided: to be a peer) come from x's customers, unless y is also seen next
    to one of x's providers (then y is a customer). The neighbours whose routes x passes
    that way, and that are not themselves such a y, become x's customers (the most passed
    first, when no larger than x), and the routes they in turn pass to x theirs."""
    for x in g.ranked(g.nbrs):
        if g.td(x) == 0:
            continue
        fold: dict[int, set[int]] = {}
        for y in sorted(n for n in g.nbrs[x] if g.passed_to.get((x, n))):
            if g.rel.get((x, y), "p2p") != "p2p":
                continue
            if any(g.in_a_row(y, x, z) for z in g.providers.get(x, ())):
                continue
            fold[y] = {z for z in g.passed_to[(x, y)] if not g.known(x, z)}
        # A neighbour whose routes x passes to another is on the customer side, not a y.
        sides = {y for y in fold if any(y in zs for zs in fold.values())}
        fold = {y: zs - sides for y, zs in fold.items() if y not in sides}
        count: dict[int, int] = defaultdict(int)
        for zs in fold.values():
            for z in zs:
                count[z] += 1
        for z in sorted(count, key=lambda a: (-count[a], a)):
            if g.td(x) < g.td(z) or g.known(x, z) or not g.may_provide(x, z):
                continue
            g.set(x, z, P2C, "fold-p2p")
            for zz in sorted(g.passed_to.get((z, x), ())):
                if not g.known(z, zz) and g.td(z) >= g.td(zz) and g.may_provide(z, zz):
                    g.set(z, zz, P2C, "fold-p2p")


def infer(ev: Evidence, p: RelationshipParams, afi: int, clique: frozenset[int] | None = None,
          g: Graph | None = None) -> tuple[frozenset[int], list[Relationship]]:
    """(the clique, every link's relationship) of one family's evidence, the steps of
    METHOD.md in order, with the family's settings (RelationshipParams.missing,
    .open_peering); `clique`: a clique given instead of found (evidence already without
    poisoned paths); `g`: the evidence's Graph with nothing decided yet, when the clique
    search built it already (indexing a large month's triplets takes seconds)."""
    missing = p.missing(afi)
    if g is None:
        g = Graph(ev)
    elif g.ev is not ev or g.decided:
        raise ValueError("infer: the graph given is not the evidence's, or has relationships decided")
    g.clique = find_clique(g, p, missing) if clique is None else frozenset(clique)
    for a, b in combinations(sorted(g.clique), 2):
        if (a, b) in ev.links:
            g.set(a, b, P2P, "clique")
    _top_down(g, p)
    _partial_vps(g, p)
    _larger_customers(g, p)
    _provider_less(g, p)
    _clique_stubs(g, p.open_peering(afi))
    _stub_providers(g)
    _fold_p2p(g)
    for a, b in sorted(ev.links):
        if not g.known(a, b):
            g.set(a, b, P2P, UNDECIDED, decided=False)
    return g.clique, g.decided


def infer_paths(paths: Iterable[tuple[int, Sequence[int]]], p: RelationshipParams, afi: int,
                reserved=lambda a: False) -> tuple[frozenset[int], list[Relationship]]:
    """The whole inference on (VP AS, path) items in memory: sanitise, find the clique on
    every path, leave out the poisoned ones, infer on the rest (the reference of
    relationships/evidence.py's two passes)."""
    items = [(v, q) for v, path in paths for q in sanitise([path], p.route_servers, reserved)]
    clique = find_clique(Graph(evidence_of(items)), p, p.missing(afi))
    kept = [(v, q) for v, q in items if not poisoned(q, clique)]
    return infer(evidence_of(kept), p, afi, clique)
