"""Today's rules (1-7) evaluated set-based (selector/proxies.py, `evaluate --reveal none`)
against their reference one question at a time (selector/reference.proxies_held_out, which asks
selector/reference.proxy_answer): a hand-made month whose answers are worked out below (each rule
the held-out evaluation can reach, the stubs' among them: the real sample's VPs are no stubs),
and the real sample, equal row for row."""
from __future__ import annotations

import collections

import pytest

from bgp_congruency.common import duck
from bgp_congruency.congruency import reference
from bgp_congruency.selector import proxies as P
from bgp_congruency.selector import reference as selector_reference
from bgp_congruency.selector.month import Month
from tests.support import hintdata
from tests.support.data import needs_data

MONTH = hintdata.MONTH
# (vp, destination) -> (IPv4 path, IPv6 path or None).
PATHS = {
    (10, 100): ([10, 1, 100], [10, 2, 100]),
    (10, 30): ([10, 1, 30], [10, 2, 30]),       # AS1 before AS30 in IPv4, AS2 in IPv6
    (10, 40): ([10, 5, 40], [10, 5, 40]),       # AS5 before AS40 in both families
    (10, 200): ([10, 3, 200], [10, 4, 200]),    # disjoint
    (10, 300): ([10, 1, 300], [10, 9, 300]),
    (10, 500): ([10, 20, 50, 500], None),       # VP 50 right after AS20
    (10, 600): ([10, 20, 600], None),           # crosses AS20, IPv4 only
    (30, 100): ([30, 1, 100], [30, 2, 100]),    # disjoint
    (30, 300): ([30, 1, 300], [30, 2, 300]),    # disjoint
    (40, 200): ([40, 5, 7, 200], [40, 5, 8, 200]),  # shared-edge (AS5 next to the source)
    (20, 400): ([20, 6, 400], [20, 6, 400]),    # congruent
    (20, 600): ([20, 600], [20, 600]),          # congruent
    (50, 400): ([50, 400], None),               # VP 50 has no pair
    (10, 700): ([10, 20, 21, 700], [10, 20, 22, 700]),  # crosses AS20 in both families
    (20, 700): ([20, 21, 700], [20, 23, 700]),  # disjoint
    (20, 100): ([20, 1, 100], [20, 2, 100]),    # disjoint
}
# Worked by hand, each VP AS held out in turn (selector/rules.py 1-7):
# - 30 -> 100 (provider): no path crosses AS30 and nothing follows it (a stub). Its neighbours:
#   AS1 in IPv4, AS2 in IPv6 (VP 10's paths to AS30); their routes to AS100 are VP 10's, 1 100
#   and 2 100 (VP 10's and VP 20's): 30 1 100 and 30 2 100, disjoint, both exact. Confidence:
#   stability 1 x 2 of 2 snapshots x 0.5 (a proxy) = 0.5, so aggregate; two proxy VP ASes.
# - 30 -> 300 (none): AS1's IPv4 route is 1 300, but no IPv6 path to AS300 crosses AS2, and AS30's
#   neighbours differ between the families (no one-neighbour rule); a stub has no upstream:
#   unknown, its IPv4 path 30 1 300 kept (exact).
# - 40 -> 200 (one-neighbour): a stub behind AS5 in both families, and no path to AS200 crosses
#   AS5: the one other pair to AS200 (VP 10's, disjoint) is seen behind AS5: shared-edge, 1 of
#   1 (confidence 1.0): right; no path given.
# - 20 -> 400 (upstream, unknown): no path to AS400 crosses AS20; AS20 hands traffic on (AS50
#   and AS600 follow it), so no stub; no other pair goes to AS400 (no destination class). Its
#   upstream VP 50 has only an IPv4 path, 50 400: 20 50 400, one AS off the pair's 20 6 400.
# - 20 -> 600 (through, unknown): VP 10's IPv4 path crosses AS20 (20 600, exact) and its IPv6
#   path does not; no destination class and the upstream VP 50 has no path to AS600, so the
#   first kind of proxy that exists answers: through, unknown, one proxy.
# - 20 -> 700 (through): VP 10's paths cross AS20 in both families: 20 21 700 and 20 22 700,
#   disjoint (right); IPv4 exact, IPv6 one AS off the pair's 20 23 700; 0.5 x 1 agreeing.
# - 20 -> 100 (destination): no path to AS100 crosses AS20, which is no stub: the other pairs to
#   AS100, VP 10's and VP 30's, are both disjoint: disjoint, 2 of 2 (confidence 1.0), right.
# Not here: the upstream rule with a class. The held-out evaluation never reaches it: an upstream
# VP with paths to the destination in both families has a pair to it, so rule 6 answers first.
WANT = {  # (rule, observed, predicted, v4 exact, v6 exact, v4 hops off, v6 hops off, proxies, confidence, mode)
    (30, 100): ("provider", "disjoint", "disjoint", True, True, 0, 0, 2, 0.5, "aggregate"),
    (30, 300): ("none", "disjoint", "unknown", True, None, 0, None, 0, 0.0, "single-path"),
    (40, 200): ("one-neighbour", "shared-edge", "shared-edge", None, None, None, None, 1, 1.0, "aggregate"),
    (20, 400): ("upstream", "congruent", "unknown", False, None, 1, None, 1, 0.0, "single-path"),
    (20, 600): ("through", "congruent", "unknown", True, None, 0, None, 1, 0.0, "single-path"),
    (20, 700): ("through", "disjoint", "disjoint", True, False, 0, 1, 1, 0.5, "aggregate"),
    (20, 100): ("destination", "disjoint", "disjoint", None, None, None, None, 2, 1.0, "aggregate"),
}
COLS = ("rule", "observed_class", "predicted_class", "v4_exact", "v6_exact", "v4_hop_distance",
        "v6_hop_distance", "proxies", "confidence", "predicted_mode")


