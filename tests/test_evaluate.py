"""The selector's held-out evaluation (`congruency evaluate`, selector/evaluate.py): a hand-made
month whose every held-out answer is worked out below, and the real 2026-07 sample, where the
through-proxy rule's answers are recomputed from the pairs and paths tables alone."""
from __future__ import annotations

import json
from collections import defaultdict

import duckdb
import pyarrow as pa
import pytest

from bgp_congruency.cli.main import main as cli
from bgp_congruency.congruency import reference
from bgp_congruency.congruency.method import shared_adjacent, shared_asns
from bgp_congruency.selector import calibration
from bgp_congruency.selector import evaluate as E
from tests.support import hintdata
from tests.support.computed import GEN_MONTH, writable
from tests.support.month import publish_rows, read_published

MONTH = hintdata.MONTH
# (vp, destination) -> (IPv4 path, IPv6 path or None). VP 30 reaches AS100 and AS400 through
# AS10 and AS500 through AS10 then VP 20; VP 20 reaches AS600.
PATHS = {
    (10, 100): ([10, 1, 100], [10, 2, 100]),         # disjoint
    (10, 400): ([10, 1, 400], [10, 1, 400]),         # congruent
    (10, 600): ([10, 20, 5, 600], [10, 7, 600]),     # disjoint
    (30, 100): ([30, 10, 1, 100], [30, 10, 2, 100]),
    (30, 400): ([30, 10, 3, 400], [30, 10, 1, 400]),
    (30, 500): ([30, 10, 20, 500], None),
    (20, 600): ([20, 5, 600], [20, 6, 600]),         # disjoint
}
# Worked by hand, each VP AS held out in turn (classes as METHOD.md step 7 and selector/rules.py):
# - 10 -> 100: VP 30's paths cross AS10 in both families: from AS10 on, [10, 1, 100] and
#   [10, 2, 100], disjoint: right, both paths exact (rule through).
# - 10 -> 400: VP 30 from AS10 on: [10, 3, 400] and [10, 1, 400]: disjoint, but the pair is
#   congruent: wrong; IPv4 one AS off (edit distance 1), IPv6 exact (through).
# - 10 -> 600: no path to AS600 crosses AS10; AS10 is no stub (AS1, AS2, AS3 and AS20 are seen
#   after it on VP 30's paths), so the destination rule: the one other pair to AS600, VP 20's,
#   is disjoint (1 of 1): disjoint, right; no path is given (destination). (The upstream rule,
#   tried after it, would have put AS10 in front of VP 20's paths: shared-edge, wrong.)
# - 20 -> 600: VP 10's IPv4 path crosses AS20, its IPv6 path does not, so that proxy knows one
#   family only (the guess is dropped): no class from the through rule; AS20 is no stub (AS5
#   after it), and the one other pair to AS600, VP 10's, is disjoint: right (destination).
# - 30 -> 100 and 30 -> 400 (shared-edge: AS10 second on both paths): no path crosses AS30,
#   which is seen on no other path (a stub without neighbours: no provider answer) and the
#   only AS after it is AS10 on its own paths: unknown (none).
WANT = {
    (10, 100): ("through", "disjoint", "disjoint", True, True, 0, 0),
    (10, 400): ("through", "congruent", "disjoint", False, True, 1, 0),
    (10, 600): ("destination", "disjoint", "disjoint", None, None, None, None),
    (20, 600): ("destination", "disjoint", "disjoint", None, None, None, None),
    (30, 100): ("none", "shared-edge", "unknown", None, None, None, None),
    (30, 400): ("none", "shared-edge", "unknown", None, None, None, None),
}


def _rows() -> list[dict]:
    out = []
    for (vp, dest), (p4, p6) in PATHS.items():
        pre4, pre6 = hintdata.v4(dest), hintdata.v6(dest)
        for t in (hintdata.T0, hintdata.T1):
            out.append(hintdata.row(vp, 4, p4, pre4, t))
            if p6:
                out.append(hintdata.row(vp, 6, p6, pre6, t))
    return out


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    data = tmp_path_factory.mktemp("eval-month")
    rows = _rows()
    hintdata.write_entries(data, MONTH, rows)
    hintdata.write_tables(data, MONTH, reference.compute_month(rows, MONTH, hintdata.P0))
    return data


