"""The hand-made month of tests/test_relationships.py: each family's paths (VP first, origin
last) of a small Internet whose relationships are worked out by hand in the test.

    clique 1, 2, 3 (peers)             customers: 1 > 10 (IPv4 only), 2 > 20, 3 > 30, 3 > 50
    10 > 100, 20 > 200, 20 > 210, 30 > 300   10 - 20: peers in IPv4; in IPv6 20 > 10 (hybrid)
    6695: an IXP route server that puts its ASN in VP 100's IPv4 paths between 10 and 20
    VP 50 sends a partial feed: its peer 20's customers 200 and 210; 210 is on no other path

VPs: 1, 2 (clique), 100 (a stub behind 10), 300 (a stub behind 30), 50 (partial).
"""
from __future__ import annotations

ROUTE_SERVER = 6695

V4 = [
    # VP 1 (clique): its customers, its peers 2 and 3 and their customers
    [1, 10], [1, 10, 100], [1, 2], [1, 2, 20], [1, 2, 20, 200], [1, 3], [1, 3, 30], [1, 3, 30, 300], [1, 3, 50],
    # VP 2
    [2, 1], [2, 1, 10], [2, 1, 10, 100], [2, 20], [2, 20, 200], [2, 3], [2, 3, 30], [2, 3, 30, 300], [2, 3, 50],
    # VP 300: everything through its provider 30, then 3
    [300, 30], [300, 30, 3], [300, 30, 3, 1], [300, 30, 3, 1, 10], [300, 30, 3, 1, 10, 100], [300, 30, 3, 2],
    [300, 30, 3, 2, 20], [300, 30, 3, 2, 20, 200], [300, 30, 3, 50],
    # VP 100: its provider 10's peer 20 (over the IXP, the route server in the path), the rest through 1
    [100, 10], [100, 10, ROUTE_SERVER, 20], [100, 10, ROUTE_SERVER, 20, 200], [100, 10, 1], [100, 10, 1, 2],
    [100, 10, 1, 3], [100, 10, 1, 3, 30], [100, 10, 1, 3, 30, 300], [100, 10, 1, 3, 50],
    # VP 50: a partial feed, its peer 20's customers only
    [50, 20, 200], [50, 20, 210],
]

V6 = [
    # In IPv6, 1 does not serve 10: 10 buys transit from 20.
    [1, 2], [1, 2, 20], [1, 2, 20, 10], [1, 2, 20, 10, 100], [1, 2, 20, 200], [1, 3], [1, 3, 30], [1, 3, 30, 300],
    [2, 1], [2, 20], [2, 20, 10], [2, 20, 10, 100], [2, 20, 200], [2, 3], [2, 3, 30], [2, 3, 30, 300],
    [300, 30], [300, 30, 3], [300, 30, 3, 1], [300, 30, 3, 2], [300, 30, 3, 2, 20], [300, 30, 3, 2, 20, 10],
    [300, 30, 3, 2, 20, 10, 100], [300, 30, 3, 2, 20, 200],
    [100, 10], [100, 10, 20], [100, 10, 20, 2], [100, 10, 20, 200], [100, 10, 20, 2, 1], [100, 10, 20, 2, 3],
    [100, 10, 20, 2, 3, 30], [100, 10, 20, 2, 3, 30, 300],
]

PATHS = {4: V4, 6: V6}


def items(afi: int) -> list[tuple[int, list[int]]]:
    """(VP AS, path) items of one family."""
    return [(p[0], p) for p in PATHS[afi]]


def rows(month: str) -> list[dict]:
    """The paths as rows of the `paths` table's columns the inference reads."""
    return [{"month": month, "vp_group": "rv", "vp_asn": p[0], "dest_asn": p[-1], "afi": afi, "path": p}
            for afi, ps in PATHS.items() for p in ps]
