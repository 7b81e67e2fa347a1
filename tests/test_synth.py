"""The synthetic Internet generator: real MRT files, policy routing, ground truth."""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bgp_congruency.common.params import MethodParams, load_groups
from bgp_congruency.congruency.method import strip_prepending
from bgp_congruency.synth import generate
from bgp_congruency.synth.topology import CUSTOMER, PEER, PROVIDER, Graph, Internet
from tests.support.data import ARCHIVE, needs_data, require_tool

SEED, ASES, VPS, MONTHS = 7, 60, 6, ("2026-06", "2026-07")
REL = {CUSTOMER: "c", PEER: "p", PROVIDER: "P"}  # what a route's next AS is to its holder
#: Read from the VP towards the origin: up to providers, one peer at most, down to customers.
VALLEY_FREE = re.compile(r"P*p?c*")


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth")
    summary = generate(out, seed=SEED, ases=ASES, vps=VPS, months=MONTHS, snapshots_per_month=2)
    return out, summary


@pytest.fixture(scope="module")
def decoded(archive):
    """Every file read back with the native decoder (not the generator's code), as rib_entries rows (+ month)."""
    from bgp_congruency.ingest.backends import native

    out, _ = archive
    rows = []
    cols = ["peer_asn", "peer_ip", "afi", "prefix", "has_as_set", "as_path"]
    for f in json.loads((out / "ground_truth" / "files.json").read_text())["files"]:
        when = datetime.fromisoformat(f["snapshot_time"].replace("Z", "+00:00"))
        for b in native.decode_checked(out / f["path"], 100_000, snapshot_time=when):
            rows += [dict(month=f["month"], collector=f["collector"], snapshot_time=when, **r)
                     for r in b.select(cols).to_pylist()]
    return rows


def _tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def _rels(g: Graph, path: list[int]) -> str | None:
    """The relationship string of a clean path in g, or None if a hop is not a link."""
    ix = [g.index(a) for a in path]
    out = []
    for a, b in zip(ix, ix[1:]):
        if (a, b) not in g.rel:
            return None
        out.append(REL[g.rel[(a, b)]])
    return "".join(out)


# --- the archive -----------------------------------------------------------------------
def test_layout_and_files_json(archive):
    out, summary = archive
    listed = json.loads((out / "ground_truth" / "files.json").read_text())["files"]
    expected = set()
    for m in MONTHS:
        for d in ("01", "02"):
            ym, stamp = m.replace("-", "."), f"{m.replace('-', '')}{d}.0000"
            expected |= {f"{c}/bgpdata/{ym}/RIBS/rib.{stamp}.bz2" for c in ("route-views2", "route-views6")}
            expected |= {f"{c}/{ym}/bview.{stamp}.gz" for c in ("rrc00", "rrc01")}
    assert {f["path"] for f in listed} == expected
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*") if p.suffix in (".bz2", ".gz", ".tmp")}
    assert on_disk == expected  # nothing else, no temp files left
    afis = {"route-views2": {"4"}, "route-views6": {"6"}, "rrc00": {"4", "6"}, "rrc01": {"4", "6"}}
    for f in listed:
        assert set(f["entries"]) == afis[f["collector"]]
    assert summary["entries"] == sum(sum(f["entries"].values()) for f in listed) > 0
    synth = json.loads((out / "SYNTH.json").read_text())
    assert (synth["seed"], synth["ases"], synth["vps"], synth["months"]) == (SEED, ASES, VPS, list(MONTHS))
    for m in MONTHS:
        for t in ("pairs", "vps", "month_summary"):
            assert (out / "ground_truth" / f"month={m}" / f"{t}.parquet").is_file()


def test_deterministic(tmp_path):
    kw = dict(ases=40, vps=4, months=("2026-07",), snapshots_per_month=1)
    generate(tmp_path / "a", seed=3, **kw)
    generate(tmp_path / "b", seed=3, **kw)
    generate(tmp_path / "c", seed=4, **kw)
    a, b, c = (_tree_digest(tmp_path / x) for x in "abc")
    assert a == b
    mrt = [k for k in a if k.endswith((".bz2", ".gz"))]
    assert mrt and all(a[k] != c.get(k) for k in mrt)


