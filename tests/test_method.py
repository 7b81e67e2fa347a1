"""The method's rules (METHOD.md) on small hand-made cases, every expected value worked out by hand."""
from __future__ import annotations

import pytest

from bgp_congruency.common.params import MethodParams, load_groups
from bgp_congruency.common.tables import TABLES
from bgp_congruency.congruency.method import (
    clean_path,
    cleaning_reason,
    edit_distance,
    is_adjacent,
    non_adopters,
    quantiles_linear,
    representative_path,
    shared_adjacent,
    shared_asns,
    strip_prepending,
)
from bgp_congruency.congruency.reference import compute_month, to_arrow
from tests.support.cases import (
    R,
    cleaning_rows,
    coverage_rows,
    full_month_rows,
    paths_rows,
    quartile_rows,
    snapshot_rows,
    vp_rows,
)

M = "2024-01"
P0 = MethodParams(min_coverage=0.0, groups=load_groups())  # the truncated-sample setting


def by_key(table, *cols):
    return {tuple(r[c] for c in cols): r for r in table}


# ---------------------------------------------------------------- step 2: prepending
def test_strip_prepending():
    assert strip_prepending([1, 1, 2, 2, 2, 3]) == (1, 2, 3)
    assert strip_prepending([1, 2, 1]) == (1, 2, 1)  # only consecutive runs collapse
    assert strip_prepending([5]) == (5,)
    assert strip_prepending([]) == ()


# ---------------------------------------------------------------- step 1: cleaning
P = MethodParams()


@pytest.mark.parametrize(
    "prefix, path, as_set, peer, expected",
    [
        ("0.0.0.0/0", [1, 2], False, 1, "default_route"),
        ("::/0", [1, 2], False, 1, "default_route"),
        ("0.0.0.0/0", None, True, 1, "default_route"),  # default_route before as_set
        ("0.0.0.0/1", [1, 2], False, 1, None),  # not a default route
        ("10.0.0.0/8", None, True, 1, "as_set"),
        ("10.0.0.0/8", [2, 3], True, 1, "as_set"),  # as_set before first_as_not_peer
        ("10.0.0.0/8", [], False, 1, "first_as_not_peer"),  # empty path
        ("10.0.0.0/8", None, False, 1, "first_as_not_peer"),  # null path without a set
        ("10.0.0.0/8", [2, 3], False, 1, "first_as_not_peer"),
        ("10.0.0.0/8", [2, 64512, 2], False, 1, "first_as_not_peer"),  # before reserved and loop
        ("10.0.0.0/8", [1, 64512, 1], False, 1, "reserved_asn"),  # reserved before loop
        ("10.0.0.0/8", [1, 2, 1], False, 1, "loop"),
        ("10.0.0.0/8", [1, 2, 3, 2, 2], False, 1, "loop"),
        ("10.0.0.0/8", [1, 1, 2, 2, 3], False, 1, None),  # prepending is not a loop
        ("10.0.0.0/8", [1], False, 1, None),
    ],
)
def test_cleaning_reason_and_precedence(prefix, path, as_set, peer, expected):
    assert cleaning_reason(prefix, path, as_set, peer, P) == expected


@pytest.mark.parametrize("asn", [0, 23456, 64496, 65000, 131071, 4200000000, 4294967295])
def test_reserved_asns_inclusive(asn):
    assert cleaning_reason("10.0.0.0/8", [1, asn, 9], False, 1, P) == "reserved_asn"


@pytest.mark.parametrize("asn", [1, 23455, 23457, 64495, 131072, 4199999999])
def test_not_reserved_just_outside(asn):
    assert cleaning_reason("10.0.0.0/8", [1, asn, 9], False, 1, P) is None


def test_reserved_ranges_come_from_params():
    custom = MethodParams(reserved_asns=((5, 6),))
    assert cleaning_reason("10.0.0.0/8", [1, 6, 9], False, 1, custom) == "reserved_asn"
    assert cleaning_reason("10.0.0.0/8", [1, 64512, 9], False, 1, custom) is None


def test_clean_path_returns_stripped_path():
    assert clean_path("10.0.0.0/8", [1, 1, 2, 3, 3], False, 1, P) == (None, (1, 2, 3))
    assert clean_path("10.0.0.0/8", [1, 2, 1], False, 1, P) == ("loop", None)