@pytest.fixture(scope="module")
def month(tmp_path_factory, hint_month):
    data = tmp_path_factory.mktemp("proxies-month")
    rows = []
    for (vp, dest), (p4, p6) in PATHS.items():
        for t in (hintdata.T0, hintdata.T1):
            rows.append(hintdata.row(vp, 4, p4, hintdata.v4(dest), t))
            if p6:
                rows.append(hintdata.row(vp, 6, p6, hintdata.v6(dest), t))
    hintdata.write_entries(data, MONTH, rows)
    hintdata.write_tables(data, MONTH, reference.compute_month(rows, MONTH, hintdata.P0))
    return hint_month.cfg.with_overrides(data_dir=data)


def _equal(sql: list[dict], ref: list[dict]) -> None:
    key = lambda r: (r["vp_asn"], r["vp_group"], r["dest_asn"])  # noqa: E731
    cols = [c for c in ref[0] if c not in ("calibrated_confidence", "reveal")]
    assert [{c: r[c] for c in cols} for r in sorted(sql, key=key)] == [{c: r[c] for c in cols} for r in sorted(ref, key=key)]


@pytest.mark.slow
def test_every_rule_as_worked_by_hand_and_as_its_reference(month):
    _m, ref = selector_reference.proxies_held_out(month, MONTH)
    for parts in (None, 3):  # one destination partition and three
        sql = P.answers(month, MONTH, parts=parts).to_pylist()
        assert {(r["vp_asn"], r["dest_asn"]): tuple(r[c] for c in COLS) for r in sql
                if (r["vp_asn"], r["dest_asn"]) in WANT} == WANT, parts
        _equal(sql, ref)


def _one_source_per_rule(rows: list[dict]) -> set[int]:
    """The first VP AS (by ASN) that has an answer of each rule: the reference is slow (a
    query per question), so it checks these sources' every question."""
    return {min(r["vp_asn"] for r in rows if r["rule"] == rule) for rule in {r["rule"] for r in rows}}


@pytest.mark.slow
@needs_data
def test_the_set_based_evaluation_equals_its_reference_on_the_real_sample(sample):
    sql = P.answers(sample.cfg, "2026-07").to_pylist()
    asns = _one_source_per_rule(sql)
    _m, ref = selector_reference.proxies_held_out(sample.cfg, "2026-07", asns=asns)
    assert {r["rule"] for r in ref} == {"through", "destination", "none"}
    _equal([r for r in sql if r["vp_asn"] in asns], ref)



