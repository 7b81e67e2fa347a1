"""Parameters of the method (congruency/METHOD.md); one frozen object shared by every engine,
the reference and the configuration."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from typing import ClassVar
from pathlib import Path
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


def load_groups(path: str | Path | None = None) -> dict[str, str]:
    """collector -> VP group from groups.toml ([groups] table); collectors not listed are their own group."""
    with open(path or GROUPS_TOML, "rb") as f:
        return dict(tomllib.load(f).get("groups", {}))
