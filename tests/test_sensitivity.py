"""The sensitivity table: a hand-made month whose every variant is worked out by hand here,
the real sample against the pure-Python reference, the default variant against the
published month, both engines, and the page in headless Chromium."""
from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from bgp_congruency.cli.main import main as cli
from bgp_congruency.common.params import MethodParams, load_groups
from bgp_congruency.congruency import reference
from tests.support.cases import R
from tests.support.cli import congruency
from tests.support.computed import writable
from tests.support.data import needs_data
from tests.support.month import read_published, write_entries

M = "2024-09"


def hand_rows() -> list[dict]:
    """VP 10 and VP 11 on route-views2 (IPv4) + route-views6 (IPv6), one group; a route
    server session (peer 50 announcing its client's path [60, 30]) on rrc00.
    - VP 10: 30 non-congruent ([10,20,30] / [10,21,30]), 40 congruent, 70 only over a
      reserved ASN on IPv4 ([10,64512,70]) and directly on IPv6.
    - VP 11: IPv4 only to 30 (coverage 1 of 2 origins: 0.5), IPv6 to 30, 40, 70; its pair
      30 is non-congruent ([11,30] / [11,21,30])."""
    return [
        R("route-views2", 10, 4, [10, 20, 30]), R("route-views6", 10, 6, [10, 21, 30]),
        R("route-views2", 10, 4, [10, 40]), R("route-views6", 10, 6, [10, 40]),
        R("route-views2", 10, 4, [10, 64512, 70]), R("route-views6", 10, 6, [10, 70]),
        R("route-views2", 11, 4, [11, 30]), R("route-views6", 11, 6, [11, 21, 30]),
        R("route-views6", 11, 6, [11, 40]), R("route-views6", 11, 6, [11, 70]),
        R("rrc00", 50, 4, [60, 30]), R("rrc00", 50, 6, [60, 30]),
        # VP 10 to 80, IPv4 (snapshots t=0..2; a second session .110):
        #   [10,25,80] 3 observations, 1 prefix, 2 snapshots: the most observed (tie with
        #     [10,26,80] on 3, which loses on the ASN sequence);
        #   [10,22,80] 2 observations, 2 prefixes: the most prefixes;
        #   [10,26,80] 3 observations, 3 snapshots: the most snapshots;
        #   [10,21,80] once: the smallest ASN sequence.
        R("route-views2", 10, 4, [10, 25, 80]), R("route-views2", 10, 4, [10, 25, 80], ip="192.0.2.110"),
        R("route-views2", 10, 4, [10, 25, 80], t=1),
        R("route-views2", 10, 4, [10, 22, 80], prefix="10.1.80.0/24"),
        R("route-views2", 10, 4, [10, 22, 80], prefix="10.2.80.0/24"),
        *(R("route-views2", 10, 4, [10, 26, 80], prefix="10.3.80.0/24", t=t) for t in (0, 1, 2)),
        R("route-views2", 10, 4, [10, 21, 80], prefix="10.4.80.0/24"),
        # ...and IPv6 [10,26,80], only in route-views6's second snapshot (t=1).
        R("route-views6", 10, 6, [10, 26, 80], t=1),
        # VP 10 to 90: IPv4 [10,27,90] twice (t=0, 1) and [10,28,90] once; IPv6 [10,28,90]:
        # representatives differ, but one of the 2 x 1 combinations is equal (share 0.5).
        R("route-views2", 10, 4, [10, 27, 90]), R("route-views2", 10, 4, [10, 27, 90], t=1),
        R("route-views2", 10, 4, [10, 28, 90]), R("route-views6", 10, 6, [10, 28, 90]),
        # 100: VP 11's IPv4 path has an AS_SET (kept as one hop under as_set=hop, its prepending
        # collapsed: the path read from the text is not the one as_path_repeats describes), VP
        # 10's a confederation segment (dropped either way); both reach it over IPv6 via AS7.
        dict(R("route-views2", 11, 4, [11, 100]), as_path=None, has_as_set=True, as_path_raw="11 11 {6,5} 100"),
        dict(R("route-views2", 10, 4, [10, 100]), as_path=None, has_as_set=True,
             as_path_raw="10 (65001 65002) 100"),
        R("route-views6", 11, 6, [11, 7, 100]), R("route-views6", 10, 6, [10, 7, 100]),
    ]