def _advise_as_the_reference(cfg, month: str, questions: list[tuple[int, int, int]]) -> collections.Counter:
    """Each question (source, IPv4 destination, IPv6 destination) answered through the engine
    as advise asks it (proxies.sources_answers: hint, rule, notes) equals the reference's
    answer field for field, reason and notes included; returns how many answers each rule gave."""
    con = duck.connect(cfg)
    try:
        got = P.sources_answers(con, cfg, month, questions)
        for s in list(dict.fromkeys(q[0] for q in questions))[:P.FEW_SOURCES]:  # a source asked alone: its own scan
            mine = [i for i, q in enumerate(questions) if q[0] == s]
            assert P.sources_answers(con, cfg, month, [questions[i] for i in mine]) == [got[i] for i in mine], s
        m = Month(con, cfg, month)
        rules = collections.Counter()
        for (s, d4, d6), (hint, rule, notes) in zip(questions, got):
            ref_notes: list[str] = []
            ref, ref_rule = selector_reference.proxy_answer(m, s, d4, d6, ref_notes)
            assert (rule, hint, notes) == (ref_rule, ref, ref_notes), (s, d4, d6)
            rules[rule] += 1
        return rules
    finally:
        con.close()


@pytest.mark.slow
def test_advise_answers_a_source_that_is_no_vp_as_the_reference_on_the_hand_made_month(month):
    """Every AS of the hand-made month that is no VP, to every destination, to every two
    destinations as a host whose IPv4 and IPv6 addresses have different origins, and to each
    destination in one family only (the other's address covered by no prefix)."""
    vps = {vp for vp, _d in PATHS}
    ases = sorted({a for p4, p6 in PATHS.values() for p in (p4, p6 or []) for a in p} - vps)
    dests = sorted({d for _vp, d in PATHS})
    qs = [(s, d4, d6) for s in ases for d4 in (*dests, None) for d6 in (*dests, None)
          if s not in (d4, d6) and (d4, d6) != (None, None)]
    rules = _advise_as_the_reference(month, MONTH, qs)
    assert set(rules) == {"through", "provider", "one-neighbour", "destination", "upstream", None}, rules


@pytest.mark.slow
@needs_data
def test_advise_answers_a_source_that_is_no_vp_as_the_reference_on_the_real_sample(sample):
    """50 ASes of the real sample that are no VP (every 40th AS of its paths, and 10 that hand
    traffic to a VP), each to 3
    destinations its paths cross it toward, 3 others, and 2 pairs of these as hosts whose
    families' origins differ."""
    con = duck.connect(sample.cfg)
    try:
        m = Month(con, sample.cfg, "2026-07")
        vps = {a for _g, a in m.vps}
        on = [int(a) for (a,) in con.execute(f"SELECT DISTINCT unnest(path) AS a FROM {m.paths} ORDER BY a").fetchall()]
        srcs = [a for a in on if a not in vps][::40][:40]
        # and 10 that hand traffic to a VP (rule 4's upstream proxies)
        srcs += [int(a) for (a,) in con.execute(f"""
            SELECT DISTINCT path[i] AS a FROM (SELECT path, unnest(range(1, len(path))) AS i FROM {m.paths})
            WHERE list_contains($vps::BIGINT[], path[i + 1]) AND NOT list_contains($vps::BIGINT[], path[i])
            ORDER BY a LIMIT 10""", {"vps": sorted(vps)}).fetchall()]
        crossed = {int(s): [int(d) for d in ds] for s, ds in con.execute(f"""
            SELECT s, list(DISTINCT dest_asn ORDER BY dest_asn)[:3] FROM {m.paths}, unnest($s::BIGINT[]) t(s)
            WHERE list_position(path, s) > 1 GROUP BY s""", {"s": srcs}).fetchall()}
        dests = [int(d) for (d,) in con.execute(f"SELECT DISTINCT dest_asn FROM {m.pairs} ORDER BY 1").fetchall()]
    finally:
        con.close()
    qs = []
    for i, s in enumerate(srcs):
        ds = [d for d in crossed.get(s, []) + dests[i::len(dests) // 3][:3] if d != s]
        qs += [(s, d, d) for d in ds] + [(s, ds[0], ds[-1]), (s, ds[-1], ds[1])]
    rules = _advise_as_the_reference(sample.cfg, "2026-07", qs)
    assert {"through", "destination", "upstream", None} <= set(rules), rules
