from __future__ import annotations

from datetime import datetime, timedelta, timezone


def R(collector, peer, afi, path, prefix=None, t=0, ip=None, as_set=False):
    """One rib_entries row; prefix and peer IP derived from origin / peer unless given."""
    o = path[-1] if path else 0
    if prefix is None:
        prefix = f"10.{o // 256 % 256}.{o % 256}.0/24" if afi == 4 else f"2001:db8:{o:x}::/48"
    if ip is None:
        ip = f"192.0.2.{peer % 256}" if afi == 4 else f"2001:db8::{peer:x}"
    return dict(collector=collector, snapshot_time=t, peer_asn=peer, peer_ip=ip, afi=afi,
                prefix=prefix, as_path=None if path is None else list(path), has_as_set=as_set)


# ---------------------------------------------------------------- compute_month: cleaning_stats
def cleaning_rows():
    return [
        R("rrc00", 1, 4, [1, 2], prefix="0.0.0.0/0", as_set=True),
        R("rrc00", 1, 4, None, as_set=True),
        R("rrc00", 1, 4, [2, 3], as_set=True),
        R("rrc00", 1, 4, []),
        R("rrc00", 1, 4, [2, 3]),
        R("rrc00", 1, 4, [1, 64512, 1]),
        R("rrc00", 1, 4, [1, 2, 1]),
        R("rrc00", 1, 4, [1, 1, 2]),
        R("rrc00", 1, 4, [1, 3]),
        R("rrc00", 1, 6, [1, 2], prefix="::/0"),
        R("rrc00", 1, 6, [1, 2]),
    ]


def hop_rows():
    """as_set "hop": paths read from their text, each AS_SET one hop, then cleaned like any
    other: VP 11's IPv4 path to 100 prepends its own AS ([11, {5,6}, 100] once collapsed), to
    200 it loops through 11 (dropped), to 300 it is plain; IPv6 reaches all three via AS7."""
    def text(dest, raw):  # the decoder leaves as_path out of a path with a set
        return dict(R("route-views2", 11, 4, [11, dest]), as_path=None, has_as_set=True, as_path_raw=raw)
    return [
        text(100, "11 11 {6,5} 100"), text(200, "11 {6,5} 7 11 200"), text(300, "11 {8} 300"),
        R("route-views2", 11, 4, [11, 11, 9, 400]),
        *(R("route-views6", 11, 6, [11, 7, d]) for d in (100, 200, 300, 400)),
    ]


# ---------------------------------------------------------------- compute_month: paths
def paths_rows():
    t1, t2, t3 = (datetime(2024, 1, d, tzinfo=timezone.utc) for d in (1, 2, 3))
    return [
        # (VP 1, origin 9, v4): (1,2,9) seen 3x after de-prepending, (1,3,4,9) 2x
        R("rrc00", 1, 4, [1, 2, 9], prefix="10.1.0.0/16", t=t1),
        R("rrc00", 1, 4, [1, 1, 2, 9], prefix="10.2.0.0/16", t=t1),
        R("rrc00", 1, 4, [1, 2, 2, 9], prefix="10.1.0.0/16", t=t2),
        R("rrc00", 1, 4, [1, 3, 4, 9], prefix="10.3.0.0/16", t=t1),
        R("rrc00", 1, 4, [1, 3, 4, 9], prefix="10.3.0.0/16", t=t3),
        R("rrc00", 1, 4, [1, 2, 1, 9], prefix="10.1.0.0/16", t=t3),  # loop: dropped, not counted
        # (VP 1, origin 8, v6): 2 vs 2 -> fewer ASes wins
        R("rrc00", 1, 6, [1, 5, 6, 8], prefix="2001:db8:a::/48", t=t1),
        R("rrc00", 1, 6, [1, 5, 6, 8], prefix="2001:db8:a::/48", t=t2),
        R("rrc00", 1, 6, [1, 7, 8], prefix="2001:db8:b::/48", t=t1),
        R("rrc00", 1, 6, [1, 7, 8], prefix="2001:db8:c::/48", t=t1),
        # (VP 1, origin 9, v6): 1 vs 1, same length -> (1,4,9) < (1,10,9) as integers
        R("rrc00", 1, 6, [1, 10, 9], t=t1),
        R("rrc00", 1, 6, [1, 4, 9], t=t2),
        # the VP's own prefix: a one-AS path, kept in paths
        R("rrc00", 1, 4, [1], t=t1),
    ]


