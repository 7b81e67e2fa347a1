"""Parameters of the method (congruency/METHOD.md); one frozen object shared by every engine,
the reference and the configuration."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from bgp_congruency.common.errors import BadInput

GROUPS_TOML = Path(__file__).with_name("groups.toml")

#: Inclusive ASN ranges that make a path invalid (RFC 6996, 7300, 5398, 6793 AS_TRANS).
DEFAULT_RESERVED_ASNS: tuple[tuple[int, int], ...] = (
    (0, 0),
    (23456, 23456),
    (64496, 131071),
    (4200000000, 4294967295),
)


#: MethodParams.representative's values.
REPRESENTATIVE = ("observations", "prefixes", "snapshots", "lowest")


@dataclass(frozen=True)
class MethodParams:
    #: METHOD.md 5, the default-free threshold: a dual-stacked VP is default-free when it has
    #: paths to at least this share of the month's origins in each family (--default-free-share).
    min_coverage: float = 0.9
    #: Inclusive ASN ranges that make a path invalid (METHOD.md 1.4; RFC 6996, 7300, 5398, 6793).
    reserved_asns: tuple[tuple[int, int], ...] = DEFAULT_RESERVED_ASNS
    #: collector -> group; collectors not listed are their own group.
    groups: dict[str, str] = field(default_factory=dict)
    #: METHOD.md 1.3: drop rows whose first AS is not the peer (route servers, iBGP). Off, only
    #: empty paths are dropped under that reason (the sensitivity analysis's variant).
    first_as_rule: bool = True
    #: METHOD.md 4, what makes a path the representative one: "observations" (the most
    #: observed), "prefixes" (the most distinct prefixes), "snapshots" (seen in the most
    #: snapshots), each with the ties of "observations"; or "lowest" (the smallest ASN
    #: sequence alone). The sensitivity analysis's variants; the default is the study's.
    representative: str = "observations"
    #: The snapshots used: "all" (every one ingested for the month) or "first" (each
    #: collector's first of the month only).
    snapshots: str = "all"
    #: METHOD.md 7, what is compared: "representative" (the two representative paths), "any"
    #: (congruent when any cleaned IPv4 path of the VP to the destination equals any cleaned
    #: IPv6 one) or "share" (congruent when at least half of the (IPv4 path, IPv6 path)
    #: combinations of the VP's distinct cleaned paths to the destination are equal).
    comparison: str = "representative"
    #: METHOD.md 1.2: "dropped" (a path with an AS_SET or confederation segment is dropped) or
    #: "hop" (a path whose only such segments are AS_SETs, and which ends in a plain ASN, is
    #: kept with each set as one hop; confederation segments are still dropped).
    as_set: str = "dropped"
    #: METHOD.md 4 and 7, the destination unit: "origin" (one representative path per (VP,
    #: origin AS, AFI)) or "prefix" (one per (VP, prefix, AFI), and a pair per IPv4 and IPv6
    #: prefix of the VP whose representative paths end at the same origin).
    destination: str = "origin"

    #: comparison "share": the share of equal combinations that makes a pair congruent.
    SHARE_CONGRUENT: ClassVar[float] = 0.5

    def __post_init__(self):
        for name, allowed in (("representative", REPRESENTATIVE), ("snapshots", ("all", "first")),
                              ("comparison", ("representative", "any", "share")),
                              ("as_set", ("dropped", "hop")), ("destination", ("origin", "prefix"))):
            if getattr(self, name) not in allowed:
                raise BadInput(f"{name}: expected one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        if self.destination == "prefix" and self.comparison != "representative":
            raise BadInput("destination: \"prefix\" compares the representative paths only "
                             "(comparison \"representative\")")

    def group_of(self, collector: str) -> str:
        return self.groups.get(collector, collector)

    def is_reserved(self, asn: int) -> bool:
        return any(lo <= asn <= hi for lo, hi in self.reserved_asns)


@dataclass(frozen=True)
class RelationshipParams:
    """The AS-relationship inference's parameters (relationships/METHOD.md): the config's
    [relationships] table."""

    #: IXP route-server ASNs, taken out of every path before the inference (a route server
    #: relays routes; it is no AS on the way). The list in `route_servers_file` is added.
    route_servers: frozenset[int] = frozenset()
    #: A file of route-server ASNs, one per line (`#` comments), e.g. PeeringDB's networks
    #: with info_type "Route Server"; None = only `route_servers`.
    route_servers_file: str | None = None
    #: Step 1: the clique is searched among this many ASes of the largest transit degree
    #: (AS-Rank: 10; more finds the clique where few VPs see its members' transit).
    clique_candidates: int = 25
    #: Step 1: clique links an IPv6 clique member may lack (IPv4: 0, a full mesh).
    ipv6_clique_missing: int = 1
    #: Step 6: in IPv6, clique members peer openly (Hurricane Electric): a stub neighbour of a
    #: clique member is its customer only when it has no provider yet (IPv4: always).
    ipv6_open_peering: bool = True
    #: Step 1: a third member carrying one's routes to the other toward this many
    #: destinations refutes a clique link.
    clique_refute_dests: int = 3
    #: Steps 2 and 4: paths a triplet needs before it decides a link on its own.
    min_triplet_paths: int = 3
    #: Step 3: a VP reaching at most this share of the family's ASes is a partial feed.
    partial_feed_share: float = 0.02
    #: Step 5: the transit degree from which an AS without providers is a provider-less network.
    provider_less_transit: int = 10

    def missing(self, afi: int) -> int:
        """Clique links a member may lack in family `afi`."""
        return self.ipv6_clique_missing if afi == 6 else 0

    def open_peering(self, afi: int) -> bool:
        """Whether clique members peer openly with stubs in family `afi`."""
        return self.ipv6_open_peering and afi == 6


@dataclass(frozen=True)
class SourceParams:
    """The operator's own host (the config's [source] table): its AS and the ASes it hands
    traffic to per family, `AS[:provider|peer|customer]` items, the primary first. `advise` and
    `export` use them when --from is this AS; `run`'s hints step writes the site's advice into
    the month's tunnels export."""

    #: The source host's AS; None = no [source].
    asn: int | None = None
    #: Its IPv4 neighbours: ["3356", "174:peer"] (provider unless said).
    via4: tuple[str, ...] = ()
    #: Its IPv6 neighbours, as via4.
    via6: tuple[str, ...] = ()


def read_asn_list(path: str | Path) -> frozenset[int]:
    """ASNs of a file, one per line; blank lines and `#` comments are skipped. BadInput names
    the file and line of anything else."""
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except OSError as exc:
        raise BadInput(f"{p}: cannot read the ASN list ({exc.strerror or exc})") from None
    out = set()
    for n, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if not text.isdigit() or int(text) > 2**32 - 1:
            raise BadInput(f"{p}: line {n}: expected an ASN, got {text!r}")
        out.add(int(text))
    return frozenset(out)


def load_groups(path: str | Path | None = None) -> dict[str, str]:
    """collector -> VP group from groups.toml ([groups] table); collectors not listed are their own group."""
    with open(path or GROUPS_TOML, "rb") as f:
        return dict(tomllib.load(f).get("groups", {}))