# ---------------------------------------------------------------- step 4: representative path
def test_representative_most_observations_beats_length():
    assert representative_path({(1, 2, 3): 1, (1, 4, 5, 3): 3}) == (1, 4, 5, 3)


def test_representative_tie_fewer_ases_beats_lexicographic():
    assert representative_path({(1, 2, 4, 3): 2, (1, 9, 3): 2}) == (1, 9, 3)


def test_representative_tie_smallest_sequence_as_integers():
    assert representative_path({(1, 10, 3): 2, (1, 9, 3): 2}) == (1, 9, 3)  # 9 < 10, not "10" < "9"
    assert representative_path({(1, 20, 3): 1, (1, 2, 300): 1}) == (1, 2, 300)
    assert representative_path({(7, 2, 9): 4}) == (7, 2, 9)


# ---------------------------------------------------------------- step 7: pair fields
def test_shared_asns_excludes_vp_and_destination():
    assert shared_asns([1, 2, 3, 9], [1, 3, 2, 9], 1, 9) == [2, 3]
    assert shared_asns([1, 9], [1, 9], 1, 9) == []
    assert shared_asns([1, 5, 9], [1, 6, 9], 1, 9) == []


def test_is_adjacent():
    path = [1, 2, 3, 4, 9]
    assert is_adjacent(path, 2)  # right after the VP
    assert is_adjacent(path, 4)  # right before the destination
    assert not is_adjacent(path, 3)
    assert not is_adjacent(path, 1)
    assert not is_adjacent(path, 7)  # not on the path
    assert is_adjacent([1, 5, 9], 5)
    assert not is_adjacent([1], 1)


def test_shared_adjacent():
    assert shared_adjacent([1, 5, 9], [1, 6, 9], []) is None
    assert shared_adjacent([1, 2, 5, 9], [1, 2, 6, 9], [2]) is True
    assert shared_adjacent([1, 5, 2, 9], [1, 6, 2, 9], [2]) is True  # second-to-last on both
    assert shared_adjacent([1, 5, 2, 9], [1, 2, 6, 9], [2]) is True  # mixed positions still adjacent
    assert shared_adjacent([1, 5, 2, 6, 9], [1, 2, 9], [2]) is False  # adjacent on v6 only
    assert shared_adjacent([1, 2, 3, 4, 9], [1, 2, 4, 9], [2, 4]) is True
    assert shared_adjacent([1, 2, 3, 4, 9], [1, 2, 3, 4, 9], [2, 3, 4]) is False  # 3 in the middle


def test_non_adopters():
    assert non_adopters([1, 5, 3, 4, 9], 1, 9, {3, 1, 9}) == [4, 5]
    assert non_adopters([1, 9], 1, 9, set()) == []  # VP and destination never count
    assert non_adopters([1, 3, 9], 1, 9, {3}) == []


@pytest.mark.parametrize(
    "a, b, d",
    [
        ([1, 2, 3], [1, 2, 3], 0),
        ([1, 2, 3], [1, 4, 3], 1),  # substitute
        ([1, 2, 3], [1, 3], 1),  # delete
        ([1, 3], [1, 2, 3], 1),  # insert
        ([], [1, 2], 2),
        ([1, 2, 3, 4], [1, 3, 2, 4], 2),  # a swap is two edits
        ([11, 9, 20, 20, 5, 14], [19, 9, 20, 20, 9, 14, 7], 3),  # kitten -> sitting
        ([100, 25, 20, 26, 1007], [100, 20, 1007], 2),
    ],
)
def test_edit_distance(a, b, d):
    assert edit_distance(a, b) == d
    assert edit_distance(b, a) == d


def test_quantiles_linear():
    qs = (0, 0.25, 0.5, 0.75, 1)
    assert quantiles_linear([1, 2, 3, 4], qs) == [1, 1.75, 2.5, 3.25, 4]
    assert quantiles_linear([3, 1, 2], qs) == [1, 1.5, 2, 2.5, 3]  # unsorted input
    assert quantiles_linear([0, 10], (0.1,)) == [1.0]
    assert quantiles_linear([0.4], qs) == [0.4] * 5
    assert quantiles_linear([], qs) == [None] * 5


def test_load_groups(tmp_path):
    assert load_groups() == {"route-views2": "route-views", "route-views6": "route-views"}
    f = tmp_path / "g.toml"
    f.write_text('[groups]\nrrc00 = "ris"\n')
    assert load_groups(f) == {"rrc00": "ris"}


