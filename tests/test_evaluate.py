"""The selector's held-out evaluation (`congruency evaluate`, selector/evaluate.py): a hand-made
month whose every held-out answer is worked out below, and the real 2026-07 sample, where the
through-proxy rule's answers are recomputed from the pairs and paths tables alone."""
from __future__ import annotations

import json
from collections import defaultdict

import pytest

from bgp_congruency.cli.main import main as cli
from bgp_congruency.congruency import reference
from bgp_congruency.congruency.method import shared_adjacent, shared_asns
from bgp_congruency.selector import evaluate as E
from tests.support import hintdata
from tests.support.month import compare_real
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
# - 10 -> 600: no path to AS600 crosses AS10; VP 20 is seen right after AS10 (on VP 30's path
#   to AS500): AS10 in front of its paths, [10, 20, 5, 600] and [10, 20, 6, 600], share AS20
#   next to the source: shared-edge, where the pair ([10, 20, 5, 600], [10, 7, 600]) is
#   disjoint: wrong; IPv4 exact, IPv6 2 hops off (upstream).
# - 20 -> 600: VP 10's IPv4 path crosses AS20 ([20, 5, 600] from it on: exact), its IPv6 path
#   does not, so that proxy knows one family only (the guess is dropped): unknown (through);
#   nobody is seen right after AS20.
# - 30 -> 100 and 30 -> 400 (shared-edge: AS10 second on both paths): no path crosses AS30 and
#   the only AS after it is AS10 on its own paths: unknown (none).
WANT = {
    (10, 100): ("through", "disjoint", "disjoint", True, True, 0, 0),
    (10, 400): ("through", "congruent", "disjoint", False, True, 1, 0),
    (10, 600): ("upstream", "disjoint", "shared-edge", True, False, 0, 2),
    (20, 600): ("through", "disjoint", "unknown", True, None, 0, None),
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


def test_every_held_out_answer_as_worked_by_hand(month, capsys):
    rc = cli(["evaluate", "--data-dir", str(month), "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    s = json.loads(out)
    got = {(r["vp_asn"], r["dest_asn"]): (r["rule"], r["observed_class"], r["predicted_class"], r["v4_exact"],
                                          r["v6_exact"], r["v4_hop_distance"], r["v6_hop_distance"])
           for r in read_published(month, "selector_eval", MONTH).to_pylist()}
    assert got == WANT
    assert (s["pairs"], s["answered"], s["correct"]) == (6, 3, 1)
    assert s["coverage"] == 0.5 and s["accuracy"] == pytest.approx(1 / 3)
    assert {k: (r["pairs"], r["answered"], r["correct"]) for k, r in s["rules"].items()} == \
        {"through": (3, 2, 1), "upstream": (1, 1, 0), "none": (2, 0, 0)}
    assert s["confusion"] == {"congruent": {"disjoint": 1}, "disjoint": {"disjoint": 1, "shared-edge": 1, "unknown": 1},
                              "shared-edge": {"unknown": 2}}
    assert s["mode_accuracy"] == pytest.approx(2 / 3)  # shared-edge and disjoint both aggregate; congruent missed
    assert sum(b["answers"] for b in s["bins"]) == 3
    rc = cli(["evaluate", "--data-dir", str(month)])
    out = capsys.readouterr().out
    assert rc == 0 and "answered 3 (coverage 50.0%), class right 1 (accuracy 33.3%)" in out


def _through_recomputed(pairs: list[dict], paths: list[dict]) -> tuple[int, int]:
    """(answered, right) of the through-proxy rule, from the tables alone: for a pair of VP AS X,
    the other VPs whose paths to the destination cross X in both families stand in, each with
    its paths from X on; the class is the most cautious of theirs."""
    by = defaultdict(dict)
    for p in paths:
        by[(p["vp_group"], p["vp_asn"], p["dest_asn"])][p["afi"]] = p["path"]
    caution = ("disjoint", "shared-edge", "shared-core", "congruent")
    answered = right = 0
    for pr in pairs:
        x, d = pr["vp_asn"], pr["dest_asn"]
        classes = []
        for (g, vp, dest), fam in by.items():
            if dest != d or vp == x or 4 not in fam or 6 not in fam:
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
        observed = ("congruent" if pr["congruent"] else "disjoint" if not pr["shared_asns"] else
                    "shared-edge" if pr["shared_adjacent"] else "shared-core")
        answered += 1
        right += predicted == observed
    return answered, right


@pytest.fixture(scope="module")
def real_eval(ingested_2026, config, tmp_path_factory):
    """The real 2026-07 sample compared, then evaluated (rows published as selector_eval)."""
    data = tmp_path_factory.mktemp("eval-real")
    cfg = compare_real(data, ingested_2026, config, copy=True)
    month, rows = E.held_out(cfg)
    E.publish(cfg, month, rows)
    return cfg, month, rows


@pytest.mark.slow
def test_real_sample_through_rule_recomputed_from_the_tables(real_eval):
    cfg, month, rows = real_eval
    data = cfg.data_dir
    s = E.summary(rows)
    pairs = read_published(data, "pairs", "2026-07").to_pylist()
    paths = read_published(data, "paths", "2026-07").to_pylist()
    assert s["pairs"] == len(pairs) == 2167
    through = [r for r in rows if r["rule"] == "through" and r["correct"] is not None]
    assert (len(through), sum(r["correct"] for r in through)) == _through_recomputed(pairs, paths)
    assert s["rules"]["through"]["accuracy"] > 0.95  # the crossing suffix is the VP's own path (issue 31)


@pytest.mark.slow
def test_the_month_report_shows_the_evaluation(real_eval, tmp_path):
    """The section in headless Chromium: the rules table says the summary's numbers and the
    reliability diagram draws one point per confidence bin with answers."""
    from tests.support.chromium import Chromium, shot_dir

    cfg, month, rows = real_eval
    s = E.summary(rows)
    assert cli(["report", "--month", month, "--data-dir", str(cfg.data_dir)]) == 0
    page = cfg.data_dir / "reports" / f"month={month}" / "report.html"
    b = Chromium(tmp_path)
    try:
        b.open(page)
        got = b.eval("""new Promise(function (ok) { setTimeout(function () {
            var d = document.getElementById('fig-reliability');
            ok({rows: Array.prototype.map.call(document.querySelectorAll('#selector-rules tbody tr'),
                     function (r) { return Array.prototype.map.call(r.cells, function (c) { return c.textContent; }); }),
                points: d.data[1].x.length, drawn: d.querySelectorAll('g.trace').length,
                title: (d.querySelector('.gtitle') || {}).textContent}); }, 300); })""")
        assert b.problems(page) == {"errors": [], "requests": []}
        b.eval("document.getElementById('selector').scrollIntoView()")
        b.screenshot(shot_dir(tmp_path) / "month-2026-07-selector.png")
    finally:
        b.close()
    by_rule = {r[0]: r for r in got["rows"]}
    assert set(by_rule) == {"through", "upstream", "none", "all"}
    for rule, r in s["rules"].items():
        assert by_rule[rule][1:3] == [f"{r['pairs']:,}", f"{r['answered']:,}"] and by_rule[rule][4] == f"{r['correct']:,}"
    assert by_rule["all"][2] == f"{s['answered']:,}"
    assert got["points"] == sum(1 for x in s["bins"] if x["answers"]) and got["drawn"] == 2
    assert got["title"].startswith("Reliability of the selector's confidence, 2026-07")


def test_advise_names_its_rule_and_that_rule_s_held_out_accuracy(month, capsys):
    from bgp_congruency.common.config import load
    from bgp_congruency.selector.advice import advise

    cfg = load().with_overrides(data_dir=month)
    publish_rows(month, MONTH, {"selector_eval": []})  # as before the month's evaluation: no answers
    before = advise(cfg, "1", "100")["hints"][0]  # AS1 is no VP: VP 30's and 10's paths cross it
    assert (before["rule"], before["rule_accuracy"]) == ("through", None)
    assert cli(["evaluate", "--data-dir", str(month)]) == 0
    capsys.readouterr()
    after = advise(cfg, "1", "100")["hints"][0]
    assert (after["rule"], after["rule_accuracy"]) == ("through", 0.5)  # 1 of the 2 through answers right
    vp = advise(cfg, "10", "100")["hints"][0]
    assert (vp["rule"], vp["rule_accuracy"]) == ("vp", None)