def test_parallel_writers_write_what_one_process_writes(tmp_path):
    """Without ground truth the files are written by forked workers: the same bytes, the
    same files.json (every file's counts and hash) as one process, in two months."""
    kw = dict(seed=5, ases=80, vps=8, months=("2026-06", "2026-07"), snapshots_per_month=2, ground_truth=False)
    one = generate(tmp_path / "one", workers=1, **kw)
    two = generate(tmp_path / "two", workers=2, **kw)
    assert _tree_digest(tmp_path / "one") == _tree_digest(tmp_path / "two")
    assert one["files"] == two["files"] == 16 and one["entries"] == two["entries"] > 0
    with pytest.raises(ValueError, match="workers"):
        generate(tmp_path / "none", workers=0, **kw)


def test_a_dead_writer_stops_the_month_and_leaves_no_temp_file(tmp_path, monkeypatch):
    """A forked writer killed mid-file (as the OOM killer would): the month stops with one
    message, no temp file is left and no files.json claims an archive."""
    import importlib
    import signal

    from bgp_congruency.common import atomic

    gen = importlib.import_module("bgp_congruency.synth.generate")
    real = gen.write_file

    def dying(path, c, snap, *args, **kw):  # runs in the forked child
        if c.name == "rrc01" and snap == 1:
            atomic.Pending(path).tmp.write_bytes(b"half a file")
            os.kill(os.getpid(), signal.SIGKILL)
        return real(path, c, snap, *args, **kw)

    monkeypatch.setattr(gen, "write_file", dying)
    with pytest.raises(RuntimeError, match=r"synth 2026-07: a file writer died .* were removed"):
        generate(tmp_path, seed=5, ases=40, vps=4, snapshots_per_month=2, ground_truth=False, workers=2)
    assert [p.name for p in tmp_path.rglob("*") if p.name.endswith(".tmp")] == []
    assert not (tmp_path / "ground_truth" / "files.json").exists()
    assert not (tmp_path / "rrc01" / "2026.07" / "bview.20260702.0000.gz").exists()