def test_cleaning_stats_counts_each_reason_per_afi():
    rows = cleaning_rows()
    got = compute_month(iter(rows), M, P0)["cleaning_stats"]  # an iterator: one pass
    assert got == [
        {"month": M, "afi": 4, "reason": "as_set", "entries": 2},
        {"month": M, "afi": 4, "reason": "default_route", "entries": 1},
        {"month": M, "afi": 4, "reason": "first_as_not_peer", "entries": 2},
        {"month": M, "afi": 4, "reason": "kept", "entries": 2},
        {"month": M, "afi": 4, "reason": "loop", "entries": 1},
        {"month": M, "afi": 4, "reason": "reserved_asn", "entries": 1},
        {"month": M, "afi": 6, "reason": "default_route", "entries": 1},
        {"month": M, "afi": 6, "reason": "kept", "entries": 1},
    ]


def test_paths_representative_and_counts():
    rows = paths_rows()
    got = compute_month(rows, M, P0)["paths"]
    base = {"month": M, "vp_group": "rrc00", "vp_asn": 1}
    assert got == [
        {**base, "dest_asn": 1, "afi": 4, "path": [1], "observations": 1, "path_observations": 1,
         "stability": 1.0, "prefixes": 1, "snapshots": 1},
        {**base, "dest_asn": 8, "afi": 6, "path": [1, 7, 8], "observations": 4, "path_observations": 2,
         "stability": 0.5, "prefixes": 2, "snapshots": 1},
        {**base, "dest_asn": 9, "afi": 4, "path": [1, 2, 9], "observations": 5, "path_observations": 3,
         "stability": 0.6, "prefixes": 2, "snapshots": 2},
        {**base, "dest_asn": 9, "afi": 6, "path": [1, 4, 9], "observations": 2, "path_observations": 1,
         "stability": 0.5, "prefixes": 1, "snapshots": 1},
    ]


def test_snapshots_are_counted_across_mask_words():
    """Worked by hand from cases.snapshot_rows: VP 5's path is seen by route-views2 at t0 and t2
    and by route-views6 at t1, t2 and t140 (one group): 5 observations, 4 snapshots; VP 1's
    [1, 4, 7] twice at t3: 2 observations, 1 snapshot."""
    got = by_key(compute_month(snapshot_rows(), "2024-06", P0)["paths"], "vp_asn", "dest_asn", "afi")
    assert {k: (r["path_observations"], r["prefixes"], r["snapshots"]) for k, r in got.items()} == {
        (1, 9, 4): (150, 2, 150), (1, 8, 4): (4, 1, 4), (1, 8, 6): (2, 1, 2), (1, 9, 6): (2, 1, 1),
        (1, 7, 4): (2, 1, 1), (5, 9, 4): (5, 1, 4), (5, 9, 6): (1, 1, 1)}


@pytest.mark.parametrize(
    "min_cov, df1, df2",
    [(0.0, True, True), (0.5, True, True), (0.75, True, False), (0.76, False, False)],
)
def test_coverage_threshold_is_inclusive(min_cov, df1, df2):
    out = compute_month(coverage_rows(), M, MethodParams(min_coverage=min_cov))
    vps = by_key(out["vps"], "vp_asn")
    assert sorted(vps) == [(1,), (2,), (3,)]
    assert (vps[(1,)]["coverage_v4"], vps[(1,)]["coverage_v6"]) == (0.75, 1.0)
    assert (vps[(2,)]["coverage_v4"], vps[(2,)]["coverage_v6"]) == (1.0, 0.5)
    assert (vps[(3,)]["coverage_v4"], vps[(3,)]["coverage_v6"]) == (0.25, 0.0)  # 0.0, not null
    assert (vps[(1,)]["origins_v4"], vps[(1,)]["origins_v6"]) == (3, 2)
    assert [vps[(a,)]["dual_stacked"] for a in (1, 2, 3)] == [True, True, False]
    # VP 3 is never default-free, even at min_coverage 0: default-free implies dual-stacked
    assert [vps[(a,)]["default_free"] for a in (1, 2, 3)] == [df1, df2, False]
    # pairs only for default-free VPs: VP 1 -> 10, 11; VP 2 -> 10
    assert [(p["vp_asn"], p["dest_asn"]) for p in out["pairs"]] == (
        [(1, 10), (1, 11)] * df1 + [(2, 10)] * df2
    )
    s = out["month_summary"][0]
    assert (s["vps"], s["vps_dual_stacked"], s["vps_default_free"]) == (3, 2, df1 + df2)
    assert s["destinations"] == 2  # 10 and 11