def snapshot_rows():
    """150 snapshot times (the engines keep a path's snapshots as bits in 64-bit words: three
    words here), with counts that straddle the words' edges."""
    t = [datetime(2024, 6, 1, tzinfo=timezone.utc) + timedelta(hours=h) for h in range(150)]
    return [
        # every snapshot, two prefixes taking turns: 150 snapshots, 2 prefixes
        *(R("rrc00", 1, 4, [1, 2, 9], prefix=f"10.{i % 2}.0.0/16", t=t[i]) for i in range(150)),
        # the last of word 0, the first of word 1, the last of word 1, the first of word 2
        *(R("rrc00", 1, 4, [1, 3, 8], t=t[i]) for i in (63, 64, 127, 128)),
        # the same bit in two words (0 and 64): 2 snapshots, not 1
        *(R("rrc00", 1, 6, [1, 3, 8], t=t[i]) for i in (0, 64)),
        # one snapshot, two sessions
        R("rrc00", 1, 6, [1, 2, 9], t=t[149]),
        R("rrc00", 1, 6, [1, 2, 9], t=t[149], ip="2001:db8::ff"),
        # The month's routes (common/routes.py) number each collector's own snapshots: VP 5 of
        # the route-views group is on route-views2 at t0 and t2 (its bits 0 and 1: at 0 and 2 of
        # the month's) and route-views6 at t1, t2 and t140 (its 0, 1, 2: at 1, 2 and 140, in
        # word 2): the path's snapshots are 4 (t2 once), its observations 5.
        *(R("route-views2", 5, 4, [5, 2, 9], t=t[i], ip="192.0.2.5") for i in (0, 2)),
        *(R("route-views6", 5, 4, [5, 2, 9], t=t[i], ip="192.0.2.50") for i in (1, 2, 140)),
        R("route-views6", 5, 6, [5, 2, 9], t=t[1]),
        # the same entry twice in one snapshot (an ADD-PATH RIB): two observations, one snapshot
        *(R("rrc00", 1, 4, [1, 4, 7], t=t[3]) for _ in range(2)),
    ]


# ---------------------------------------------------------------- coverage and default-free
def coverage_rows():
    # v4 origins month-wide: 10..13 (4); v6 origins: 10, 11 (2)
    return [
        *(R("rrc00", 1, 4, [1, 50, o]) for o in (10, 11, 12)),  # 3/4 = 0.75
        *(R("rrc00", 1, 6, [1, 50, o]) for o in (10, 11)),  # 2/2 = 1.0
        *(R("rrc00", 2, 4, [2, 50, o]) for o in (10, 11, 12, 13)),  # 4/4 = 1.0
        R("rrc00", 2, 6, [2, 50, 10]),  # 1/2 = 0.5
        R("rrc00", 3, 4, [3, 13]),  # 1/4, no v6
        R("rrc00", 4, 6, [4, 64512, 10]),  # only dropped rows: not a VP
    ]


# ---------------------------------------------------------------- a full month: pairs, vps, summary
def full_month_rows():
    v = lambda dest, p4, p6: [R("rrc00", 100, 4, p4), R("rrc00", 100, 6, p6)]  # noqa: E731
    return [
        R("rrc00", 100, 4, [100]), R("rrc00", 100, 6, [100]),  # own prefix: no pair (100, 100)
        *v(1001, [100, 1001], [100, 1001]),
        *v(1002, [100, 20, 1002], [100, 20, 1002]),
        *v(1003, [100, 20, 30, 1003], [100, 20, 30, 1003]),
        *v(1004, [100, 20, 31, 32, 1004], [100, 20, 31, 32, 1004]),
        *v(1005, [100, 21, 35, 1005], [100, 22, 1005]),
        *v(1006, [100, 20, 23, 1006], [100, 20, 24, 1006]),
        *v(1007, [100, 25, 20, 26, 1007], [100, 20, 1007]),
        *v(1008, [100, 20, 33, 30, 1008], [100, 20, 30, 1008]),
        *v(1009, [100, 34, 1009], [100, 20, 34, 1009]),
        R("rrc00", 100, 4, [100, 200, 1010]),  # 200 is intermediate -> transit
        R("route-views2", 200, 4, [200, 100], ip="198.51.100.200"),
        R("route-views6", 200, 6, [200, 100], ip="2001:db8::c8"),
        R("route-views2", 200, 4, [200, 20, 1002], ip="198.51.100.200"),
        R("route-views6", 200, 6, [200, 36, 1002], ip="2001:db8::c8"),
        R("route-views6", 200, 6, [200, 1010], ip="2001:db8::c8"),
        R("route-views6", 200, 6, [200, 300, 35, 1011], ip="2001:db8::c8"),  # 300 transit via v6
        R("route-views2", 200, 4, [200, 100, 64512, 5], ip="198.51.100.200"),  # dropped: 100 stays edge
        R("rrc00", 300, 4, [300, 1001]),
    ]


def quartile_rows():
    return [
        *vp_rows(1, {901: True, 902: True}),  # 0
        *vp_rows(2, {901: True, 902: False}),  # 0.5
        *vp_rows(3, {901: False, 902: False}),  # 1.0
        R("rrc00", 5, 4, [5, 901]),  # no pairs: not in the quartiles
        R("rrc00", 6, 4, [6, 901]), R("rrc00", 6, 6, [6, 902]),  # dual-stacked, 0 pairs
    ]


# ---------------------------------------------------------------- quartiles over VPs
def vp_rows(vp, dests):
    rows = []
    for dest, congruent in dests.items():
        rows += [R("rrc00", vp, 4, [vp, 50, dest]), R("rrc00", vp, 6, [vp, 50 if congruent else 60, dest])]
    return rows