@pytest.mark.slow
def test_every_held_out_answer_as_worked_by_hand(month, capsys):
    rc = cli(["evaluate", "--data-dir", str(month), "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    s = json.loads(out)
    got = {(r["vp_asn"], r["dest_asn"]): (r["rule"], r["observed_class"], r["predicted_class"], r["v4_exact"],
                                          r["v6_exact"], r["v4_hop_distance"], r["v6_hop_distance"])
           for r in read_published(month, "selector_eval", MONTH).to_pylist()}
    assert got == WANT
    assert (s["pairs"], s["answered"], s["correct"]) == (6, 4, 3)
    assert s["coverage"] == pytest.approx(4 / 6) and s["accuracy"] == pytest.approx(3 / 4)
    assert {k: (r["pairs"], r["answered"], r["correct"]) for k, r in s["rules"].items()} == \
        {"through": (2, 2, 1), "provider": (0, 0, 0), "one-neighbour": (0, 0, 0), "destination": (2, 2, 2),
         "upstream": (0, 0, 0), "none": (2, 0, 0)}
    assert s["confusion"] == {"congruent": {"disjoint": 1}, "disjoint": {"disjoint": 3},
                              "shared-edge": {"unknown": 2}}
    assert s["mode_accuracy"] == pytest.approx(3 / 4)  # disjoint is aggregate; the congruent pair missed
    # each destination's most common class: 100 disjoint | shared-edge, 400 congruent |
    # shared-edge (one of two right at best), 600 disjoint twice
    assert s["destination_ceiling"] == pytest.approx(4 / 6)
    assert sum(b["answers"] for b in s["bins"]) == 4
    # the destination answers state the share of pairs that agree: 1 of 1, the held-out VP's
    # own pair not among them (its hidden rows would make it 2 of 2)
    assert [(r["confidence"], r["proxies"]) for r in read_published(month, "selector_eval", MONTH).to_pylist()
            if r["rule"] == "destination"] == [(1.0, 1), (1.0, 1)]
    # 4 answers: too few to calibrate any rule (calibration.MIN_ANSWERS), so none is
    assert {r["kind"] for r in read_published(month, "selector_eval", MONTH).to_pylist()} == {"vp"}
    assert all(r["calibrated_confidence"] is None for r in read_published(month, "selector_eval", MONTH).to_pylist())
    rc = cli(["evaluate", "--data-dir", str(month)])
    out = capsys.readouterr().out
    assert rc == 0 and "answered 4 (coverage 66.7%), class right 3 (accuracy 75.0%)" in out


def _through_recomputed(pairs: list[dict], paths: list[dict]) -> tuple[int, int, set]:
    """(answered, right, the (X, destination) answered) of the through-proxy rule, from the
    tables alone: for a pair of VP AS X,
    the other VPs whose paths to the destination cross X in both families stand in, each with
    its paths from X on; the class is the most cautious of theirs."""
    by = defaultdict(lambda: defaultdict(dict))  # destination -> (group, VP) -> afi -> path
    for p in paths:
        by[p["dest_asn"]][(p["vp_group"], p["vp_asn"])][p["afi"]] = p["path"]
    caution = ("disjoint", "shared-edge", "shared-core", "congruent")
    answered = right = 0
    keys = set()
    for pr in pairs:
        x, d = pr["vp_asn"], pr["dest_asn"]
        classes = []
        for (g, vp), fam in by[d].items():
            if vp == x or 4 not in fam or 6 not in fam:
                continue
            p4, p6 = fam[4], fam[6]
            if x in p4[1:] and x in p6[1:]:
                q4, q6 = p4[p4.index(x):], p6[p6.index(x):]
                if q4 == q6:
                    classes.append("congruent")
                else:
                    sh = shared_asns(q4, q6, x, d)
                    classes.append("disjoint" if not sh else "shared-edge" if shared_adjacent(q4, q6, sh)
                                   else "shared-core")
        if not classes:
            continue
        predicted = max(classes, key=caution.index)
        answered += 1
        right += predicted == _observed(pr)
        keys.add((x, d))
    return answered, right, keys


def _observed(pr: dict) -> str:
    return ("congruent" if pr["congruent"] else "disjoint" if not pr["shared_asns"] else
            "shared-edge" if pr["shared_adjacent"] else "shared-core")


def _destination_recomputed(pairs: list[dict], paths: list[dict], through: set) -> tuple[int, int]:
    """(answered, right) of the destination rule, from the tables alone: for a pair of VP AS X
    that the through rule leaves without a class (`through`: the (X, destination) it answers)
    and an X that some other VP's path shows handing traffic on (no stub), the class most
    other VPs' pairs to the destination show, ties to the more cautious."""
    caution = ("disjoint", "shared-edge", "shared-core", "congruent")
    hands_on = {a: any(a in p["path"][:-1] for p in paths if p["vp_asn"] != a) for a in {p["vp_asn"] for p in pairs}}
    to = defaultdict(list)  # destination -> its pairs
    for o in pairs:
        to[o["dest_asn"]].append(o)
    answered = right = 0
    for pr in pairs:
        x, d = pr["vp_asn"], pr["dest_asn"]
        if (x, d) in through or not hands_on[x]:
            continue
        votes = defaultdict(int)
        for o in to[d]:
            if o["vp_asn"] != x:
                votes[_observed(o)] += 1
        if votes:
            answered += 1
            right += max(votes, key=lambda c: (votes[c], caution.index(c))) == _observed(pr)
    return answered, right


@pytest.fixture(scope="module")
def real_eval(sample_evaluated):
    """The real 2026-07 sample, evaluated (the session's): its config, month, and the rows
    published as selector_eval."""
    rows = [{**r, "month": "2026-07"} for r in read_published(sample_evaluated.data, "selector_eval", "2026-07").to_pylist()]
    return sample_evaluated.cfg, "2026-07", rows


@pytest.mark.slow
def test_real_sample_through_rule_recomputed_from_the_tables(real_eval):
    cfg, month, rows = real_eval
    data = cfg.data_dir
    s = E.summary(rows)
    pairs = read_published(data, "pairs", "2026-07").to_pylist()
    paths = read_published(data, "paths", "2026-07").to_pylist()
    assert s["pairs"] == len(pairs) == 2167
    through = [r for r in rows if r["rule"] == "through" and r["correct"] is not None]
    n, k, answered_through = _through_recomputed(pairs, paths)
    assert (len(through), sum(r["correct"] for r in through)) == (n, k)
    assert s["rules"]["through"]["accuracy"] > 0.95  # the crossing suffix is the VP's own path (issue 31)
    dest = [r for r in rows if r["rule"] == "destination"]
    assert len(dest) > 1000
    assert (len(dest), sum(r["correct"] for r in dest)) == _destination_recomputed(pairs, paths, answered_through)
    by_dest = defaultdict(lambda: defaultdict(int))
    for pr in pairs:
        by_dest[pr["dest_asn"]][_observed(pr)] += 1
    ceiling = sum(max(c.values()) for c in by_dest.values()) / len(pairs)
    assert s["destination_ceiling"] == pytest.approx(ceiling) and ceiling < 0.9  # why 90% needs the source's routes


@pytest.mark.browser
@pytest.mark.slow
def test_the_month_report_shows_the_evaluation(real_eval, tmp_path):
    """The section in headless Chromium: the rules table says the summary's numbers and the
    reliability diagram draws one point per confidence bin with answers."""
    from tests.support.chromium import FIGURES_JS, Chromium, shot_dir

    cfg, month, rows = real_eval
    s = E.summary(rows)
    page = tmp_path / "report.html"
    assert cli(["report", "--month", month, "--data-dir", str(cfg.data_dir), "--out", str(page)]) == 0
    b = Chromium(tmp_path)
    try:
        b.open(page)
        got = b.eval("""new Promise(function (ok) { setTimeout(function () {
            var d = document.getElementById('fig-reliability');
            ok({rows: Array.prototype.map.call(document.querySelectorAll('#selector-rules tbody tr'),
                     function (r) { return Array.prototype.map.call(r.cells, function (c) { return c.textContent; }); }),
                points: d.data[1].x.length, calibrated: d.data[2].x.length,
                drawn: d.querySelectorAll('g.trace').length,
                lines: document.getElementById('fig-selector-curve').data.map(function (t) {
                    return {name: t.name, x: t.x, y: t.y}; }),
                curve: Array.prototype.map.call(document.querySelectorAll('#selector-curve tbody tr'),
                     function (r) { return Array.prototype.map.call(r.cells, function (c) { return c.textContent; }); }),
                ceiling: Array.prototype.filter.call(document.querySelectorAll('p.note'),
                     function (p) { return p.textContent.indexOf('Why the accuracy') === 0; })
                     .map(function (p) { return p.textContent; }),
                title: (d.querySelector('.gtitle') || {}).textContent}); }, 300); })""")
        assert b.problems(page) == {"errors": [], "requests": []}
        # every marker drawn whole, at the size the report draws it (issue 58: a calibrated
        # marker at confidence 1.0 was cut by the plot's right edge)
        assert {f["id"]: f["cut"] for f in b.eval(FIGURES_JS)} == {f["id"]: 0 for f in b.eval(FIGURES_JS)}
        b.eval("document.getElementById('selector').scrollIntoView()")
        b.screenshot(shot_dir(tmp_path) / "month-2026-07-selector.png")
    finally:
        b.close()
    assert {(r[0], r[1]) for r in got["rows"]} == {("none (BGP only)", "VPs held out")}  # no evidence revealed
    by_rule = {r[2]: r[1:] for r in got["rows"]}
    # the real VPs seen on no other path are stubs without neighbours: no provider answer; the
    # destination rule answers every other source before the upstream rule is tried
    assert set(by_rule) == {"through", "destination", "none", "all"}
    for rule, r in s["rules"].items():
        if r["pairs"]:
            assert by_rule[rule][2:4] == [f"{r['pairs']:,}", f"{r['answered']:,}"]
            assert by_rule[rule][5] == f"{r['correct']:,}"
    assert by_rule["all"][3] == f"{s['answered']:,}"
    assert got["points"] == sum(1 for x in s["bins"] if x["answers"])
    assert got["calibrated"] == sum(1 for x in s["calibrated"]["bins"] if x["answers"]) > 1
    assert got["drawn"] == 3  # the diagonal, stated, calibrated
    assert [r[:2] for r in got["curve"]] == [["none (BGP only)", f"{t:.1f}"] for t in calibration.CURVE]
    assert [r[2] for r in got["curve"]] == [f"{c['answered']:,}" for c in s["calibrated"]["curve"]]
    # the accuracy-coverage curve: one line (the one mode evaluated), a point per threshold answered
    [line] = got["lines"]
    want = [c for c in s["calibrated"]["curve"] if c["answered"]]
    assert line["name"] == "evidence: none (BGP only)"
    assert line["x"] == pytest.approx([c["coverage"] for c in want])
    assert line["y"] == pytest.approx([c["accuracy"] for c in want])
    assert got["title"].startswith("Reliability of the selector's confidence, 2026-07")
    from bgp_congruency.reports.page import share

    right = round(s["destination_ceiling"] * s["pairs"])
    assert len(got["ceiling"]) == 1 and f"VPs held out {share(right, s['pairs'])}." in got["ceiling"][0]


@pytest.mark.slow
def test_advise_names_its_rule_and_that_rule_s_held_out_accuracy(month, capsys):
    from bgp_congruency.common.config import load
    from bgp_congruency.selector.advice import advise

    cfg = load().with_overrides(data_dir=month)
    publish_rows(month, MONTH, {"selector_eval": []})  # as before the month's evaluation: no answers
    # AS1 is no VP and no stub; VP 30's and 10's IPv4 paths cross it, their IPv6 paths do not:
    # the destination rule, the pairs to AS100 disjoint (VP 10) and shared-edge (VP 30): a tie,
    # to the more cautious class
    before = advise(cfg, "1", "100")["hints"][0]
    assert (before["rule"], before["hint_class"], before["confidence"], before["proxies"]) == \
        ("destination", "shared-edge", 0.5, [30])
    assert (before["rule_accuracy"], before["v4_path"], before["v6_path"]) == (None, None, None)
    assert cli(["evaluate", "--data-dir", str(month)]) == 0
    capsys.readouterr()
    after = advise(cfg, "1", "100")["hints"][0]
    assert (after["rule"], after["rule_accuracy"]) == ("destination", 1.0)  # both destination answers right
    vp = advise(cfg, "10", "100")["hints"][0]
    assert (vp["rule"], vp["rule_accuracy"]) == ("vp", None)


# ------------------------------------------------------------------ calibration
def _answers(src: int, rule: str, cls: str, right: int, wrong: int) -> list[dict]:
    return [{"vp_asn": src, "rule": rule, "predicted_class": cls, "correct": ok} for ok in [True] * right + [False] * wrong]


def test_the_summary_of_no_answers_and_of_null_columns():
    """summary reads whole columns; rows given as dicts whose column is all null (no answer,
    no path, an observed mode missing) count as the list-based summary counted them."""
    empty = E.summary([])
    assert (empty["pairs"], empty["answered"], empty["coverage"], empty["destination_ceiling"]) == (0, 0, None, None)
    assert empty["confusion"] == {} and all(b["answers"] == 0 for b in empty["bins"])
    base = {"vp_asn": 2, "dest_asn": 1, "rule": "destination", "kind": "vp", "observed_class": "disjoint",
            "v4_exact": None, "v6_exact": None, "v4_hop_distance": None, "v6_hop_distance": None}
    rows = [{**base, "correct": None, "predicted_class": "unknown", "observed_mode": "aggregate",
             "predicted_mode": "single-path", "confidence": 0.0, "rule": "none"}]
    s = E.summary(rows)
    assert (s["pairs"], s["answered"], s["correct"], s["accuracy"]) == (1, 0, 0, None)
    assert s["paths"]["v4"] == {"answers": 0, "exact": None, "within_one_hop": None}
    assert s["confusion"] == {"disjoint": {"unknown": 1}} and s["rules"]["none"]["pairs"] == 1
    # two answers, both right, one of them with no observed mode: one mode of two is right
    rows = [{**base, "correct": True, "predicted_class": "disjoint", "observed_mode": m, "predicted_mode": "aggregate",
             "confidence": 0.9, "dest_asn": d} for m, d in (("aggregate", 1), (None, 3))]
    s = E.summary(rows)
    assert (s["answered"], s["accuracy"], s["mode_accuracy"], s["destination_ceiling"]) == (2, 1.0, 0.5, 1.0)
    assert [(b["low"], b["answers"], b["accuracy"]) for b in s["bins"] if b["answers"]] == [(0.9, 2, 1.0)]
    # no calibrated confidence: each answer counts at 0, so only the curve's first threshold (0) keeps them
    assert [c["answered"] for c in calibration.curve(rows)] == [2, 0, 0, 0, 0, 0]


def test_calibration_worked_by_hand():
    """selector/calibration.py on 95 answers of three sources, each number worked out here.
    upstream: A 20 congruent right, 10 congruent wrong; B 20 congruent right, 10 disjoint wrong;
    C 10 congruent right, 10 congruent wrong, 10 disjoint right; through: A 5 right (too few)."""
    rows = (_answers(1, "upstream", "congruent", 20, 10) + _answers(2, "upstream", "congruent", 20, 0)
            + _answers(2, "upstream", "disjoint", 0, 10) + _answers(3, "upstream", "congruent", 10, 10)
            + _answers(3, "upstream", "disjoint", 10, 0) + _answers(1, "through", "disjoint", 5, 0)
            + [{"vp_asn": 3, "rule": "none", "predicted_class": "unknown", "correct": None}])
    f = calibration.fit(rows)
    assert f == {("upstream", True): (70, 50), ("upstream", False): (20, 10), ("through", False): (5, 5)}
    # rule share 60/90 = 2/3; congruent: (50 + 10 x 2/3) / (70 + 10); non-congruent: (10 + 10 x 2/3) / (20 + 10)
    assert calibration.confidence(f, "upstream", "congruent") == pytest.approx((50 + 20 / 3) / 80)
    assert calibration.confidence(f, "upstream", "shared-core") == pytest.approx((10 + 20 / 3) / 30)
    assert calibration.confidence(f, "through", "disjoint") is None  # 5 answers < MIN_ANSWERS
    assert calibration.confidence(f, "upstream", "unknown") is None and calibration.confidence(None, "x", "y") is None
    got = calibration.held_out(rows)
    # rows: A congruent 0-29, B congruent 30-49, B disjoint 50-59, C congruent 60-79, C disjoint 80-89
    # A's, fitted on B and C: congruent (40, 30), non (20, 10): share 40/60; (30 + 10 x 2/3) / 50
    assert got[0] == pytest.approx((30 + 20 / 3) / 50)
    # B's, fitted on A and C: congruent (50, 30), non (10, 10): share 40/60
    assert got[30] == pytest.approx((30 + 20 / 3) / 60) and got[50] == pytest.approx((10 + 20 / 3) / 20)
    # C's, fitted on A and B: congruent (50, 40), non (10, 0): share 40/60
    assert got[60] == pytest.approx((40 + 20 / 3) / 60) and got[80] == pytest.approx((0 + 20 / 3) / 20)
    assert got[-6:] == [None] * 6  # through has 5 answers in all; unknown has no confidence
    for r, c in zip(rows, got):
        r["calibrated_confidence"] = c
    # Binned by each answer's own held-out value, one cell is split by its sources' accuracy:
    # 0.333 (C disjoint, 10, all right), 0.611 (B congruent, 20, all right), 0.733 and 0.778 (A and C
    # congruent, 50, 30 right), 0.833 (B disjoint, 10, none right)
    own = calibration.reliability(rows)
    assert [(b["low"], b["answers"]) for b in own if b["answers"]] == [(0.3, 10), (0.6, 20), (0.7, 50), (0.8, 10)]
    assert (own[3]["accuracy"], own[6]["accuracy"], own[7]["accuracy"], own[8]["accuracy"]) == (1.0, 1.0, 0.6, 0.0)
    assert calibration.worst_gap(own, 10) == pytest.approx((10 + 20 / 3) / 20)  # bin 8: 0.833, none right
    # Binned by the cell's value fitted on all rows (what advise states): congruent (50 + 20/3) / 80
    # = 0.708, all 70 (50 right) in bin 7; non-congruent (10 + 20/3) / 30 = 0.556, all 20 (10
    # right) in bin 5; each bin's mean held-out confidence against its accuracy
    cells = calibration.cell_confidence(rows)
    assert cells[0] == pytest.approx((50 + 20 / 3) / 80) and cells[50] == pytest.approx((10 + 20 / 3) / 30)
    assert all(c != c for c in cells[-6:])  # NaN: through has too few answers; unknown has none
    bins = calibration.reliability(rows, by=cells)
    assert [(b["low"], b["answers"], b["accuracy"]) for b in bins if b["answers"]] == [(0.5, 20, 0.5), (0.7, 70, 50 / 70)]
    assert bins[7]["mean_confidence"] == pytest.approx((30 * got[0] + 20 * got[30] + 20 * got[60]) / 70)
    assert bins[5]["mean_confidence"] == pytest.approx((10 * got[50] + 10 * got[80]) / 20)
    assert calibration.worst_gap(bins, 10) == pytest.approx((10 + 40 / 3) / 40 - 0.5)  # bin 5: 0.583, half right
    # the same cells in SQL (the month report's reliability diagram), per reveal
    con = duckdb.connect()
    two = [{**r, "reveal": rv} for rv in ("first-hop", None) for r in rows]
    con.register("t", pa.Table.from_pylist(two))
    sql = con.execute(f"SELECT reveal, vp_asn, rule, predicted_class, correct, cell_confidence "
                      f"FROM ({calibration.cell_confidence_sql('t')})").fetchall()
    py = calibration.cell_confidence(two)
    want = sorted((r["reveal"] or "", r["vp_asn"], r["rule"], r["predicted_class"], r["correct"] is True,
                   None if c != c else round(c, 12)) for r, c in zip(two, py))
    assert sorted((rv or "", a, ru, pc, ok is True, None if c is None else round(c, 12))
                  for rv, a, ru, pc, ok, c in sql) == want
    curve = {c["threshold"]: c for c in calibration.curve(rows)}
    assert (curve[0.0]["answered"], curve[0.0]["accuracy"]) == (95, 65 / 95)
    assert (curve[0.8]["answered"], curve[0.8]["accuracy"]) == (10, 0.0)


# ------------------------------------------------------------------ a generated month: ASes that are no VP


@pytest.fixture(scope="module")
def truth_evaluated(generated, tmp_path_factory):
    """A copy of the session's generated month (its VPs held out) evaluated again against the
    generator's truth: `evaluate --truth --sources 30 --dests 20`; (data dir, its config, the
    summary printed, the VP rows before)."""
    import subprocess
    import sys

    data = writable(generated.data, tmp_path_factory.mktemp("truth") / "data")
    before = read_published(data, "selector_eval", GEN_MONTH).to_pylist()
    r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "evaluate", "--data-dir", str(data), "--config",
                        str(generated.config_file), "--truth", str(generated.archive), "--sources", "30", "--dests",
                        "20", "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return data, generated.config_file, json.loads(r.stdout), before


@pytest.mark.slow
def test_the_generator_rebuilt_from_its_archive_routes_as_its_vps_showed(generated):
    """synth/truth.py rebuilds the Internet from SYNTH.json alone: its routes for the VPs are
    the paths the compare found in the archive, but for the routes the generator makes
    unstable (a VP shows its second-best route instead: UNSTABLE, 4% of routes per family)."""
    from bgp_congruency.synth import truth as T
    from bgp_congruency.synth.generate import UNSTABLE

    t = T.load(generated.archive)
    pairs = read_published(generated.data, "pairs", GEN_MONTH).to_pylist()
    assert {p["vp_asn"] for p in pairs} <= t.vp_asns and len(pairs) > 1000
    true = t.paths(GEN_MONTH, sorted({p["vp_asn"] for p in pairs}), sorted({p["dest_asn"] for p in pairs}))
    same = [p for p in pairs if (true[(4, p["vp_asn"], p["dest_asn"])], true[(6, p["vp_asn"], p["dest_asn"])])
            == (tuple(p["v4_path"]), tuple(p["v6_path"]))]
    assert len(pairs) - len(same) <= 2 * UNSTABLE * len(pairs), (len(pairs), len(same))


def _one_neighbour_class(paths: list[dict], pairs: list[dict], src: int, dest: int) -> str | None:
    """Rule 7 from the tables alone: when the ASes right before `src` are one and the same AS
    in both families, each pair to `dest` seen behind that AS (disjoint becomes shared-edge,
    the others stay), then the class most of them show (ties to the more cautious)."""
    nbrs = {afi: {p["path"][p["path"].index(src) - 1] for p in paths if p["afi"] == afi and src in p["path"][1:]}
            for afi in (4, 6)}
    if len(nbrs[4]) != 1 or nbrs[4] != nbrs[6]:
        return None
    votes = defaultdict(int)
    for o in pairs:
        if o["dest_asn"] == dest:
            seen = _observed(o)
            votes[{"disjoint": "shared-edge"}.get(seen, seen)] += 1  # each pair seen behind that AS, then the vote
    caution = ("disjoint", "shared-edge", "shared-core", "congruent")
    return max(votes, key=lambda c: (votes[c], caution.index(c)))


def _stub_class(paths: list[dict], src: int, dest: int) -> str | None:
    """The provider rule (selector/rules.py rule 5) from the paths table alone: per family,
    the ASes right before `src`; each one's route to `dest` is the suffix from it on of the
    paths that cross it (the one most VP ASes show, then the shortest, then the lowest ASNs;
    none holding `src`); `src` in front of the shortest route, ties to the lowest ASN."""
    chosen = {}
    for afi in (4, 6):
        fam = [p["path"] for p in paths if p["afi"] == afi]
        nbrs = {p[p.index(src) - 1] for p in fam if src in p[1:]}
        routes = {}
        for n in nbrs:
            seen = defaultdict(set)  # route -> the VP ASes showing it
            for q in paths:
                p = q["path"]
                if q["afi"] == afi and q["dest_asn"] == dest and n in p and src not in p[p.index(n):]:
                    seen[tuple(p[p.index(n):])].add(q["vp_asn"])
            if seen:
                routes[n] = min(seen, key=lambda r: (-len(seen[r]), len(r), list(r)))
        if not routes:
            return None
        n = min(routes, key=lambda a: (len(routes[a]), a))
        chosen[afi] = [src, *routes[n]]
    v4, v6 = chosen[4], chosen[6]
    if v4 == v6:
        return "congruent"
    sh = shared_asns(v4, v6, src, dest)
    return "disjoint" if not sh else "shared-edge" if shared_adjacent(v4, v6, sh) else "shared-core"


@pytest.mark.slow
def test_ases_that_are_no_vp_against_the_generator_s_true_paths(generated, truth_evaluated):
    """`evaluate --truth`: stubs and transit ASes that are no VP, each answer against the
    generator's routes; every provider-rule answer recomputed from the paths table; the VPs'
    held-out rows stay beside them, and the calibration is refitted over both."""
    from bgp_congruency.synth import truth as T

    data, _cfg, s, before = truth_evaluated
    assert before and {r["kind"] for r in before} == {"vp"}
    rows = read_published(data, "selector_eval", GEN_MONTH).to_pylist()
    vp, gen = [r for r in rows if r["kind"] == "vp"], [r for r in rows if r["kind"] != "vp"]
    assert sorted(map(repr, ({k: v for k, v in r.items() if k != "calibrated_confidence"} for r in vp))) == \
        sorted(map(repr, ({k: v for k, v in r.items() if k != "calibrated_confidence"} for r in before)))
    t = T.load(generated.archive)
    srcs = {r["vp_asn"] for r in gen}
    assert len(srcs) == 30 and not srcs & t.vp_asns and {r["vp_group"] for r in gen} == {None}
    assert {r["kind"] for r in gen} == {"stub", "transit"}
    assert all(r["kind"] == t.kind(r["vp_asn"]) for r in gen)
    assert s["pairs"] == len(gen) and s["kinds"]["stub"]["pairs"] + s["kinds"]["transit"]["pairs"] == len(gen)
    # the observed class is the generator's: recomputed from its routes with the method's functions
    true = t.paths(GEN_MONTH, sorted(srcs), sorted({r["dest_asn"] for r in gen}))
    for r in gen:
        v4, v6 = list(true[(4, r["vp_asn"], r["dest_asn"])]), list(true[(6, r["vp_asn"], r["dest_asn"])])
        sh = shared_asns(v4, v6, r["vp_asn"], r["dest_asn"])
        assert r["observed_class"] == ("congruent" if v4 == v6 else "disjoint" if not sh else
                                       "shared-edge" if shared_adjacent(v4, v6, sh) else "shared-core")
    paths = read_published(data, "paths", GEN_MONTH).to_pylist()
    provider = [r for r in gen if r["rule"] == "provider"]
    assert len(provider) >= 30, s["rules"]
    for r in provider:
        assert r["predicted_class"] == _stub_class(paths, r["vp_asn"], r["dest_asn"]), r
    # stubs are answered now (the through and upstream rules alone answer none of them), by
    # the provider rule, else behind their one neighbour
    assert s["kinds"]["stub"]["answered"] > 0 and all(r["rule"] in ("provider", "one-neighbour") for r in gen
                                                      if r["kind"] == "stub" and r["correct"] is not None)
    pairs = read_published(data, "pairs", GEN_MONTH).to_pylist()
    behind = [r for r in gen if r["rule"] == "one-neighbour"]
    assert len(behind) >= 10, s["rules"]
    for r in behind:
        assert _stub_class(paths, r["vp_asn"], r["dest_asn"]) is None
        assert r["predicted_class"] == _one_neighbour_class(paths, pairs, r["vp_asn"], r["dest_asn"]), r
    # calibrated on all rows, each from the other sources' rows: recomputed from the table
    for r, c in zip(rows, calibration.held_out(rows)):
        assert r["calibrated_confidence"] == (pytest.approx(c) if c is not None else None)
    assert s["calibrated"]["bins"] == calibration.reliability(gen, by=calibration.cell_confidence(gen))


@pytest.mark.slow
def test_advise_states_the_calibrated_confidence(truth_evaluated, capsys):
    """After the month's evaluation, a stub's answer states the share of such answers that were
    right (its cell of the published selector_eval), and says so."""
    data, cfg, _s, _before = truth_evaluated
    rows = read_published(data, "selector_eval", GEN_MONTH).to_pylist()
    stub = next(r for r in rows if r["kind"] == "stub" and r["rule"] == "provider")
    rc = cli(["advise", "--data-dir", str(data), "--config", str(cfg), "--from", str(stub["vp_asn"]), "--to",
              str(stub["dest_asn"]), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    [h] = out["hints"]
    assert (h["rule"], h["hint_class"]) == ("provider", stub["predicted_class"])
    cell = [r for r in rows if r["rule"] == "provider" and r["correct"] is not None]
    mine = [r for r in cell if (r["predicted_class"] == "congruent") == (h["hint_class"] == "congruent")]
    share = sum(r["correct"] for r in cell) / len(cell)
    want = (sum(r["correct"] for r in mine) + calibration.PRIOR_ANSWERS * share) / (len(mine) + calibration.PRIOR_ANSWERS)
    assert h["confidence"] == pytest.approx(want)
    assert any(n.startswith(f"confidence {want:.2f}: {sum(r['correct'] for r in mine)} of {len(mine)} answers of "
                            "the provider rule") for n in h["notes"]), h["notes"]


@pytest.mark.slow
def test_truth_needs_a_generated_archive(month, tmp_path, capsys):
    assert cli(["evaluate", "--data-dir", str(month), "--truth", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--truth: {tmp_path}/SYNTH.json: not found" in err[0], err
    assert cli(["evaluate", "--data-dir", str(month), "--sources", "3"]) == 2
    assert "--sources: only with --truth ARCHIVE" in capsys.readouterr().err
    from bgp_congruency.synth import generate

    generate(tmp_path / "other", seed=3, ases=20, vps=2, months=(MONTH,), snapshots_per_month=1, ground_truth=False,
             workers=1)  # a generated archive, but not the one this month was ingested from
    assert cli(["evaluate", "--data-dir", str(month), "--truth", str(tmp_path / "other")]) == 2
    err = capsys.readouterr().err
    assert f"error: --truth {tmp_path / 'other'}: {MONTH} was not ingested from this archive: its VP AS10 is none" in err
    assert "selector_eval" not in {p.name for p in month.iterdir()} or \
        {r["kind"] for r in read_published(month, "selector_eval", MONTH).to_pylist()} <= {"vp"}


@pytest.mark.slow
@pytest.mark.parametrize("reveal", ["none", "first-hop", "neighbours"])
def test_the_truth_evaluation_answers_through_the_engines_as_their_reference(generated, reveal):
    """Issue 59: `evaluate --truth [--reveal]` answers each generated source's questions through
    the engines advise uses (selector/proxies.sources_answers for rules 1-7, reveal.source_hints
    for 8-11), equal question by question to the rules' Python reference
    (selector/reference.proxy_answer, evidence_answer) given the same truth."""
    from bgp_congruency.common import duck
    from bgp_congruency.selector.month import Month
    from bgp_congruency.selector.reference import evidence_answer, proxy_answer
    from bgp_congruency.synth import truth as T

    t = T.load(generated.archive)
    month, rows = E.against_truth(generated.cfg, t, GEN_MONTH, sources=8, dests=8, reveal=reveal)
    srcs = sorted({r["vp_asn"] for r in rows})
    true = t.paths(month, srcs, sorted({r["dest_asn"] for r in rows}))
    con = duck.connect(generated.cfg)
    try:
        m = Month(con, generated.cfg, month)
        for r in rows:
            s, d = r["vp_asn"], r["dest_asn"]
            h, rule = proxy_answer(m, s, d, d, []) if reveal == "none" else \
                evidence_answer(m, s, d, d, E.truth_evidence(t.net, month, reveal, s, true, d))
            assert (r["rule"], r["predicted_class"]) == (rule or "none", h["hint_class"]), (s, d)
            for afi in (4, 6):
                exact = None if h[f"v{afi}_path"] is None else h[f"v{afi}_path"] == list(true[(afi, s, d)])
                assert r[f"v{afi}_exact"] == exact, (s, d, afi)
    finally:
        con.close()
    assert len(srcs) >= 6 and len(rows) >= 40 and {r["rule"] for r in rows} - {"none"}
