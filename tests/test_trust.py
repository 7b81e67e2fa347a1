"""What an analyst can trust: the catalog keeps the snapshots the config says and no more,
and a copied data dir's catalog says so instead of reading the original's files.

Real processes on the real 2026-07 sample (route-views2 + route-views6), DuckDB engine.
"""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.support.data import ARCHIVE, needs_data
from tests.support.month import read_published

pytestmark = needs_data


def _run(data, *more):
    return subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "run", "--month", "2026-07", "--days", "30", "--times",
                           "14:00", "--archive-root", str(ARCHIVE), "--data-dir", str(data), "--min-coverage", "0",
                           "--json", *more], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    data = tmp_path_factory.mktemp("trust") / "data"
    r = _run(data)
    assert r.returncode == 0, r.stderr[-2000:]
    return data


@pytest.mark.slow
def test_the_run_keeps_the_snapshots_the_config_says(month, tmp_path):
    """`lake_keep_snapshots = 3`: each re-publish adds snapshots; the run's lake step expires
    all but three and deletes the files none of them needs (grace 0); the tables read the same."""
    import json

    from bgp_congruency.common import published
    from bgp_congruency.lake import catalog

    data = tmp_path / "data"
    shutil.copytree(month, data, symlinks=True)
    assert catalog.relocate(data)["paths"] > 0
    (tmp_path / "c.toml").write_text("lake_keep_snapshots = 3\nlake_vacuum_grace_s = 0\n")
    before = published.read(data, "pairs", "2026-07")
    for _ in range(2):
        r = _run(data, "--force", "compare", "--config", str(tmp_path / "c.toml"))
        assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads(r.stdout)
    assert s["steps"]["lake"]["status"] == "done"
    with catalog.opened(data) as con:
        kept = [r[0] for r in con.execute("SELECT snapshot_id FROM lake.snapshots()").fetchall()]
    assert len(kept) == 3
    needed = set()
    for k in kept:  # the files of the kept snapshots stay, those of the others are gone
        with catalog.opened(data, snapshot=k) as con:
            needed |= set(catalog.files(con, "pairs", "2026-07"))
    assert {str(p) for p in (data / "pairs" / "month=2026-07").rglob("*.parquet")} == needed
    assert sorted(map(repr, published.read(data, "pairs", "2026-07").to_pylist())) == \
        sorted(map(repr, before.to_pylist()))


