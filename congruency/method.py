"""The rules of METHOD.md as small pure functions (shared by the reference and the path selector).

Paths are sequences of int ASNs; functions return tuples/lists of ints, never mutate input.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

from bgp_congruency.common.params import MethodParams

DEFAULT_ROUTES = frozenset({"0.0.0.0/0", "::/0"})
#: Cleaning reasons in precedence order (METHOD.md step 1); `KEPT` counts the survivors.
REASONS = ("default_route", "as_set", "first_as_not_peer", "reserved_asn", "loop")
KEPT = "kept"


def strip_prepending(path: Sequence[int]) -> tuple[int, ...]:
    """Collapse runs of equal consecutive ASNs: prepending is traffic engineering, not a hop."""
    out: list[int] = []
    for asn in path:
        if not out or out[-1] != asn:
            out.append(asn)
    return tuple(out)


def clean_path(
    prefix: str,
    as_path: Sequence[int] | None,
    has_as_set: bool,
    peer_asn: int,
    params: MethodParams,
) -> tuple[str | None, tuple[int, ...] | None]:
    """(first cleaning reason, None) for a dropped row, (None, prepending-stripped path) for a kept one.

    The order matters because each dropped row is counted under exactly one reason.
    """
    if prefix in DEFAULT_ROUTES:  # a default route says nothing about any origin
        return "default_route", None
    if has_as_set:  # sets have no order, so hops and adjacency are undefined
        return "as_set", None
    path = tuple(as_path or ())
    if not path or (params.first_as_rule and path[0] != peer_asn):  # the VP must be the path's first AS
        return "first_as_not_peer", None
    if any(params.is_reserved(a) for a in path):  # private/documentation/AS_TRANS: not real ASes
        return "reserved_asn", None
    stripped = strip_prepending(path)
    if len(set(stripped)) != len(stripped):  # a loop left after de-prepending is a broken path
        return "loop", None
    return None, stripped


def cleaning_reason(
    prefix: str,
    as_path: Sequence[int] | None,
    has_as_set: bool,
    peer_asn: int,
    params: MethodParams,
) -> str | None:
    """The first reason of METHOD.md step 1 that applies, or None when the row is kept."""
    return clean_path(prefix, as_path, has_as_set, peer_asn, params)[0]


#: A path text whose only non-plain segments are AS_SETs, ending in a plain ASN (bgpdump's spelling).
_SETS_ONLY = re.compile(r"([0-9]+ |\{[0-9,]+\} )*[0-9]+")
#: A set hop is -1 - (its sorted members' polynomial hash, base 1000003, mod 2^61 - 1): never an ASN.
SET_HASH_MOD = 2**61 - 1


def set_hop_path(raw: str | None) -> tuple[int, ...] | None:
    """The path of bgpdump-style text with each AS_SET as one hop (MethodParams.as_set
    "hop"), or None when it has a confederation segment or ends in a set."""
    if raw is None or not _SETS_ONLY.fullmatch(raw):
        return None
    out = []
    for t in raw.split(" "):
        if t.startswith("{"):
            h = 0
            for m in sorted(int(x) for x in t.strip("{}").split(",")):
                h = (h * 1000003 + m) % SET_HASH_MOD
            out.append(-1 - h)
        else:
            out.append(int(t))
    return tuple(out)


def representative_path(paths: Mapping[tuple[int, ...], int | tuple[int, int, int]],
                        rule: str = "observations") -> tuple[int, ...]:
    """The representative path (METHOD.md 4) among `paths`: path -> observations, or path ->
    (observations, distinct prefixes, snapshots). By `rule` (MethodParams.representative):
    the most observations, prefixes or snapshots, ties to the most observations, then fewer
    ASes, then the smallest ASN sequence; "lowest": the smallest ASN sequence alone."""
    def stats(v):
        return v if isinstance(v, tuple) else (v, 0, 0)

    if rule == "lowest":
        return min(tuple(p) for p in paths)
    first = {"observations": 0, "prefixes": 1, "snapshots": 2}[rule]
    return min(paths.items(), key=lambda kv: (-stats(kv[1])[first], -stats(kv[1])[0], len(kv[0]), tuple(kv[0])))[0]


def shared_asns(v4: Sequence[int], v6: Sequence[int], vp: int, dest: int) -> list[int]:
    """ASes on both paths besides the two ends, which every path trivially shares."""
    return sorted((set(v4) & set(v6)) - {vp, dest})


def is_adjacent(path: Sequence[int], asn: int) -> bool:
    """True when `asn` is right after the VP (2nd AS) or right before the destination (2nd-to-last)."""
    return len(path) >= 2 and (path[1] == asn or path[-2] == asn)


def shared_adjacent(v4: Sequence[int], v6: Sequence[int], shared: Iterable[int]) -> bool | None:
    """None when nothing is shared; else whether every shared AS is adjacent on both paths
    (i.e. the divergence is explained by a direct neighbour of the VP or of the destination)."""
    shared = list(shared)
    if not shared:
        return None
    return all(is_adjacent(v4, a) and is_adjacent(v6, a) for a in shared)


def non_adopters(v4: Sequence[int], vp: int, dest: int, v6_asns: set[int] | frozenset[int]) -> list[int]:
    """Intermediate ASes of the IPv4 path never seen on any cleaned IPv6 path: likely not IPv6-capable."""
    return sorted({a for a in v4 if a != vp and a != dest and a not in v6_asns})


def edit_distance(a: Sequence[int], b: Sequence[int]) -> int:
    """Levenshtein distance between ASN sequences (insert, delete, substitute cost 1)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def divergence(v4: Sequence[int], v6: Sequence[int]) -> dict:
    """Where two different paths of a pair part and rejoin (METHOD.md "Divergence").

    common_prefix / common_suffix: ASes the two paths share at their start (>= 1: the VP)
    and at their end (>= 1: the destination); part_asn the last AS before they part,
    rejoin_asn the first AS where they rejoin; only_v4 / only_v6 the ASes on one path only."""
    n = min(len(v4), len(v6))
    pre = next((i for i in range(n) if v4[i] != v6[i]), n)
    suf = next((i for i in range(n) if v4[-1 - i] != v6[-1 - i]), n)
    return dict(common_prefix=pre, common_suffix=suf, part_asn=v4[pre - 1], rejoin_asn=v4[len(v4) - suf],
                only_v4=sorted(set(v4) - set(v6)), only_v6=sorted(set(v6) - set(v4)))


def quantiles_linear(values: Iterable[float], qs: Sequence[float]) -> list[float | None]:
    """Quantiles by linear interpolation between closest ranks (numpy default, Spark `percentile`).

    Position h = (n - 1) * q in the sorted values; result v[lo] + (h - lo) * (v[lo+1] - v[lo]).
    All None when there are no values.
    """
    v = sorted(float(x) for x in values)
    if not v:
        return [None for _ in qs]
    out: list[float | None] = []
    for q in qs:
        h = (len(v) - 1) * q
        lo = math.floor(h)
        hi = min(lo + 1, len(v) - 1)
        out.append(v[lo] + (h - lo) * (v[hi] - v[lo]))
    return out