#: (pairs, non-congruent) per variant, by hand from hand_rows' comments, at the month's own
#: parameters min_coverage 0, first-AS rule on, reserved ASNs dropped, RV2+RV6 grouped:
#: default: VP 10 (30 nc, 40 c, 80 nc: [10,25,80] / [10,26,80], 90 nc) + VP 11 (30 nc) = 5
#: pairs, 4 non-congruent. Origins: IPv4 30, 40, 80, 90; IPv6 30, 40, 70, 80, 90, 100. VP 10 covers
#: all of them (and IPv6 100), VP 11 IPv4 1 of 4 (0.25) and IPv6 4 of 6.
BY_HAND = {
    ("min_coverage", "0.5"): (4, 3),  # VP 11 out (0.25 < 0.5)
    ("min_coverage", "0.8"): (4, 3),
    ("min_coverage", "0.9"): (4, 3),
    ("min_coverage", "0.95"): (4, 3),
    ("first_as_rule", "default"): (5, 4),
    ("first_as_rule", "off"): (6, 4),  # the route server's [60, 30] kept on both: a congruent pair
    ("reserved_asns", "default"): (5, 4),
    ("reserved_asns", "kept"): (6, 5),  # 70 becomes dual-stacked: VP 10's [10,64512,70] / [10,70]
    ("grouping", "default"): (5, 4),
    ("grouping", "per_collector"): (0, 0),  # route-views2 and route-views6 alone: no VP dual-stacked
    ("representative", "default"): (5, 4),
    ("representative", "prefixes"): (5, 4),  # 80: [10,22,80] / [10,26,80]; 90: one prefix each, as default
    ("representative", "snapshots"): (5, 3),  # 80: [10,26,80] on both: congruent
    ("representative", "lowest"): (5, 4),  # 80: [10,21,80] / [10,26,80]; 90: [10,27,90] / [10,28,90]
    ("comparison", "default"): (5, 4),
    ("comparison", "any"): (5, 2),  # 80 and 90 each have a path in both families
    ("comparison", "share"): (5, 3),  # 90: 1 of 2 combinations equal (0.5); 80: 1 of 4 (0.25)
    ("snapshots", "default"): (5, 4),
    ("snapshots", "first"): (4, 3),  # route-views6's first snapshot has no path to 80
    ("as_set", "default"): (5, 4),
    ("as_set", "hop"): (6, 5),  # 100 gets VP 11's IPv4 [11, {5,6}, 100]: non-congruent with [11, 7, 100]
    ("destination", "default"): (5, 4),
    # a pair per prefix: VP 10 to 80 has 5 IPv4 prefixes x 1 IPv6 one, only 10.3.80.0/24's
    # [10,26,80] congruent; every other destination has one prefix per family
    ("destination", "prefix"): (9, 7),
}