def test_default_min_coverage_090_boundary():
    # 10 origins in each AFI; VP 1 covers 10/10 v4 and 9/10 v6 = 0.9 -> default-free at 0.9
    rows = [
        *(R("rrc00", 1, 4, [1, o]) for o in range(11, 21)),
        *(R("rrc00", 1, 6, [1, o]) for o in range(11, 20)),
        R("rrc00", 2, 6, [2, 20]),
        *(R("rrc00", 3, 4, [3, o]) for o in range(11, 19)),  # 8/10 = 0.8 < 0.9
        *(R("rrc00", 3, 6, [3, o]) for o in range(11, 21)),
    ]
    out = compute_month(rows, M, MethodParams())
    vps = by_key(out["vps"], "vp_asn")
    assert vps[(1,)]["coverage_v6"] == 0.9 and vps[(1,)]["default_free"] is True
    assert vps[(3,)]["coverage_v4"] == 0.8 and vps[(3,)]["default_free"] is False
    assert vps[(2,)]["dual_stacked"] is False
    # VP 1 -> 11..19; 20 is dual-stacked but VP 1 has it only in v4
    assert [p["dest_asn"] for p in out["pairs"]] == list(range(11, 20))
    assert out["month_summary"][0]["destinations"] == 10


def test_coverage_null_when_afi_absent_month_wide():
    out = compute_month([R("rrc00", 1, 4, [1, 9])], M, P0)
    (vp,) = out["vps"]
    assert (vp["coverage_v4"], vp["coverage_v6"]) == (1.0, None)
    assert vp["dual_stacked"] is False and vp["default_free"] is False
    assert vp["noncongruent_fraction"] is None and vp["pairs"] == 0


# ---------------------------------------------------------------- dual-stacked destinations
def test_dual_stacked_destinations():
    rows = [
        R("rrc00", 1, 4, [1, 5]),
        R("rrc00", 2, 6, [2, 5]),  # 5: v4 from VP 1, v6 from VP 2 -> dual-stacked, no pair
        R("rrc00", 1, 4, [1, 6]),
        R("rrc00", 1, 6, [1, 64512, 6]),  # 6: the v6 row is dropped -> not dual-stacked
        R("rrc00", 1, 4, [1, 7]),
        R("rrc00", 1, 6, [1, 1, 7]),  # 7: both AFIs, same VP -> a pair
    ]
    out = compute_month(rows, M, P0)
    s = out["month_summary"][0]
    assert s["destinations"] == 2
    assert [(p["vp_asn"], p["dest_asn"], p["congruent"]) for p in out["pairs"]] == [(1, 7, True)]


def test_vp_own_asn_is_never_a_destination():
    rows = [R("rrc00", 1, 4, [1]), R("rrc00", 1, 6, [1]), R("rrc00", 2, 4, [2, 1]), R("rrc00", 2, 6, [2, 1])]
    out = compute_month(rows, M, P0)
    assert [(p["vp_asn"], p["dest_asn"]) for p in out["pairs"]] == [(2, 1)]
    assert out["month_summary"][0]["destinations"] == 1
    assert by_key(out["vps"], "vp_asn")[(1,)]["pairs"] == 0