def test_rerun_replaces_previous_archive(tmp_path):
    kw = dict(ases=30, vps=3, snapshots_per_month=1, ground_truth=False)
    generate(tmp_path, months=("2026-01",), **kw)
    generate(tmp_path, months=("2026-02",), **kw)
    left = {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")}
    assert not any("2026.01" in p or "2026-01" in p for p in left), left


def test_bgpdump_counts_match_files_json(archive):
    bgpdump = require_tool("bgpdump")  # a skip on a developer machine, a failure in CI
    out, _ = archive
    for f in json.loads((out / "ground_truth" / "files.json").read_text())["files"]:
        res = subprocess.run([bgpdump, "-m", str(out / f["path"])], capture_output=True, text=True, check=True)
        lines = res.stdout.splitlines()
        assert all(line.startswith("TABLE_DUMP2|") for line in lines)
        by_afi = {"4": 0, "6": 0}
        for line in lines:
            by_afi["6" if ":" in line.split("|")[5] else "4"] += 1
        assert {k: v for k, v in by_afi.items() if k in f["entries"]} == f["entries"], f["path"]


def test_native_decoder_reads_every_entry(archive, decoded):
    out, summary = archive
    assert len(decoded) == summary["entries"]


def test_ground_truth_is_the_reference_on_the_files(archive, decoded):
    """The rows fed to the reference while writing are exactly what the files decode to."""
    from bgp_congruency.congruency.reference import compute_month

    out, _ = archive
    params = MethodParams(min_coverage=0.9, groups=load_groups())
    for m in MONTHS:
        got = compute_month([r for r in decoded if r["month"] == m], m, params)
        for t in ("pairs", "vps", "month_summary"):
            assert pq.read_table(out / "ground_truth" / f"month={m}" / f"{t}.parquet").to_pylist() == got[t], (m, t)
        s = got["month_summary"][0]
        assert s["pairs"] > 0 and 0 < s["noncongruent_pairs"] < s["pairs"]
        assert s["vps_default_free"] < s["vps"]  # partial feeds are not default-free


def test_dirty_rows_present_but_rare(decoded):
    reserved = MethodParams()
    n = len(decoded)
    as_set = sum(r["has_as_set"] for r in decoded)
    clean = [r for r in decoded if not r["has_as_set"]]
    res = sum(any(reserved.is_reserved(a) for a in r["as_path"]) for r in clean)
    loops = sum(len(set(p)) < len(p) for p in (strip_prepending(r["as_path"]) for r in clean))
    prepended = sum(len(strip_prepending(r["as_path"])) < len(r["as_path"]) for r in clean)
    for count in (as_set, res, loops, prepended):
        assert 0 < count < 0.15 * n


def test_archive_paths_follow_policy(archive, decoded):
    """Every clean path in the files is valley-free in its month's family graph, and the
    partial feeds send only customer routes."""
    out, _ = archive
    synth = json.loads((out / "SYNTH.json").read_text())
    partial = {vp["asn"] for vp in synth["vantage_points"] if vp["partial"]}
    net = Internet.build(SEED, ASES)
    graphs = {(afi, m): net.graph(afi, m) for afi in (4, 6) for m in MONTHS}
    known = set(net.asns)
    checked = 0
    for r in decoded:
        if r["has_as_set"] or r["prefix"] in ("0.0.0.0/0", "::/0"):
            continue
        path = list(strip_prepending(r["as_path"]))
        if len(set(path)) < len(path) or not known.issuperset(path):
            continue  # the dirty originations (loops, private ASNs)
        rels = _rels(graphs[(r["afi"], r["month"])], path)
        assert rels is not None and VALLEY_FREE.fullmatch(rels), (r, rels)
        if r["peer_asn"] in partial:
            assert set(rels) <= {"c"}, r
        checked += 1
    assert checked > 0.8 * len(decoded)


# --- policy routing on the topology -----------------------------------------------------
@pytest.mark.parametrize("afi", [4, 6])
def test_routing_is_the_stable_valley_free_choice(afi):
    net = Internet.build(11, 120)
    g = net.graph(afi, "2026-07")
    dests = sorted({p.origin for p in net.month_prefixes(afi, "2026-07")})
    for d in dests:
        r = g.route(d)
        for v in range(g.n):
            if not g.present[v] or v == d:
                continue
            assert r.dist[v] >= 0  # everyone present reaches every destination
            path = g.path(r, v)
            clean = list(strip_prepending(path))
            assert len(path) - 1 == r.dist[v] and clean[-1] == net.asns[d] and len(set(clean)) == len(clean)
            rels = _rels(g, clean)
            assert VALLEY_FREE.fullmatch(rels), rels
            assert not re.search(r"[cp][pP]", rels)  # never provider->customer->provider, no 2 peers
            best = g.candidates(r, v)[0]  # the stable state: v holds its best offer
            assert best == (r.cls[v], r.dist[v], r.nh[v])


def test_customer_route_beats_shorter_peer_route():
    # 1 peers with origin 100 (1 hop) but also reaches it via its customer 50 (2 hops).
    g = Graph.from_asns(c2p=[(100, 50), (50, 1)], p2p=[(1, 100)])
    assert g.path(g.route(g.index(100)), g.index(1)) == [1, 50, 100]


def test_peer_route_beats_shorter_provider_route():
    # 2's provider 3 is 100's provider (2 hops); 2's peer 4 reaches 100 via 5 (3 hops).
    g = Graph.from_asns(c2p=[(2, 3), (100, 3), (100, 5), (5, 4)], p2p=[(2, 4)])
    assert g.path(g.route(g.index(100)), g.index(2)) == [2, 4, 5, 100]


def test_ties_go_to_lowest_neighbour_and_prepending_counts():
    links = [(100, 20), (100, 10), (20, 1), (10, 1)]
    g = Graph.from_asns(c2p=links)
    assert g.path(g.route(g.index(100)), g.index(1)) == [1, 10, 100]
    g = Graph.from_asns(c2p=links, prepend={(100, 10): 1})  # 100 prepends towards 10
    assert g.path(g.route(g.index(100)), g.index(1)) == [1, 20, 100]
    assert g.path(g.route(g.index(100)), g.index(10)) == [10, 100, 100]


def test_no_valley_through_a_customer():
    # 7 is a customer of both 1 and 2: 1 must not reach 2's customer 300 through 7.
    g = Graph.from_asns(c2p=[(7, 1), (7, 2), (300, 2), (1, 9), (2, 9)])
    assert g.path(g.route(g.index(300)), g.index(1)) == [1, 9, 2, 300]


# --- IPv6 -----------------------------------------------------------------------------
def test_ipv6_adoption_grows_and_relationships_differ(archive):
    net = Internet.build(SEED, 300)
    months = ["2025-07", "2026-01", "2026-07", "2027-01"]
    adopted = [net.adopted(m) for m in months]
    counts = [sum(a) for a in adopted]
    assert counts == sorted(counts) and counts[0] < counts[-1] < len(net.asns)
    assert all(not x or y for a, b in zip(adopted, adopted[1:]) for x, y in zip(a, b))  # nobody drops IPv6
    c2p6, p2p6, _, _ = net.relationships(6, "2026-07")
    v4 = {frozenset(e) for e in net.c2p + net.p2p}
    v6 = {frozenset(e) for e in c2p6 + p2p6}
    assert v6 - v4 and v4 - v6  # IPv6-only links (open peering, tunnels) and missing ones
    out, _ = archive
    by_month = json.loads((out / "SYNTH.json").read_text())["topology"]["ipv6_adopters"]
    assert by_month[MONTHS[0]] <= by_month[MONTHS[1]]


# --- CLI ------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, name", [
    (["--months", "2026-13"], "--months"),
    (["--months", "2026-07..2026-01"], "--months"),
    (["--months", "2000-01..2026-01"], "at most 240 months"),
    (["--seed", "x"], "--seed"),
    (["--ases", "30", "--vps", "31"], "--vps"),
    (["--min-coverage", "1.5"], "--min-coverage"),
    (["--every-hours", "5"], "--every-hours: expected a divisor of 24"),
    (["--every-hours", "0"], "--every-hours"),
])
def test_cli_bad_arguments(tmp_path, capsys, bad, name):
    from bgp_congruency.cli.main import main

    assert main(["synth", "--out", str(tmp_path), *bad]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and name in err
    assert not list(tmp_path.iterdir())


def test_cli_json(tmp_path, capsys):
    from bgp_congruency.cli.main import build_parser, main

    synth_help = build_parser()._subparsers._group_actions[0].choices["synth"].format_help()
    assert "--data-dir" not in synth_help and "--config" in synth_help  # synth writes --out, no data dir

    args = ["synth", "--out", str(tmp_path), "--ases", "30", "--vps", "3", "--months", "2026-06..2026-07",
            "--snapshots-per-month", "1", "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["months"] == ["2026-06", "2026-07"] and summary["files"] == 8 and summary["entries"] > 0
    # --every-hours 8 of 2 days: 6 snapshots a collector, at 00:00, 08:00 and 16:00 of each day
    every = tmp_path / "every"
    assert main(["synth", "--out", str(every), "--ases", "30", "--vps", "3", "--months", "2026-07",
                 "--snapshots-per-month", "2", "--every-hours", "8", "--json"]) == 0
    listed = json.loads((every / "ground_truth" / "files.json").read_text())["files"]
    times = {c: sorted(f["snapshot_time"][8:16] for f in listed if f["collector"] == c) for c in
             {f["collector"] for f in listed}}
    assert len(times) == 4 and all(t == ["01T00:00", "01T08:00", "01T16:00", "02T00:00", "02T08:00", "02T16:00"]
                                   for t in times.values()), times


# --- churn (issue 56) ---------------------------------------------------------------------------

#: The files the generator wrote before its churn model (commit e1cb168), for seed 3, 60 ASes,
#: 4 VPs, two snapshots: `churn=False` must write them byte for byte.
BEFORE_CHURN = {
    "route-views2/bgpdata/2026.07/RIBS/rib.20260701.0000.bz2": "0bdadc4f8ecf2898413ccacc21b8441bb798058358ec56a16b7cf98dc283c4be",
    "route-views2/bgpdata/2026.07/RIBS/rib.20260702.0000.bz2": "fdbc41a3724939399152d228dfc413bd97f7f6028fd6d758b86fa8e36152963c",
    "route-views6/bgpdata/2026.07/RIBS/rib.20260701.0000.bz2": "7ed04d6b38073f77fbb5492eaae89c7ef980e3b4b86121ba0d83c55708ed3733",
    "route-views6/bgpdata/2026.07/RIBS/rib.20260702.0000.bz2": "f08cf89f20e53819d401c6049573951924c807fa525592827d52d255be6abe3b",
    "rrc00/2026.07/bview.20260701.0000.gz": "ea300f0c663d62ec57e0d5f38d0b928436ea9166214fb6623905abcb237baa9e",
    "rrc00/2026.07/bview.20260702.0000.gz": "051a8cbd9dfab0515a8ca08ec234e443af78c09bdaa173bb3ae833e997eac8d9",
    "rrc01/2026.07/bview.20260701.0000.gz": "feac4ba357c9bd2a0f9d4e87d35a30444cf4e7ecb23c8533d30aa98f51b3c056",
    "rrc01/2026.07/bview.20260702.0000.gz": "2b65c38188247d6c71c192989d6359c4dfeb9d2796d991d77c10df215d8cbcf6",
}


def test_without_churn_the_months_of_before_byte_for_byte(tmp_path):
    generate(tmp_path, seed=3, ases=60, vps=4, snapshots_per_month=2, ground_truth=False, workers=1, churn=False)
    listed = json.loads((tmp_path / "ground_truth" / "files.json").read_text())["files"]
    assert {f["path"]: f["sha256"] for f in listed} == BEFORE_CHURN
    assert {f["path"]: hashlib.sha256((tmp_path / f["path"]).read_bytes()).hexdigest() for f in listed} == BEFORE_CHURN


def test_the_cli_churns_by_default_and_no_churn_writes_the_months_of_before(tmp_path, capsys):
    """`congruency synth --no-churn` (its default workers, with the ground truth) writes the
    files of before byte for byte; without the flag the second day's dumps differ."""
    from bgp_congruency.cli.main import main

    args = ["synth", "--seed", "3", "--ases", "60", "--vps", "4", "--months", "2026-07", "--snapshots-per-month", "2"]
    assert main([*args, "--out", str(tmp_path / "before"), "--no-churn"]) == 0
    assert main([*args, "--out", str(tmp_path / "now")]) == 0
    capsys.readouterr()
    sha = {k: {p: hashlib.sha256((tmp_path / k / p).read_bytes()).hexdigest() for p in BEFORE_CHURN}
           for k in ("before", "now")}
    assert sha["before"] == BEFORE_CHURN
    assert {p for p in BEFORE_CHURN if sha["now"][p] != BEFORE_CHURN[p]} == {p for p in BEFORE_CHURN if "0702" in p}


@pytest.mark.slow
@pytest.mark.parametrize("days, every, hours", [(1, 2, 2), (4, 24, 24)])
def test_churn_between_snapshots_is_the_fitted_rate(tmp_path, days, every, hours):
    """The share of (session, prefix) entries whose path differs (or that are there in only
    one) between consecutive snapshots, read back by the native decoder: the model's
    expectation (synth/churn.expected, fitted to the real update files: bench/churn.py) within
    25%, over every collector, on a 400-AS month: 2-hourly snapshots of a day (11 intervals),
    daily ones of four days (3)."""
    from bgp_congruency.synth import churn
    from tests.support.decode import decode_all

    generate(tmp_path, seed=8, ases=400, vps=12, snapshots_per_month=days, every_hours=every, ground_truth=False,
             workers=1)
    listed = json.loads((tmp_path / "ground_truth" / "files.json").read_text())["files"]
    changed = total = 0
    for col in {f["collector"] for f in listed}:
        prev = None
        for f in sorted((f for f in listed if f["collector"] == col), key=lambda f: f["snapshot_time"]):
            t = decode_all(tmp_path / f["path"], "native")
            cur = dict(zip(zip(t["peer_ip"].to_pylist(), t["prefix"].to_pylist()),
                           [tuple(p or ()) for p in t["as_path"].to_pylist()]))
            if prev is not None:
                keys = set(prev) | set(cur)
                changed += sum(prev.get(k) != cur.get(k) for k in keys)
                total += len(keys)
            prev = cur
    assert changed / total == pytest.approx(churn.expected(hours), rel=0.25), (changed / total, churn.expected(hours))


@needs_data
def test_the_churn_model_s_rates_are_those_measured_in_the_real_update_files(monkeypatch):
    """synth/churn.py's three measured rates, measured again here: bench/churn.py's pooled
    figures over the four real update files of the shared archive, decoded by `bgpdump -m`
    (an independent decoder), equal the model's constants to the digits they keep."""
    from bench import churn as measured
    from bgp_congruency.synth import churn

    require_tool("bgpdump")
    monkeypatch.setattr(measured, "ARCHIVE", ARCHIVE)  # the suite's shared data, wherever it is
    got = [measured.measure(ARCHIVE / f) for f in measured.FILES]
    assert all(g["sessions"] > 10 for g in got), got
    median = measured.pool(got)
    assert median["median_share_per_hour"] == pytest.approx(churn.TOUCHED_PER_HOUR, abs=5e-5), median
    assert median["path_change_share"] == pytest.approx(churn.PATH_CHANGE_SHARE, abs=5e-4), median
    assert median["withdrawal_share"] == pytest.approx(churn.WITHDRAWAL_SHARE, abs=5e-4), median