def _published(tmp_path, engine: str):
    write_entries(tmp_path, M, hand_rows())
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f'engine = "{engine}"\n')
    assert cli(["compare", "--month", M, "--data-dir", str(tmp_path), "--min-coverage", "0", "--config", str(cfg)]) == 0
    return cfg


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
@pytest.mark.slow
def test_every_variant_as_worked_out_by_hand(engine, tmp_path, capsys, request):
    """Each variant's figures as worked out by hand and as the reference gives them, each
    cleaning computed once. Over 60 s on Spark: 13 variant computations, 10 of them cleaning."""
    if engine == "spark":  # on the suite's session (a command of its own would stop it when done)
        from bgp_congruency.common.config import load
        from bgp_congruency.pipeline import job, sensitivity

        spark = request.getfixturevalue("spark")
        write_entries(tmp_path, M, hand_rows())
        cfg = load().with_overrides(data_dir=tmp_path, engine="spark")
        cfg = replace(cfg, method=replace(cfg.method, min_coverage=0.0))
        assert job.compare_month(cfg, M, spark=spark).error is None
        # every SQL branch of the variants; of min_coverage's four thresholds (one parameter of
        # the same SQL) one: each variant costs Spark ~8 s on this tiny month
        wanted = [n for n in sensitivity.names() if not n.startswith("min_coverage=") or n == "min_coverage=0.5"]
        out = sensitivity.run(cfg, M, wanted, spark=spark)
    else:
        cfg = _published(tmp_path, engine)
        capsys.readouterr()
        assert cli(["sensitivity", "--month", M, "--data-dir", str(tmp_path), "--config", str(cfg), "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
    rows = read_published(tmp_path, "sensitivity", M).to_pylist()
    got = {(r["choice"], r["variant"]): (r["pairs"], r["noncongruent_pairs"]) for r in rows}
    want = BY_HAND if engine == "duckdb" else {k: v for k, v in BY_HAND.items()
                                              if k[0] != "min_coverage" or k[1] in ("0.5", "default")}
    assert got == want
    # every variant's figures are the pure-Python reference's under the same parameters
    from bgp_congruency.pipeline.sensitivity import variants

    base = MethodParams(min_coverage=0.0, groups=load_groups())
    hand = [dict(r, snapshot_time=datetime.fromtimestamp(1_700_000_000 + r["snapshot_time"] * 3600, timezone.utc))
            for r in hand_rows()]
    by = {(r["choice"], r["variant"]): r for r in rows}
    for choice, variant, params in [v for v in variants(base) if v[:2] in got]:
        [ref] = reference.compute_month(hand, M, params)["month_summary"]
        got = by[(choice, variant)]
        for k, v in ref.items():  # quartiles interpolate: equal up to the last bit
            if k != "month":
                assert got[k] == (pytest.approx(v, rel=1e-12) if isinstance(v, float) else v), (choice, variant, k)
    if engine == "duckdb":
        assert out["variants"] == 23 and out["computed"] == 16  # the 'default' rows are one computation
    # Each cleaning computed once: the base's, and one per choice whose non-default variant
    # changes the partition steps (first_as_rule, reserved_asns, grouping, snapshots, as_set,
    # destination); min_coverage and comparison reuse the base's, and on DuckDB the
    # representative too. Spark ranks the paths in per_path (steps.py), so each of the 3
    # other representatives cleans again: 10.
    assert out["cleanings"] == (10 if engine == "spark" else 7), out["cleanings"]
    # Spark chooses each month's representative paths once per cleaning and representative:
    # the coverage and comparison variants read the base's `paths` (steps.kept_steps), 10
    # times; DuckDB, whose per-VP steps run a partition at a time, chooses them for each of
    # its 16 parameter sets.
    assert out["steps"]["paths"] == (10 if engine == "spark" else 16), out["steps"]
    # The default variant is the published month, every figure of it.
    [ms] = read_published(tmp_path, "month_summary", M).to_pylist()
    for r in rows:
        if r["variant"] == "default":
            assert {k: r[k] for k in ms if k != "month"} == {k: v for k, v in ms.items() if k != "month"}


def test_a_kept_run_s_steps_are_those_rendered_the_same_whose_inputs_were_kept():
    """steps.kept_steps by hand, on the Spark texts: after the month's own run, a variant of
    min_coverage keeps the cleaning and per-path aggregates, the facts, `paths` and what reads
    no threshold (only vp_base reads it: it and the steps after it run again); one of
    comparison (share) also keeps vp_base, its pairs differing from any_equal on; one of
    representative keeps the cleaning's per-session counts and what reads neither per_path nor
    `paths` (Spark ranks the paths in per_path); one of first_as_rule only the view of
    the entries (the cleaning reads the rule). The summary is never kept. And the
    sensitivity run's order puts the sets that keep the most side by side."""
    from types import SimpleNamespace

    from bgp_congruency.pipeline import steps as S
    from bgp_congruency.pipeline.sensitivity import _by_cleaning

    plan = S.SnapshotPlan((0,), {"route-views2": (0,)})
    base = MethodParams(min_coverage=0.0)

    def texts(p):
        return [(s, S.render(s, "spark", p, plan)) for s in S.MONTH_STEPS]

    kept = {s.name: sql for s, sql in texts(base)}
    upstream = ["observed", "rows", "by_session", "per_path", "cleaning_stats", "totals", "transit",
                "v6_asns", "destinations"]
    assert S.kept_steps(kept, texts(base)) == {s.name for s in S.MONTH_STEPS} - {"month_summary"}
    assert S.kept_steps(kept, texts(replace(base, min_coverage=0.5))) == \
        {*upstream, "paths", "sessions", "origins", "any_equal"}
    assert S.kept_steps(kept, texts(replace(base, comparison="share"))) == \
        {*upstream, "paths", "sessions", "origins", "vp_base"}
    assert S.kept_steps(kept, texts(replace(base, representative="lowest"))) == \
        {"observed", "rows", "by_session", "cleaning_stats", "sessions"}
    assert S.kept_steps(kept, texts(replace(base, first_as_rule=False))) == {"observed"}
    assert S.kept_steps(None, texts(base)) == set()
    sets = [base, replace(base, representative="lowest"), replace(base, first_as_rule=False),
            replace(base, min_coverage=0.5), replace(base, comparison="share")]
    got = _by_cleaning(sets, SimpleNamespace(name="spark", plan=plan))
    assert got == [base, sets[4], sets[3], sets[1], sets[2]]


@pytest.mark.slow
def test_variants_and_bad_names(tmp_path, capsys):
    cfg = _published(tmp_path, "duckdb")
    capsys.readouterr()
    assert cli(["sensitivity", "--month", M, "--data-dir", str(tmp_path), "--config", str(cfg),
                "--variants", "min_coverage=0.8,grouping", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["choice"], r["variant"]) for r in rows] == [("min_coverage", "0.8"), ("grouping", "default"),
                                                             ("grouping", "per_collector")]
    assert cli(["sensitivity", "--month", M, "--data-dir", str(tmp_path), "--variants", "coverage=0.7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --variants: unknown variant 'coverage=0.7'")
    assert cli(["sensitivity", "--month", "2024-10", "--data-dir", str(tmp_path)]) == 2
    assert "month 2024-10: no published results" in capsys.readouterr().err


@pytest.mark.slow
@needs_data
def test_real_sample_coverage_and_first_as_against_the_reference(ingested_2026, tmp_path, capsys, monkeypatch):
    """The real 2026-07 pair: the coverage and first-AS variants equal the pure-Python
    reference's month_summary under the same parameters. The variants run at the month's
    memory floor (46MB, one thread: test_engines), where the entries they share spill: into
    the staging folder, from the connection's first query (DuckDB cannot move its temp
    directory once it has spilled; it used to spill into the working directory's .tmp and
    then fail with "Cannot switch temporary directory"). Over 60 s: the real month's compare
    and two variants at one thread and 46MB, and the reference for each."""
    import shutil

    data = tmp_path / "data"
    for sub in ("routes", "manifest"):  # ingest's files only: others publish into the fixture
        shutil.copytree(ingested_2026 / sub, data / sub)
    assert cli(["compare", "--month", "2026-07", "--data-dir", str(data), "--min-coverage", "0"]) == 0
    capsys.readouterr()
    floor = tmp_path / "floor.toml"
    floor.write_text('duckdb_memory_limit = "46MB"\nduckdb_threads = 1\ncompare_partitions = 1\n')
    from bgp_congruency.pipeline.engines.duckdb import DuckDBEngine

    spilled, pin = [], DuckDBEngine.pin

    def pin_and_look(self):
        pin(self)
        spilled.extend(p for p, in self.con.execute("SELECT path FROM duckdb_temporary_files()").fetchall())

    monkeypatch.setattr(DuckDBEngine, "pin", pin_and_look)
    assert cli(["sensitivity", "--month", "2026-07", "--data-dir", str(data), "--json", "--config", str(floor),
                "--variants", "min_coverage=0.95,first_as_rule=off"]) == 0
    assert spilled and all(p.startswith(str(data / "_staging")) and "/_spill/" in p for p in spilled), spilled
    rows = {(r["choice"], r["variant"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
    from tests.support.month import compute_reference

    base = MethodParams(min_coverage=0.0, groups=load_groups())
    for key, params in ((("min_coverage", "0.95"), replace(base, min_coverage=0.95)),
                        (("first_as_rule", "off"), replace(base, first_as_rule=False))):
        [ref] = compute_reference(data, "2026-07", params)["month_summary"]
        got = rows[key]
        assert {k: got[k] for k in ref if k != "month"} == {k: v for k, v in ref.items() if k != "month"}, key
    assert rows[("min_coverage", "0.95")]["pairs"] < 2167


@pytest.mark.browser
def test_the_page_in_chromium(tmp_path, capsys):
    """The tornado charts and the table render offline (the report tests' checks: no request,
    no error, every trace drawn, titles and hover); the biggest choice is named."""
    from tests.support.chromium import Chromium, check_page, shot_dir

    cfg = _published(tmp_path, "duckdb")
    assert cli(["sensitivity", "--month", M, "--data-dir", str(tmp_path), "--config", str(cfg)]) == 0
    page = tmp_path / "reports" / f"month={M}" / "sensitivity.html"
    # comparison=any moves it 40 points down (80% -> 40%)
    assert "The choice that moves it most is <b>comparison</b>: -40.0 to +0.0 points" in page.read_text()
    (tmp_path / "chromium-home").mkdir()
    b = Chromium(tmp_path / "chromium-home")
    try:
        figs = check_page(b, page, shot_dir(tmp_path), "sensitivity")
    finally:
        b.close()
    assert len(figs) == 3  # no non-congruent pair here shares an AS: no adjacency figure


@pytest.mark.slow
def test_sensitivity_summary_says_undefined_as_the_page_does(sample, tmp_path):
    """grouping=per_collector on route-views2 + route-views6 leaves no VP dual-stacked: no
    pairs, so the figure is undefined (before issue 30 the summary said +0.0 .. +0.0)."""
    data = writable(sample.data, tmp_path / "data")
    r = congruency("sensitivity", "--month", "2026-07", "--variants", "grouping,min_coverage=0.5",
                   "--data-dir", str(data))
    assert r.returncode == 0, r.stderr
    [line] = [x for x in r.stderr.splitlines() if x.split()[:1] == ["grouping"]]
    assert line.split() == ["grouping", "undefined", "(undefined:", "per_collector:", "no", "pairs)"], line
    [line] = [x for x in r.stderr.splitlines() if x.split()[:1] == ["min_coverage"]]
    assert " .. " in line and "undefined" not in line