# ---------------------------------------------------------------- VP groups and sessions
def test_route_views2_and_6_form_one_vp():
    rows = [
        R("route-views2", 7, 4, [7, 8, 9], ip="9.0.0.7"),
        R("route-views6", 7, 4, [7, 8, 9], ip="10.0.0.7"),
        R("route-views6", 7, 6, [7, 8, 9], ip="2001:db8::7"),
        R("route-views6", 7, 6, [7, 64512, 9], ip="2001:db8::77"),  # dropped: not a session
        R("rrc00", 7, 4, [7, 9], ip="192.0.2.7"),
    ]
    out = compute_month(rows, M, P0)
    vps = by_key(out["vps"], "vp_group", "vp_asn")
    assert sorted(vps) == [("route-views", 7), ("rrc00", 7)]
    rv = vps[("route-views", 7)]
    assert rv["sessions_v4"] == ["10.0.0.7", "9.0.0.7"]  # string order
    assert rv["sessions_v6"] == ["2001:db8::7"]
    assert rv["dual_stacked"] is True and vps[("rrc00", 7)]["dual_stacked"] is False
    assert vps[("rrc00", 7)]["sessions_v6"] == []
    assert [(p["vp_group"], p["dest_asn"], p["congruent"]) for p in out["pairs"]] == [("route-views", 9, True)]
    paths = by_key(out["paths"], "vp_group", "afi")
    rv4 = paths[("route-views", 4)]  # both collectors' observations; same prefix from two sessions
    assert (rv4["observations"], rv4["path_observations"], rv4["prefixes"], rv4["snapshots"]) == (2, 2, 1, 1)

    ungrouped = compute_month(rows, M, MethodParams(min_coverage=0.0))
    assert [(v["vp_group"], v["dual_stacked"]) for v in ungrouped["vps"]] == [
        ("route-views2", False), ("route-views6", True), ("rrc00", False)]
    assert [p["vp_group"] for p in ungrouped["pairs"]] == ["route-views6"]


def test_full_month_pairs():
    pairs = compute_month(full_month_rows(), M, P0)["pairs"]
    cols = ("vp_group", "vp_asn", "dest_asn", "v4_path", "v6_path", "congruent", "hops_v4", "hops_v6",
            "shared_asns", "shared_adjacent", "non_adopters", "edit_distance")
    expected = [
        ("route-views", 200, 100, [200, 100], [200, 100], True, 1, 1, [], None, [], 0),
        ("route-views", 200, 1002, [200, 20, 1002], [200, 36, 1002], False, 2, 2, [], None, [], 1),
        ("rrc00", 100, 1001, [100, 1001], [100, 1001], True, 1, 1, [], None, [], 0),
        ("rrc00", 100, 1002, [100, 20, 1002], [100, 20, 1002], True, 2, 2, [20], True, [], 0),
        ("rrc00", 100, 1003, [100, 20, 30, 1003], [100, 20, 30, 1003], True, 3, 3, [20, 30], True, [], 0),
        ("rrc00", 100, 1004, [100, 20, 31, 32, 1004], [100, 20, 31, 32, 1004], True, 4, 4,
         [20, 31, 32], False, [], 0),
        # 35 is on VP 200's v6 path, 21 on no v6 path
        ("rrc00", 100, 1005, [100, 21, 35, 1005], [100, 22, 1005], False, 3, 2, [], None, [21], 2),
        ("rrc00", 100, 1006, [100, 20, 23, 1006], [100, 20, 24, 1006], False, 3, 3, [20], True, [23], 1),
        ("rrc00", 100, 1007, [100, 25, 20, 26, 1007], [100, 20, 1007], False, 4, 2, [20], False, [25, 26], 2),
        ("rrc00", 100, 1008, [100, 20, 33, 30, 1008], [100, 20, 30, 1008], False, 4, 3,
         [20, 30], True, [33], 1),
        ("rrc00", 100, 1009, [100, 34, 1009], [100, 20, 34, 1009], False, 2, 3, [34], True, [], 1),
    ]
    assert [dict(zip(cols, e), month=M) for e in expected] == pairs
    assert all(set(p) == set(TABLES["pairs"].names) for p in pairs)


def test_full_month_vps():
    vps = compute_month(full_month_rows(), M, P0)["vps"]
    # month-wide origins: v4 {100, 1001..1010} = 11, v6 {100, 1001..1011} = 12
    assert vps == [
        {"month": M, "vp_group": "route-views", "vp_asn": 200,
         "sessions_v4": ["198.51.100.200"], "sessions_v6": ["2001:db8::c8"],
         "origins_v4": 2, "origins_v6": 4, "coverage_v4": 2 / 11, "coverage_v6": 4 / 12,
         "dual_stacked": True, "default_free": True, "vp_class": "transit",
         "pairs": 2, "noncongruent_pairs": 1, "noncongruent_fraction": 0.5},
        {"month": M, "vp_group": "rrc00", "vp_asn": 100,
         "sessions_v4": ["192.0.2.100"], "sessions_v6": ["2001:db8::64"],
         "origins_v4": 11, "origins_v6": 10, "coverage_v4": 1.0, "coverage_v6": 10 / 12,
         "dual_stacked": True, "default_free": True, "vp_class": "edge",
         "pairs": 9, "noncongruent_pairs": 5, "noncongruent_fraction": 5 / 9},
        {"month": M, "vp_group": "rrc00", "vp_asn": 300,
         "sessions_v4": ["192.0.2.44"], "sessions_v6": [],
         "origins_v4": 1, "origins_v6": 0, "coverage_v4": 1 / 11, "coverage_v6": 0.0,
         "dual_stacked": False, "default_free": False, "vp_class": "transit",
         "pairs": 0, "noncongruent_pairs": 0, "noncongruent_fraction": None},
    ]