def test_a_copied_data_dir_says_to_relocate_its_catalog(month, tmp_path, capsys):
    from bgp_congruency.cli.main import main as cli

    copy = tmp_path / "copy"
    shutil.copytree(month, copy, symlinks=True)
    assert cli(["query", "--data-dir", str(copy), "--sql", "SELECT count(*) FROM pairs"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {copy / 'catalog.sqlite'}: the catalog of {month.resolve()}, not of {copy.resolve()} "
                   f"(copied or moved?); run congruency lake relocate --data-dir {copy}"]
    assert cli(["lake", "relocate", "--data-dir", str(copy)]) == 0
    capsys.readouterr()
    assert cli(["query", "--data-dir", str(copy), "--sql", "SELECT count(*) AS n FROM pairs", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["\"n\"", "2167"]
    for f in (copy / "pairs").rglob("*.parquet"):  # the copy reads its own files, not the original's
        f.unlink()
    assert cli(["query", "--data-dir", str(copy), "--sql", "SELECT count(*) AS n FROM pairs", "--format", "csv"]) == 1


def test_every_format_prints_the_manifest_and_tells_null_from_empty(month, capsys):
    """The manifest's MAP column `skipped` in csv and table form (csv crashed on it), as the
    same JSON text in both; NULL and '' apart; a large double without an exponent."""
    import json

    from bgp_congruency.cli.main import main as cli

    sql = ("SELECT slot, skipped, NULL AS nothing, '' AS empty, 1234567.0::DOUBLE AS big FROM manifest "
           "ORDER BY slot")
    assert cli(["query", "--data-dir", str(month), "--sql", sql, "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == '"slot","skipped","nothing","empty","big"'
    assert lines[1] == '"route-views2@20260730T1400","{}",,"",1234567'
    assert cli(["query", "--data-dir", str(month), "--sql", sql]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[3] == "| route-views2@20260730T1400 | {}      | NULL    |       | 1234567 |"
    assert cli(["query", "--data-dir", str(month), "--sql", sql, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["skipped"] == {}  # a JSON object in every format
    # one timestamp spelling (ISO 8601 UTC) in every format, nested ones included
    sql = ("SELECT dump_time, [dump_time] AS l, TIMESTAMP '2026-07-30 14:00:00.5' AS frac FROM manifest "
           "ORDER BY slot LIMIT 1")
    want = ["2026-07-30T14:00:00Z", '["2026-07-30T14:00:00Z"]', "2026-07-30T14:00:00.500000Z"]
    assert cli(["query", "--data-dir", str(month), "--sql", sql, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == '"2026-07-30T14:00:00Z","[""2026-07-30T14:00:00Z""]",' \
                                                       '"2026-07-30T14:00:00.500000Z"'
    assert cli(["query", "--data-dir", str(month), "--sql", sql]) == 0
    assert [c.strip() for c in capsys.readouterr().out.splitlines()[3].split("|")[1:-1]] == want
    assert cli(["query", "--data-dir", str(month), "--sql", sql, "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)[0]
    assert [got["dump_time"], json.dumps(got["l"]), got["frac"]] == want


def _proxy_answer(paths: list[dict], pairs: list[dict], src: int, dest: int) -> tuple[str, list[int], float, str]:
    """The non-VP rule of selector/rules.py recomputed from the paths and pairs tables alone:
    (class, proxies, agreement, rule); the through rule, then for a source that is no stub
    the destination rule, then the upstream rule (the real sample's sources here are no stubs)."""
    from bgp_congruency.congruency.method import shared_adjacent, shared_asns

    by = {(r["vp_group"], r["vp_asn"], r["afi"]): tuple(r["path"]) for r in paths if r["dest_asn"] == dest}
    vps = sorted({(g, a) for g, a, _ in by})
    through = [vp for vp in vps if any(src in by.get((*vp, f), ())[1:] for f in (4, 6))]
    after = {r["path"][i + 1] for r in paths for i in range(len(r["path"]) - 1) if r["path"][i] == src}
    upstream = sorted({(r["vp_group"], r["vp_asn"]) for r in paths if r["vp_asn"] in after})

    def cls_of(vp, up):
        got = []
        for f in (4, 6):
            p = by.get((*vp, f))
            if p is None:
                return None
            got.append(p[p.index(src):] if src in p[1:] else ((src, *p) if up else None))
        if None in got or (src in by[(*vp, 4)][1:]) != (src in by[(*vp, 6)][1:]):
            return None
        v4, v6 = got
        if v4 == v6:
            return "congruent"
        shared = shared_asns(v4, v6, src, dest)
        return "disjoint" if not shared else ("shared-edge" if shared_adjacent(v4, v6, shared) else "shared-core")

    order = ["disjoint", "shared-edge", "shared-core", "congruent"]
    classes = [c for c in (cls_of(vp, False) for vp in through) if c]
    if classes:
        best = max(classes, key=order.index)
        return best, sorted({a for _, a in through}), classes.count(best) / len(classes), "through"
    assert after, f"AS{src} is a stub"
    votes: dict[str, list[int]] = {}
    for p in pairs:
        if p["dest_asn"] == dest:
            c = ("congruent" if p["congruent"] else "disjoint" if not p["shared_asns"] else
                 "shared-edge" if p["shared_adjacent"] else "shared-core")
            votes.setdefault(c, []).append(p["vp_asn"])
    if votes:
        best = max(votes, key=lambda c: (len(votes[c]), order.index(c)))
        return best, sorted(set(votes[best])), len(votes[best]) / sum(map(len, votes.values())), "destination"
    classes = [c for c in (cls_of(vp, True) for vp in upstream) if c]
    if classes:
        best = max(classes, key=order.index)
        return best, sorted({a for _, a in upstream}), classes.count(best) / len(classes), "upstream"
    return "unknown", [], 0.0, "none"


@pytest.mark.slow
def test_advice_for_sources_that_are_no_vp_follows_the_proxy_rule(month):
    """Issue 18: `advise --from 577 --to 812` said disjoint/aggregate though 3 of 5 proxies said
    shared-edge. Now: the most cautious class, recomputed here from the paths table, and no
    aggregate advice while the proxies (or, for the destination rule, the pairs) disagree."""
    import json

    paths = read_published(month, "paths", "2026-07").to_pylist()
    pairs = read_published(month, "pairs", "2026-07").to_pylist()
    rules = []
    for src in (577, 3356):
        r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "advise", "--data-dir", str(month), "--from", str(src),
                            "--to", "812", "--json"], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        [h] = json.loads(r.stdout)["hints"]
        cls, proxies, agree, rule = _proxy_answer(paths, pairs, src, 812)
        assert (h["hint_class"], h["proxies"], h["via_proxy"], h["rule"]) == (cls, proxies, True, rule)
        assert cls != "unknown" and agree < 1 and h["mode"] != "aggregate"
        if rule == "destination":  # a class without paths
            assert h["v4_path"] is None and h["v6_path"] is None and h["confidence"] == pytest.approx(agree)
        else:
            assert h["v4_path"][0] == h["v6_path"][0] == src
        rules.append(rule)
    # since rule 6 both answer by the destination's pairs, which disagree too (the through
    # proxies' cautious combination is worked by hand in test_selector.py, AS5 -> AS300)
    assert rules == ["destination", "destination"]


def test_a_vp_the_month_does_not_have_is_said_not_an_empty_answer(month, capsys):
    from bgp_congruency.cli.main import main as cli

    for name in ("selector_input", "divergence_ases"):
        assert cli(["query", name, "--data-dir", str(month), "--month", "2026-07", "--vp", "99999"]) == 2
        out, err = capsys.readouterr()
        assert (out, err) == ("", "error: vp: AS99999 is not a vantage point in 2026-07 (congruency query "
                                  "vp_congruency --month 2026-07 lists them)\n")
    assert cli(["query", "selector_input", "--data-dir", str(month), "--month", "2026-07", "--vp", "1403"]) == 0
    want = sum(1 for r in read_published(month, "pairs", "2026-07").to_pylist()
               if r["vp_asn"] == 1403 and not r["congruent"] and not r["shared_asns"])
    assert want > 0 and capsys.readouterr().out.splitlines()[-1] == f"({want} rows)"


def test_the_trend_table_says_what_each_month_rests_on(month):
    """A --min-coverage 0 month reads as lenient in the trend too, with its snapshots."""
    text = (month / "reports" / "trend.html").read_text()
    assert "<td>2 snapshot(s); threshold 0 (lenient)</td>" in text
