"""The offline HTML reports in real headless Chromium (Debian `chromium`), driven through the
DevTools protocol: no console errors, no network requests, every figure drawn with the
number of traces and points the published Parquet implies (read back with pyarrow), the
per-VP table sorts and filters, and a screenshot that is not blank."""
from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bgp_congruency.cli.main import main as cli
from bgp_congruency.common.table_docs import DOCS
from tests.support.chromium import Chromium, check_page, shot_dir
from tests.support.cli import congruency
from tests.support.computed import writable
from tests.support.warehouse import MONTHS, published_multi_month


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Chromium(tmp_path_factory.mktemp("chromium"))
    yield b
    b.close()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return published_multi_month(tmp_path_factory)


def _read(data: Path, table: str, month: str) -> list[dict]:
    return pq.read_table(data / table / f"month={month}").to_pylist()


@pytest.mark.browser
def test_the_page_checks_catch_requests_and_errors(browser, tmp_path):
    """Negative controls: a page that fetches and throws is reported (the request is to a
    refused port on 127.0.0.1, so nothing leaves the machine); a blank page reads as blank."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><img src='http://127.0.0.1:9/x.png'>"
                    "<script>throw new Error('boom')</script></body></html>")
    browser.open(page)
    browser.eval("new Promise(function (ok) { setTimeout(ok, 300); })")
    probs = browser.problems(page)
    assert probs["requests"] == ["http://127.0.0.1:9/x.png"]
    assert any("Error: boom" in (e or "") for e in probs["errors"]), probs
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    browser.open(blank)
    stats = browser.screenshot(tmp_path / "blank.png")
    assert stats["colors"] == 1 and stats["ink"] == 0, stats  # what check_page's non-blank test rejects


@pytest.mark.slow
@pytest.mark.browser
def test_month_report_in_chromium(browser, data, tmp_path):
    assert_month_report(browser, data, "2026-03", shot_dir(tmp_path), "month-2026-03")


@pytest.mark.slow
@pytest.mark.browser
def test_real_sample_month_report(browser, sample, tmp_path):
    """The real 2026-07-30 route-views2 + route-views6 pair as `congruency run` publishes it
    (a copy: the report is written into the data dir)."""
    data = writable(sample.data, tmp_path / "data")
    assert_month_report(browser, data, "2026-07", shot_dir(tmp_path), "month-2026-07-real")


def assert_month_report(browser, data: Path, month: str, shots: Path, name: str) -> None:
    """The month report of `data` in Chromium: each figure's traces, points and values, the
    headline numbers and the per-VP table, against the Parquet read back directly."""
    assert cli(["report", "--month", month, "--data-dir", str(data)]) == 0
    page = data / "reports" / f"month={month}" / "report.html"
    text = page.read_text()
    assert "https://" not in text.split("</script>", 1)[1].split("<script>")[0]  # the page itself links nothing
    figs = {f["id"]: f for f in check_page(browser, page, shots, name)}

    # Expected shapes from the Parquet, read back directly.
    vps = [r for r in _read(data, "vps", month) if r["pairs"] > 0]
    pairs = _read(data, "pairs", month)
    summary = _read(data, "month_summary", month)[0]
    cls = Counter(r["vp_class"] for r in vps)
    rel = (data / "as_relationships" / f"month={month}").exists()
    assert list(figs) == ["fig-cdf", "fig-hops", "fig-hops-share", "fig-shared", "fig-nonadopter", "fig-divergence"] \
        + ["fig-parting"] * rel  # the relationships section: a month with its relationships inferred
    if rel:
        assert figs["fig-parting"]["points"] == [3]  # one bar per cause (reports/month_report.CAUSES)
    # the CDF leaves out VPs with fewer than MIN_PAIRS pairs and names them; hover has the counts
    from bgp_congruency.reports.month_report import MIN_PAIRS, TOP_ASES

    few = [r for r in vps if r["pairs"] < MIN_PAIRS]
    big = Counter(r["vp_class"] for r in vps if r["pairs"] >= MIN_PAIRS)
    assert figs["fig-cdf"]["points"] == [big["edge"], big["transit"], big["edge"] + big["transit"]]
    assert figs["fig-cdf"]["names"][2] == f"all VPs ({big['edge'] + big['transit']})"
    cap = figs["fig-cdf"]["caption"]
    assert (f"Left out, with fewer than {MIN_PAIRS} pairs: " in cap) == bool(few)
    assert all(f"AS{r['vp_asn']} ({r['pairs']})" in cap for r in few)
    hops = {r["hops_v4"] for r in pairs if r["congruent"]}
    assert figs["fig-hops"]["points"] == [len(hops)]
    assert figs["fig-shared"]["points"] == [3, 3, 3]
    assert figs["fig-nonadopter"]["points"] == [3, 3]

    # The values plotted equal the Parquet's.
    ys = browser.eval("""(function () { var g = function (id) { return document.getElementById(id).data; };
        return {hops: g('fig-hops')[0].y, shared: g('fig-shared').map(function (t) { return t.y; }),
                na: g('fig-nonadopter').map(function (t) { return t.y; }),
                share: [g('fig-hops-share')[0].x, g('fig-hops-share')[0].y, g('fig-hops-share')[0].text],
                cdf_pairs: g('fig-cdf')[2].customdata.map(function (c) { return c[1]; }),
                div: g('fig-divergence').map(function (t) { return [t.x, t.y]; })}; })()""")
    by_len = Counter(r["hops_v4"] for r in pairs)
    assert ys["share"][0] == sorted(by_len)
    assert ys["share"][1] == [pytest.approx(100 * by_hops_c / by_len[h]) for h, by_hops_c in
                              ((h, sum(1 for r in pairs if r["hops_v4"] == h and r["congruent"])) for h in sorted(by_len))]
    assert all(t.endswith("%") for t in ys["share"][2])
    assert sorted(ys["cdf_pairs"]) == sorted(r["pairs"] for r in vps if r["pairs"] >= MIN_PAIRS)
    # divergence: the ASes on only one family's path, recounted from the divergence table
    only = Counter()
    for r in _read(data, "divergence", month):
        only.update((a, 4) for a in r["only_v4"])
        only.update((a, 6) for a in r["only_v6"])
    total = Counter()
    for (a, _), n in only.items():
        total[a] += n
    top = sorted(total, key=lambda a: (-total[a], a))[:TOP_ASES]
    assert ys["div"][0] == [[f"AS{a}" for a in top], [only[(a, 4)] for a in top]]
    assert ys["div"][1][1] == [only[(a, 6)] for a in top]
    cells = lambda tid: browser.eval(  # noqa: E731
        f"Array.prototype.map.call(document.querySelectorAll('#{tid} tbody tr'), function (r) "
        "{ return Array.prototype.map.call(r.cells, function (c) { return c.textContent; }); })")
    assert [(r[0], r[1], r[2]) for r in cells("divergence-ases")] == \
        [(f"AS{a}", f"{only[(a, 4)]:,}", f"{only[(a, 6)]:,}") for a in top]
    shared = Counter(a for r in pairs if not r["congruent"] for a in r["shared_asns"])
    want = sorted(shared, key=lambda a: (-shared[a], a))[:TOP_ASES]
    assert [(r[0], r[1]) for r in cells("shared-ases")] == [(f"AS{a}", f"{shared[a]:,}") for a in want]
    # the cleaning table: entries each rule dropped, per family, and what is kept
    cs = _read(data, "cleaning_stats", month)
    rows = {r[0]: r for r in cells("cleaning")}
    for reason in ("default_route", "as_set", "first_as_not_peer", "reserved_asn", "loop", "kept"):
        for col, afi in ((1, 4), (3, 6)):
            assert rows[reason][col] == f"{sum(r['entries'] for r in cs if r['afi'] == afi and r['reason'] == reason):,}"
    assert rows["all entries"][1] == f"{sum(r['entries'] for r in cs if r['afi'] == 4):,}"
    # links to the trend report; one timestamp spelling
    assert "<a href='../trend.html'>Trend across months</a>" in text
    assert re.search(r"Generated \d{4}-\d\d-\d\dT\d\d:\d\dZ by", text)
    by_hops = Counter(r["hops_v4"] for r in pairs if r["congruent"])
    assert ys["hops"] == [by_hops[h] for h in sorted(hops)]
    assert [by_hops[1], by_hops[2], sum(n for h, n in by_hops.items() if h >= 3)] == \
        [summary["congruent_1hop"], summary["congruent_2hop"], summary["congruent_3plus_hops"]]
    none, adj, notadj = ys["shared"]
    assert [none[0] + adj[0] + notadj[0], adj[1] + notadj[1], adj[2] + notadj[2]] == \
        [summary["noncongruent_shared_0"], summary["noncongruent_shared_1"], summary["noncongruent_shared_2plus"]]
    assert sum(adj) == summary["shared_all_adjacent"]
    assert ys["na"][0][0] == summary["noncongruent_with_non_adopter"]
    assert ys["na"][0][0] + ys["na"][1][0] == summary["noncongruent_pairs"]

    # Headline numbers beside the 2014 reference.
    head = browser.eval("Array.prototype.map.call(document.querySelectorAll('#headline tr'), "
                        "function (r) { return r.textContent; })")
    assert "2014 reference" in head[0]
    assert any("62% over 72 VPs" in r and f"{100 * summary['noncongruent_fraction']:.1f}%" in r for r in head)
    assert any(r.endswith("61%") for r in head) and any(r.endswith("8%") for r in head)
    assert any(r.endswith("91%") for r in head) and any(r.endswith("27-91%") for r in head)

    # The per-VP table sorts and filters.
    assert browser.eval("document.querySelectorAll('#vp-table tbody tr').length") == len(vps)
    browser.eval("document.querySelectorAll('#vp-table th')[1].click()")  # VP ASN ascending
    col = "Array.prototype.map.call(document.querySelectorAll('#vp-table tbody tr'), function (r) " \
          "{ return r.cells[1].textContent; })"
    assert browser.eval(col) == [str(a) for a in sorted(r["vp_asn"] for r in vps)]
    browser.eval("document.querySelectorAll('#vp-table th')[1].click()")  # descending
    assert browser.eval(col) == [str(a) for a in sorted((r["vp_asn"] for r in vps), reverse=True)]
    browser.eval("var f = document.getElementById('vp-filter'); f.value = 'transit'; "
                 "f.dispatchEvent(new Event('input'))")
    shown = browser.eval("Array.prototype.filter.call(document.querySelectorAll('#vp-table tbody tr'), "
                         "function (r) { return !r.hidden; }).length")
    assert shown == cls["transit"]
    assert browser.eval("document.getElementById('vp-count').textContent") == f"{cls['transit']} of {len(vps)} VPs"


@pytest.mark.slow
@pytest.mark.browser
def test_trend_report_in_chromium(browser, data, tmp_path):
    assert cli(["report", "--trend", "--data-dir", str(data)]) == 0
    page = data / "reports" / "trend.html"
    figs = {f["id"]: f for f in check_page(browser, page, shot_dir(tmp_path), "trend")}
    n = len(MONTHS)
    assert list(figs) == ["fig-trend-vps", "fig-trend-vp-lines", "fig-trend-nonadopter", "fig-trend-transitions"]
    assert figs["fig-trend-vps"]["points"] == [n, n] and figs["fig-trend-vps"]["types"] == ["box", "scatter"]
    assert figs["fig-trend-nonadopter"]["points"] == [n]
    assert figs["fig-trend-transitions"]["points"] == [n, n, n, n]
    vp_keys = {(r["vp_group"], r["vp_asn"]) for m in MONTHS for r in _read(data, "vps", m) if r["pairs"] > 0}
    assert figs["fig-trend-vp-lines"]["traces"] == len(vp_keys)
    got = browser.eval("""(function () { var g = function (id) { return document.getElementById(id).data; };
        return {median: g('fig-trend-vps')[0].median, lo: g('fig-trend-vps')[0].lowerfence,
                na: g('fig-trend-nonadopter')[0].y, tr: g('fig-trend-transitions').map(function (t) { return t.y; })};
        })()""")
    table = _cells(browser, "trend-table")
    for i, m in enumerate(MONTHS):
        s = _read(data, "month_summary", m)[0]
        assert got["median"][i] == pytest.approx(100 * s["vp_noncongruent_median"])
        assert got["lo"][i] == pytest.approx(100 * s["vp_noncongruent_min"])
        assert got["na"][i] == pytest.approx(100 * s["non_adopter_fraction"])
        kinds = Counter(r["kind"] for r in _read(data, "transitions", m))
        worse = _became_noncongruent(data, MONTHS[i - 1], m) if i else None
        if i == 0:  # no month before: not applicable, not 0
            assert [t[i] for t in got["tr"]] == [None] * 4 and table[i][-2:] == ["not applicable"] * 2
        else:
            assert [t[i] for t in got["tr"]] == [kinds["existing_pair"], kinds["new_ipv6_destination"],
                                                  kinds["new_pair"], -worse]
            assert table[i][-2:] == [str(sum(kinds.values())), str(worse)]
        assert table[i][:3] == [m, str(s["pairs"]), str(s["vps_with_pairs"])]
        prov = _read(data, "provenance", m) if (data / "provenance" / f"month={m}").is_dir() else []
        assert table[i][6] == (f"{len(prov[0]['snapshots_used'])} snapshot(s); threshold "
                               f"{prov[0]['min_coverage']:g}" + (" (lenient)" if prov[0]["min_coverage"] < 0.9 else "")
                               if prov else "not recorded")
    assert sum(sum(t[1:]) for t in got["tr"][:3]) > 0
    # the CSV link carries the same rows; links to every month report
    import csv
    import io
    from urllib.parse import unquote

    href = browser.eval("document.getElementById('trend-csv').getAttribute('href')")
    assert href.startswith("data:text/csv;charset=utf-8,")
    rows = list(csv.reader(io.StringIO(unquote(href.split(",", 1)[1]))))
    assert rows[1:] == table and rows[0][0] == "month"
    text = page.read_text()
    assert all(f"<a href='month={m}/report.html'>{m}</a>" in text for m in MONTHS)


def _cells(browser, tid: str) -> list[list[str]]:
    return browser.eval(f"Array.prototype.map.call(document.querySelectorAll('#{tid} tbody tr'), function (r) "
                        "{ return Array.prototype.map.call(r.cells, function (c) { return c.textContent; }); })")


def _became_noncongruent(data: Path, prev: str, month: str) -> int:
    """Pairs congruent in `prev` and non-congruent in `month`, from the Parquet."""
    before = {(r["vp_group"], r["vp_asn"], r["dest_asn"]) for r in _read(data, "pairs", prev) if r["congruent"]}
    return sum(1 for r in _read(data, "pairs", month)
               if not r["congruent"] and (r["vp_group"], r["vp_asn"], r["dest_asn"]) in before)


@pytest.mark.browser
def test_trend_with_a_missing_month_and_with_one_month(browser, tmp_path):
    """A month without data is a gap on the axis, named on the page, and its successor's
    changes are not applicable; one published month says the trend needs two."""
    from tests.support.warehouse import build_published

    gap = ("2026-01", "2026-02", "2026-04")
    data = build_published(tmp_path / "gap", months=gap, ases=80, vps=10)
    assert cli(["report", "--trend", "--data-dir", str(data)]) == 0
    page = data / "reports" / "trend.html"
    figs = {f["id"]: f for f in check_page(browser, page, shot_dir(tmp_path), "trend-gap")}
    axis = ["2026-01", "2026-02", "2026-03", "2026-04"]
    got = browser.eval("""(function () { var g = function (id) { return document.getElementById(id).data; };
        return {x: g('fig-trend-vps')[1].x, y: g('fig-trend-vps')[1].y, box: g('fig-trend-vps')[0].x,
                tr: g('fig-trend-transitions').map(function (t) { return t.y; }),
                cats: document.getElementById('fig-trend-vps').layout.xaxis.categoryarray}; })()""")
    assert got["x"] == axis and got["cats"] == axis and got["box"] == list(gap)
    assert got["y"][2] is None and all(v is not None for k, v in enumerate(got["y"]) if k != 2)  # the line breaks
    assert [t[3] for t in got["tr"]] == [None] * 4 and [t[1] is not None for t in got["tr"]] == [True] * 4
    assert "4 published months" not in page.read_text() and "no data for 2026-03" in page.read_text()
    table = _cells(browser, "trend-table")
    assert [r[0] for r in table] == axis and table[2][1] == "no data" and table[3][-2:] == ["not applicable"] * 2
    assert figs["fig-trend-transitions"]["points"] == [4] * 4

    one = build_published(tmp_path / "one", months=("2026-01",), ases=80, vps=10)
    assert cli(["report", "--trend", "--data-dir", str(one)]) == 0
    text = (one / "reports" / "trend.html").read_text()
    assert "The trend needs two published months</b>: only 2026-01 is published" in text
    assert "1 published month, 2026-01 to 2026-01." in text and "fig-trend-transitions" not in text


@pytest.mark.slow
@pytest.mark.browser
def test_six_month_demo_through_the_pipeline(browser, tmp_path):
    """docs/querying.md's synthetic example: `congruency synth` (growing IPv6 adoption), then ingest and
    compare month by month in order (what `congruency run --months` does); the trend report
    shows the generator's own ground truth."""
    archive, data = tmp_path / "synth", tmp_path / "multi"
    assert cli(["synth", "--out", str(archive), "--months", f"{MONTHS[0]}..{MONTHS[-1]}", "--snapshots-per-month",
                "1", "--ases", "150", "--vps", "24", "--seed", "7", "--min-coverage", "0.5"]) == 0
    collectors = ",".join(c["name"] for c in json.loads((archive / "SYNTH.json").read_text())["collectors"])
    D = ("--data-dir", str(data))
    for m in MONTHS:
        assert cli(["ingest", "--month", m, "--days", "1", "--archive-root", str(archive), "--collectors",
                    collectors, *D]) == 0
        assert cli(["compare", "--month", m, "--min-coverage", "0.5", *D]) == 0
    assert cli(["report", "--trend", *D]) == 0
    # Every documented table is a view; those the compare published have every month's rows.
    from bgp_congruency import lake

    con = lake.connect(data)
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    have = {t for t in views if con.execute(f"SELECT count(DISTINCT month) FROM {t}").fetchone()[0] == len(MONTHS)}
    con.close()
    assert views == set(DOCS) and have >= {"pairs", "vps", "month_summary", "provenance", "manifest", "rib_entries"}
    page = data / "reports" / "trend.html"
    figs = {f["id"]: f for f in check_page(browser, page, shot_dir(tmp_path), "demo-trend")}
    assert figs["fig-trend-vps"]["points"] == [len(MONTHS)] * 2
    got = browser.eval("(function () { var t = document.getElementById('fig-trend-vps').data; "
                       "return {x: t[0].x, median: t[0].median, q3: t[0].q3, all: t[1].y}; })()")
    assert got["x"] == list(MONTHS)
    for i, m in enumerate(MONTHS):
        truth = pq.read_table(archive / "ground_truth" / f"month={m}" / "month_summary.parquet").to_pylist()[0]
        assert got["median"][i] == pytest.approx(100 * truth["vp_noncongruent_median"], rel=1e-9), m
        assert got["q3"][i] == pytest.approx(100 * truth["vp_noncongruent_q3"], rel=1e-9), m
        assert got["all"][i] == pytest.approx(100 * truth["noncongruent_fraction"], rel=1e-9), m


@pytest.mark.slow
def test_trend_report_of_an_ingested_only_data_dir_is_one_line(ingested_2026, tmp_path):
    data = tmp_path / "data"
    for sub in ("routes", "manifest"):  # ingested, nothing compared (the fixture's dir is shared)
        shutil.copytree(ingested_2026 / sub, data / sub)
    r = congruency("report", "--trend", "--out", str(tmp_path / "t.html"), "--data-dir", str(data))
    assert r.returncode == 1 and not (tmp_path / "t.html").exists()
    assert r.stderr == (f"error: {data}: no published tables of any month to show a trend of "
                        "(run congruency run for a month first)\n")


@pytest.mark.slow
def test_the_trend_table_says_what_each_month_rests_on(sample):
    """A --min-coverage 0 month reads as lenient in the trend too, with its snapshots."""
    text = (sample.data / "reports" / "trend.html").read_text()
    assert "<td>2 snapshot(s); threshold 0 (lenient)</td>" in text