def test_full_month_summary():
    (s,) = compute_month(full_month_rows(), M, P0)["month_summary"]
    expected = {
        "month": M, "vps": 3, "vps_dual_stacked": 2, "vps_default_free": 2, "vps_with_pairs": 2,
        "destinations": 11, "pairs": 11, "noncongruent_pairs": 6, "noncongruent_fraction": 6 / 11,
        "congruent_1hop": 2, "congruent_2hop": 1, "congruent_3plus_hops": 2,
        "noncongruent_shared_0": 2, "noncongruent_shared_1": 3, "noncongruent_shared_2plus": 1,
        "noncongruent_with_shared": 4, "shared_all_adjacent": 3, "shared_all_adjacent_fraction": 0.75,
        "noncongruent_with_non_adopter": 4, "non_adopter_fraction": 4 / 6,
        # two VPs: fractions 0.5 and 5/9
        "vp_noncongruent_min": 0.5, "vp_noncongruent_q1": 0.5 + 0.25 * (5 / 9 - 0.5),
        "vp_noncongruent_median": 0.5 + 0.5 * (5 / 9 - 0.5), "vp_noncongruent_q3": 0.5 + 0.75 * (5 / 9 - 0.5),
        "vp_noncongruent_max": 5 / 9,
    }
    assert set(s) == set(TABLES["month_summary"].names)
    assert {k: s[k] for k in expected if not isinstance(expected[k], float)} == {
        k: v for k, v in expected.items() if not isinstance(v, float)}
    for k, v in expected.items():
        if isinstance(v, float):
            assert s[k] == pytest.approx(v, abs=1e-12), k


def test_non_adopters_use_every_cleaned_v6_path():
    rows = [
        R("rrc00", 1, 4, [1, 5, 6, 9]),
        R("rrc00", 1, 6, [1, 7, 9]), R("rrc00", 1, 6, [1, 7, 9]),
        R("rrc00", 1, 6, [1, 5, 9]),  # not representative, still a cleaned v6 path: 5 adopted
        R("rrc00", 2, 6, [2, 8, 6, 64512, 3]),  # dropped: 6 not adopted
    ]
    (p,) = compute_month(rows, M, P0)["pairs"]
    assert p["v6_path"] == [1, 7, 9] and p["non_adopters"] == [6]


def _quartiles(s):
    return [s[f"vp_noncongruent_{k}"] for k in ("min", "q1", "median", "q3", "max")]


def test_quartiles_odd_number_of_vps():
    (s,) = compute_month(quartile_rows(), M, P0)["month_summary"]
    assert (s["vps"], s["vps_dual_stacked"], s["vps_default_free"], s["vps_with_pairs"]) == (5, 4, 4, 3)
    assert _quartiles(s) == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_quartiles_even_number_of_vps():
    rows = quartile_rows() + vp_rows(4, {901: False, 902: True, 903: True, 904: True})  # 0.25
    (s,) = compute_month(rows, M, P0)["month_summary"]
    assert s["vps_with_pairs"] == 4
    # sorted [0, 0.25, 0.5, 1]: positions 0.75, 1.5, 2.25
    assert _quartiles(s) == [0.0, 0.1875, 0.375, 0.625, 1.0]
    assert (s["pairs"], s["noncongruent_pairs"], s["congruent_2hop"]) == (10, 4, 6)
    assert (s["noncongruent_shared_0"], s["noncongruent_with_shared"]) == (4, 0)
    assert s["shared_all_adjacent_fraction"] is None
    assert (s["noncongruent_with_non_adopter"], s["non_adopter_fraction"]) == (0, 0.0)  # 50 is on v6 paths


# ---------------------------------------------------------------- empty months and Arrow
def test_month_without_pairs_has_one_summary_row():
    (s,) = compute_month([R("rrc00", 1, 4, [1, 9])], M, P0)["month_summary"]
    assert s["vps"] == 1 and s["pairs"] == 0 and s["congruent_1hop"] == 0
    assert s["noncongruent_fraction"] is None and s["non_adopter_fraction"] is None
    assert _quartiles(s) == [None] * 5

    out = compute_month([], M, P0)
    assert {k: len(v) for k, v in out.items()} == {
        "cleaning_stats": 0, "paths": 0, "vps": 0, "pairs": 0, "divergence": 0, "month_summary": 1}
    assert out["month_summary"][0]["vps"] == 0 and out["month_summary"][0]["destinations"] == 0


def test_to_arrow_schemas_and_values():
    rows = full_month_rows() + [R("rrc00", 4199999999, 4, [4199999999, 1001])]  # > 2**31, not reserved
    tables = to_arrow(compute_month(rows, M, P0))
    assert set(tables) == set(TABLES)
    for name, t in tables.items():
        assert t.schema == TABLES[name], name
    assert tables["pairs"].num_rows == 11 and tables["month_summary"].num_rows == 1
    assert tables["pairs"].column("shared_adjacent").to_pylist()[:4] == [None, None, None, True]
    assert tables["vps"].column("vp_asn").to_pylist()[-1] == 4199999999
    empty = to_arrow(compute_month([], M, P0))
    assert empty["pairs"].num_rows == 0 and empty["pairs"].schema == TABLES["pairs"]


# ---------------------------------------------------------------- divergence (METHOD.md 7b)
def test_divergence_by_hand():
    from bgp_congruency.congruency.method import divergence

    # Part right after the VP, rejoin only at the destination.
    assert divergence((1, 2, 3, 9), (1, 5, 9)) == dict(
        common_prefix=1, common_suffix=1, part_asn=1, rejoin_asn=9, only_v4=[2, 3], only_v6=[5])
    # Share 1-2, part, rejoin at 7 before the destination 9.
    assert divergence((1, 2, 4, 7, 9), (1, 2, 5, 6, 7, 9)) == dict(
        common_prefix=2, common_suffix=2, part_asn=2, rejoin_asn=7, only_v4=[4], only_v6=[5, 6])
    # Same ASes, two swapped: the shared start and end overlap nothing, nothing is on one path only.
    assert divergence((1, 3, 2, 9), (1, 2, 3, 9)) == dict(
        common_prefix=1, common_suffix=1, part_asn=1, rejoin_asn=9, only_v4=[], only_v6=[])
    # A longer IPv6 detour: the IPv4 path is shorter than the shared start + end would suggest.
    assert divergence((1, 9), (1, 8, 9)) == dict(
        common_prefix=1, common_suffix=1, part_asn=1, rejoin_asn=9, only_v4=[], only_v6=[8])


def test_first_as_rule_off_keeps_route_server_paths():
    """The sensitivity variant: a route server's path (its own AS not first) is kept; an
    empty path still has no first AS."""
    off = MethodParams(first_as_rule=False)
    assert clean_path("10.0.0.0/8", [7, 7, 1, 9], False, 5, off) == (None, (7, 1, 9))
    assert clean_path("10.0.0.0/8", [7, 1, 9], False, 5, MethodParams()) == ("first_as_not_peer", None)
    assert clean_path("10.0.0.0/8", [], False, 5, off) == ("first_as_not_peer", None)


def test_set_hop_path():
    """as_set "hop": each AS_SET one hop, its id worked out by hand here; confederations and
    paths ending in a set stay out."""
    from bgp_congruency.congruency.method import SET_HASH_MOD, set_hop_path

    assert SET_HASH_MOD == 2**61 - 1
    # {65001,64512} sorted: (0 * 1000003 + 64512) * 1000003 + 65001 = 64512258537 -> id -64512258538
    assert set_hop_path("3356 1299 {65001,64512} 3 {7} 9") == (3356, 1299, -64512258538, 3, -8, 9)
    assert set_hop_path("1 {64512,65001} 2") == set_hop_path("1 {65001,64512} 2")  # a set is unordered
    for raw in ("(65001 65002) 3356 1", "1 [65001 65002] 2", "3356 {1,2}", "", None, "1  2"):
        assert set_hop_path(raw) is None, raw
    assert set_hop_path("1 2 3") == (1, 2, 3)
