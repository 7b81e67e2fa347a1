"""The path selector: classes against the pairs table (a synthetic month built to have every
class, and the real 2026-07 pair), longest-prefix match, proxies, the k-path choice against
brute force, the published hints table, and bad input."""
from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from bgp_congruency.cli.main import main as cli
from bgp_congruency.common.config import load
from bgp_congruency.common.tables import HINTS
from bgp_congruency.lake import published
from bgp_congruency.selector import rules as selector
from bgp_congruency.selector.advice import advise
from bgp_congruency.selector.month import resolve_month
from bgp_congruency.selector.rules import Candidate, choose_k, rank, selection_key
from bgp_congruency.selector.table import publish as publish_hints
from tests.support import hintdata
from tests.support.data import needs_data
from tests.support.hintdata import CLASSES, MONTH, PATHS
from tests.support.month import read_published


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    data = tmp_path_factory.mktemp("hints-synth")
    tables = hintdata.publish_synthetic(data)
    return data, tables


def cfg_for(data: Path):
    return load().with_overrides(data_dir=data)


def expected_class(pair: dict) -> str:
    """The issue's definitions, read straight off the pairs table's columns."""
    if pair["congruent"]:
        return "congruent"
    if not pair["shared_asns"]:
        return "disjoint"
    return "shared-edge" if pair["shared_adjacent"] else "shared-core"


# ------------------------------------------------------------------ pure definitions
def test_classify_hand_cases():
    for (vp, dest), (p4, p6) in PATHS.items():
        if p6 is None:
            continue
        cls, shared = selector.classify(p4, p6, vp, dest)
        assert cls == CLASSES[(vp, dest)], (vp, dest)
        assert shared == sorted((set(p4) & set(p6)) - {vp, dest})
    # one host, two origins: both ends are excluded from the shared ASes
    assert selector.classify([1, 5, 7], [1, 5, 7, 9], 1, 7, 9) == ("shared-edge", [5])
    assert selector.classify([1, 2, 7], [1, 3, 7, 9], 1, 7, 9) == ("disjoint", [])


def test_advice_is_true_for_the_targets():
    for cls in selector.CLASSES:
        for primary in (4, 6, None) if cls == "unknown" else (4, 6):
            a = selector.advice(cls, primary)
            assert a.mode in selector.MODES
            assert "no coupled congestion control" in a.congestion_control
            assert "out-of-tree multipath-tcp.org" in a.congestion_control
            for flags in (a.mptcp_flags_v4, a.mptcp_flags_v6):
                assert flags is None or set(flags.split()) <= {"subflow", "signal", "backup", "fullmesh"}
            for w, s in ((a.mpt_weight_v4, a.mpt_status_v4), (a.mpt_weight_v6, a.mpt_status_v6)):
                assert (w is None) == (s is None) and (w is None or (w >= 1 and s in (0, 255)))
    assert selector.advice("disjoint", 4).mode == "aggregate"
    assert selector.advice("shared-edge", 4).mode == "aggregate"
    core = selector.advice("shared-core", 6)
    assert (core.mode, core.mptcp_flags_v6, core.mptcp_flags_v4, core.mpt_status_v4) == \
        ("backup", "subflow", "subflow backup", 255)
    assert selector.advice("congruent", 4).mptcp_flags_v6 is None


def test_rationales_cite_the_measured_gain_and_only_it(monkeypatch, tmp_path):
    """The figures a rationale quotes are bench/multipath.py's medians as bench/results.json
    holds them (recomputed here from the runs' cases, independently of the bench's code);
    without the file a rationale claims nothing measured."""
    import statistics

    from bgp_congruency.selector import gain

    results = json.loads((Path(__file__).parents[1] / "bench" / "results.json").read_text())
    (run,) = results["real"]["multipath"]
    dis = [c for c in run["cases"] if c["topology"] == "disjoint"]
    sha = [c for c in run["cases"] if c["topology"] == "shared"]
    assert {c["better_family"] for c in dis} and all(c["subflow_families"] == ["v4", "v6"] for c in run["cases"])
    want = {"disjoint_vs_capacity": statistics.median(c["mptcp_vs_capacity"]["median"] for c in dis),
            "disjoint_vs_tcp_low": min(c["mptcp_vs_tcp"]["median"] for c in dis),
            "disjoint_vs_tcp_high": max(c["mptcp_vs_tcp"]["median"] for c in dis),
            "shared_vs_capacity": statistics.median(c["mptcp_vs_capacity"]["median"] for c in sha),
            "shared_share_against_tcp": statistics.median(c["mptcp_share_against_tcp"]["median"] for c in sha),
            "tcp_share_against_tcp": statistics.median(c["tcp_share_against_tcp"]["median"] for c in sha)}
    fig = gain.figures()
    assert fig is not None and {k: fig[k] for k in want} == pytest.approx(want, abs=1e-9)
    agg = selector.advice("disjoint", 4).rationale
    assert (f"carried {want['disjoint_vs_capacity']:.0%} of their sum, {want['disjoint_vs_tcp_low']:.2f}x to "
            f"{want['disjoint_vs_tcp_high']:.2f}x single-path TCP") in agg
    assert f"took {want['shared_share_against_tcp']:.0%} from a competing TCP flow" in agg
    assert f"took {want['shared_share_against_tcp']:.0%}" in selector.advice("shared-core", 4).rationale
    assert f"carried {want['shared_vs_capacity']:.0%} of it" in selector.advice("congruent", 6).rationale
    assert "Measured" not in selector.advice("unknown", 4).rationale  # one family: nothing measured applies
    monkeypatch.setattr(gain, "FILE", tmp_path / "missing.json")
    gain.figures.cache_clear()
    selector.advice.cache_clear()
    try:
        assert all("Measured" not in selector.advice(c, 4).rationale for c in selector.CLASSES)
    finally:
        monkeypatch.undo()
        gain.figures.cache_clear()
        selector.advice.cache_clear()


def test_confidence_and_primary():
    assert selector.confidence(1.0, 0.5, 2, 2) == 0.5
    assert selector.confidence(1.0, 1.0, 1, 4) == 0.25
    assert selector.confidence(1.0, 1.0, 2, 2, proxy=True, agreement=0.5) == 0.25
    assert selector.confidence(None, 1.0, 2, 2) == 0.0
    assert selector.primary_afi(0.9, 1.0, 2, 2) == 6
    assert selector.primary_afi(1.0, 1.0, 3, 2) == 6
    assert selector.primary_afi(1.0, 1.0, 2, 2) == 4
    assert selector.primary_afi(None, 0.2, None, 3) == 6


def brute(cands, k, src):
    order = rank(cands)
    if k >= len(order):
        return order
    return list(min(itertools.combinations(order, k), key=lambda s: selection_key(s, src)))


def test_k_choice_hand_cases():
    C = Candidate
    a4, a6 = C(("a", 4), (1, 2, 3, 9), 1.0), C(("a", 6), (1, 2, 4, 9), 1.0)
    b4, b6 = C(("b", 4), (1, 5, 8), 0.5), C(("b", 6), (1, 6, 8), 1.0)
    c4 = C(("c", 4), (1, 7, 10), 1.0)
    cands = [a4, a6, b4, b6, c4]
    # k=2: a4+a6 share AS2; b4+b6 share only their endpoint AS8 (not counted) but b4 is less
    # stable; of the sharing-free, fully stable pairs b6+c4 has the fewest hops (2 + 2).
    assert choose_k(cands, 2, 1) == [b6, c4]
    # k=3: {b6, c4} plus a4 or a6 (3 hops each, equal in everything): rank order, a4 first
    assert choose_k(cands, 3, 1) == [b6, c4, a4]
    # k=4 must take a4 and a6 together (shared AS2) or b4: b6, c4, a4, b4 shares nothing
    assert set(choose_k(cands, 4, 1)) == {a4, b4, b6, c4}
    # ties on shared ASes and stability go to the shorter paths
    s1, s2, s3 = C(("x", 4), (1, 11, 12, 20), 1.0), C(("y", 4), (1, 13, 21), 1.0), C(("z", 4), (1, 14, 22), 1.0)
    assert {c.key for c in choose_k([s1, s2, s3], 2, 1)} == {("y", 4), ("z", 4)}
    # an endpoint AS that is only ever last does not count as shared
    e1, e2 = C(("e", 4), (1, 2, 50), 1.0), C(("e", 6), (1, 3, 50), 1.0)
    assert selector.shared_among([e1.path, e2.path], 1) == set()
    assert choose_k([e1, e2], 5, 1) == rank([e1, e2])


def test_k_choice_is_optimal_against_brute_force():
    rnd = random.Random(11)
    for case in range(150):
        n = rnd.randint(2, 9)
        cands = []
        for i in range(n):
            hops = rnd.randint(1, 5)
            path = (1, *rnd.sample(range(2, 14), hops), 100 + rnd.randint(0, 3))
            cands.append(Candidate((f"e{i // 2}", 4 + 2 * (i % 2)), path, rnd.choice((0.5, 0.75, 1.0))))
        k = rnd.randint(1, n)
        got, want = choose_k(cands, k, 1), brute(cands, k, 1)
        assert selection_key(got, 1) == selection_key(want, 1), case
        assert got == want, case


def test_k_choice_search_is_bounded(monkeypatch):
    many = [Candidate((f"e{i}", 4), (1, 100 + i, 1000 + i), 1.0) for i in range(64)]
    assert len(choose_k(many, 32, 1)) == 32  # C(64, 32) subsets, cut at once by the bound
    monkeypatch.setattr(selector, "MAX_SEARCH_NODES", 3)
    with pytest.raises(ValueError, match="too large a search"):
        choose_k(many, 32, 1)


# ------------------------------------------------------------------ synthetic month
@pytest.mark.slow
def test_hints_table_of_synthetic_month(synth):
    data, tables = synth
    cfg = cfg_for(data)
    summary = publish_hints(cfg, MONTH)
    t = pq.read_table(data / "hints" / f"month={MONTH}")
    assert t.schema == HINTS
    rows = {(r["vp_asn"], r["dest_asn"]): r for r in t.to_pylist()}
    pairs = {(p["vp_asn"], p["dest_asn"]): p for p in tables["pairs"]}
    assert set(rows) == set(pairs) == set(CLASSES)
    for key, p in pairs.items():
        r = rows[key]
        assert r["hint_class"] == expected_class(p) == CLASSES[key], key
        assert (r["v4_path"], r["v6_path"], r["shared_asns"]) == (p["v4_path"], p["v6_path"], p["shared_asns"])
        assert r["caveat"] == selector.LOWER_BOUND and r["month"] == MONTH
    assert rows[(10, 100)]["stability_v4"] == pytest.approx(2 / 3)
    assert rows[(10, 100)]["confidence"] == pytest.approx(2 / 3, abs=1e-6)
    assert rows[(10, 100)]["mode"] == "aggregate" and rows[(10, 300)]["mode"] == "backup"
    assert summary["rows"] == len(pairs) and summary["classes"]["shared-core"] == 2
    # a re-run replaces the month and leaves nothing staged; it shows its progress in the
    # caller's display (congruency run: one display), not one of its own
    from rich.progress import Progress

    with Progress(disable=True) as prog:
        assert publish_hints(cfg, MONTH, progress=prog)["rows"] == len(pairs)
    assert [(t.description, t.completed) for t in prog.tasks] == [(f"hints {MONTH}", 1)]  # one VP partition
    assert sorted(p.name for p in (data / "hints").iterdir()) == [f"month={MONTH}"]
    assert published.months(data, "hints") == [MONTH]
    assert not (data / "_staging").exists() or list((data / "_staging").iterdir()) == []


@pytest.mark.slow
def test_hints_in_vp_partitions_are_the_hints_of_the_whole_month(synth):
    """The hints built a VP partition at a time (a file each) are row for row those built at
    once; three partitions of this month's VPs leave none empty or all of them in one."""
    from bgp_congruency.selector.table import partitions

    data, tables = synth
    read = lambda: sorted(map(repr, read_published(data, "hints", MONTH).to_pylist()))  # noqa: E731
    cfg = cfg_for(data)
    assert partitions(duckdb.connect(), cfg, published.files(data, ["pairs"], MONTH)["pairs"]) == 1
    assert publish_hints(cfg, MONTH)["rows"] == len(tables["pairs"])
    whole = read()
    publish_hints(cfg.with_overrides(compare_partitions=3), MONTH)
    folder = Path(published.files(data, ["hints"], MONTH)["hints"][0]).parent  # the publish's files
    files = sorted(folder.glob("*.parquet"))
    assert [f.name for f in files] == ["part-0.parquet", "part-1.parquet", "part-2.parquet"]
    assert sum(pq.read_metadata(f).num_rows > 0 for f in files) > 1
    assert read() == whole
    publish_hints(cfg, MONTH)


def _copies(data: Path, out: Path, n: int) -> dict[str, list[str]]:
    """The synthetic month's pairs and paths, n copies with the VP ASNs renumbered (VP v of
    copy i is v + 1000 i): as many more pairs over as many more VPs, as Parquet files."""
    con = duckdb.connect()
    files = published.files(data, ["pairs", "paths"], MONTH)
    out.mkdir()
    for t in ("pairs", "paths"):
        src = ", ".join(f"'{f}'" for f in files[t])
        cols = [c for c, *_ in con.execute(f"DESCRIBE SELECT * FROM read_parquet([{src}])").fetchall()]
        sel = ", ".join("vp_asn + 1000 * i AS vp_asn" if c == "vp_asn" else c for c in cols)
        con.execute(f"COPY (SELECT {sel} FROM read_parquet([{src}]), range({n}) r(i)) TO '{out}/{t}.parquet'")
    return {t: [str(out / f"{t}.parquet")] for t in ("pairs", "paths")}


@pytest.mark.slow
def test_hints_partitions_spilling_one_after_another(synth, tmp_path, monkeypatch):
    """A month's hints in three VP partitions under a memory limit that makes the first
    spill: the connection spills to the staging folder from its first query (DuckDB cannot
    change its temp directory once it has spilled; setting it per partition failed the
    second with "Cannot switch temporary directory", as the scale-250 month at 4GB did), and
    the rows are those built in one partition without a limit. DuckDB gets half the limit
    (table.MEMORY_SHARE: the rest is the Arrow work around it)."""
    from rich.progress import Progress

    from bgp_congruency.selector import table
    from bgp_congruency.selector.table import stage

    data, _ = synth
    files = _copies(data, tmp_path / "in", 8_000)
    seen, hints_sql = [], table._hints_sql

    def look(con, *a, **kw):  # as each partition begins: where DuckDB spills, and what it spilled so far
        seen.append(con.execute("SELECT current_setting('temp_directory'), (SELECT coalesce(sum(size), 0) "
                                "FROM duckdb_temporary_files()), current_setting('memory_limit')").fetchone())
        return hints_sql(con, *a, **kw)

    monkeypatch.setattr(table, "_hints_sql", look)
    read = lambda d: sorted(duckdb.sql(f"SELECT * FROM '{d}/hints/*.parquet'").fetchall())  # noqa: E731
    with Progress(disable=True) as prog:
        whole = stage(cfg_for(data).with_overrides(duckdb_memory_limit=None), MONTH, str(tmp_path / "one"), files, prog)
        # 56MB: with the advice texts written as ENUMs, 160MB no longer made the first spill; it
        # spills from about 40MB (below, out of memory) to 70MB (2026-12-02)
        cfg = cfg_for(data).with_overrides(duckdb_memory_limit="56MB", duckdb_threads=1, compare_partitions=3)
        seen.clear()
        assert stage(cfg, MONTH, str(tmp_path / "three"), files, prog) == whole
    assert [d for d, _, _ in seen] == [str(tmp_path / "three" / ".duckdb-tmp")] * 3
    half = duckdb.connect()
    half.execute(f"SET memory_limit = '{56_000_000 // 2 // 2**20}MiB'")
    assert {m for _, _, m in seen} == {half.execute("SELECT current_setting('memory_limit')").fetchone()[0]}
    assert seen[1][1] > 0  # the first partition spilled
    assert sorted(p.name for p in (tmp_path / "three" / "hints").iterdir()) == [f"part-{i}.parquet" for i in range(3)]
    assert len(read(tmp_path / "three")) == sum(whole.values()) and read(tmp_path / "three") == read(tmp_path / "one")
    for part in [*(tmp_path / "three" / "hints").iterdir(), *(tmp_path / "one" / "hints").iterdir()]:
        # each file in key order (the export's line order), with 1 thread and with the default
        keys = duckdb.sql(f"SELECT vp_group, vp_asn, dest_asn FROM '{part}'").fetchall()
        assert keys == sorted(keys) and len(keys) > 1000, part
    assert not (tmp_path / "three" / ".duckdb-tmp").exists()


def test_hints_spill_where_the_config_says(synth, tmp_path, monkeypatch):
    """duckdb_temp_dir names DuckDB's spill folder for every query of the project, the hints
    build's too (it spilled to the staging folder whatever the config said)."""
    from rich.progress import Progress

    from bgp_congruency.selector import table
    from bgp_congruency.selector.table import stage

    data, _ = synth
    files = _copies(data, tmp_path / "in", 2)
    seen, hints_sql = [], table._hints_sql
    monkeypatch.setattr(table, "_hints_sql", lambda con, *a, **kw: (
        seen.append(con.execute("SELECT current_setting('temp_directory')").fetchone()[0]), hints_sql(con, *a, **kw))[1])
    cfg = cfg_for(data).with_overrides(duckdb_temp_dir=str(tmp_path / "scratch"), compare_partitions=2)
    with Progress(disable=True) as prog:
        stage(cfg, MONTH, str(tmp_path / "staged"), files, prog)
    assert len(seen) == 2 and len(set(seen)) == 1 and Path(seen[0]).parent == tmp_path / "scratch"
    assert Path(seen[0]).name.startswith("duckdb-spill-")  # a folder of its own (private_spill)


def test_other_queries_spill_in_a_folder_of_their_own(synth, tmp_path, monkeypatch):
    """Without duckdb_temp_dir, a query's connection (advise, evaluate, the export) spills in
    a folder of its own under TMPDIR, not in DuckDB's default ./.tmp, which every process
    started in the same folder shares (duckdb/duckdb#15173: their spill files collide)."""
    import tempfile

    from bgp_congruency.common import duck

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    data, _ = synth
    folders = [duck.connect(cfg_for(data)).execute("SELECT current_setting('temp_directory')").fetchone()[0]
               for _ in range(2)]
    assert len(set(folders)) == 2 and all(Path(f).parent == tmp_path and Path(f).is_dir() for f in folders)


@pytest.mark.slow
def test_data_dir_with_a_quote_in_its_path(synth, tmp_path):
    """Paths reach DuckDB as quoted literals: a data dir named with an apostrophe works."""
    quoted = tmp_path / "o'brien's data"
    tables = hintdata.publish_synthetic(quoted)
    cfg = cfg_for(quoted)
    assert publish_hints(cfg, MONTH)["rows"] == len(tables["pairs"])
    got = {(r["vp_asn"], r["dest_asn"]): r["hint_class"]
           for r in read_published(quoted, "hints", MONTH).to_pylist()}
    assert got == CLASSES
    [h] = advise(cfg, "40", "100")["hints"]  # the proxy path reads paths, pairs and vps too
    assert (h["via_proxy"], h["rule"], h["hint_class"]) == (True, "destination", "disjoint")


@pytest.mark.slow
def test_advise_vp_matches_table_and_method(synth):
    data, tables = synth
    cfg = cfg_for(data)
    for (vp, dest), cls in CLASSES.items():
        [h] = advise(cfg, str(vp), str(dest))["hints"]
        assert h["hint_class"] == cls and h["via_proxy"] is False and h["vp_asn"] == vp
        assert h["v4_path"] == PATHS[(vp, dest)][0]
    [h] = advise(cfg, "10", "500")["hints"]
    assert h["hint_class"] == "unknown" and "no IPv6 path" in h["reason"] and h["mode"] == "single-path"
    assert h["mptcp_flags_v4"] == "subflow" and h["mptcp_flags_v6"] is None
    [h] = advise(cfg, "rrc00:20", "AS100")["hints"]
    assert (h["vp_group"], h["hint_class"]) == ("rrc00", "disjoint")


@pytest.mark.slow
def test_advise_proxy_source(synth):
    """Sources that are no VP (the rule in selector/rules.py's docstring)."""
    data, _ = synth
    cfg = cfg_for(data)
    # AS40 hands traffic on ([10, 40, 20, 800]: no stub) and no path to AS100 crosses it: the
    # destination rule, the class of both pairs to AS100 (VP 10's and VP 20's: disjoint), 2 of 2
    [h] = advise(cfg, "40", "100")["hints"]
    assert (h["rule"], h["via_proxy"], h["vp_asn"], h["proxies"]) == ("destination", True, None, [10, 20])
    assert (h["v4_path"], h["v6_path"], h["hint_class"], h["mode"]) == (None, None, "disjoint", "aggregate")
    assert h["confidence"] == 1.0 and any("2 of the 2 pairs of the month's VPs to AS100" in n for n in h["notes"])
    # The upstream rule, after it: a host whose IPv4 address is AS100's and IPv6 address AS400's
    # has no pair of its own; AS40 hands traffic to VP 20, so both families are VP 20's paths
    # with AS40 in front: [40, 20, 1, 100] and [40, 20, 2, 400] share AS20 next to the source
    [h] = advise(cfg, "40", ["10.0.100.1", "2001:db8:190::1"])["hints"]
    assert (h["rule"], h["vp_asn"], h["proxies"], h["dest_asn"], h["dest_asn_v6"]) == ("upstream", 20, [20], 100, 400)
    assert (h["v4_path"], h["v6_path"]) == ([40, 20, 1, 100], [40, 20, 2, 400])
    assert (h["hint_class"], h["shared_asns"], h["mode"]) == ("shared-edge", [20], "aggregate")
    assert h["confidence"] == pytest.approx(0.5) and any("upstream VP rrc00:AS20" in n for n in h["notes"])
    # AS30 is seen only right AFTER VP 20 ([20, 30, 700]): VP 20 routes through it (a customer
    # or peer of AS30, not its upstream) and no path to AS100 crosses it: not the upstream rule;
    # it hands traffic to AS700, so no stub: the destination rule
    [h] = advise(cfg, "30", "100")["hints"]
    assert (h["rule"], h["hint_class"], h["vp_asn"]) == ("destination", "disjoint", None)
    # ...but VP 20's path to AS700 crosses AS30 in both families: its own route from AS30 on
    [h] = advise(cfg, "30", "700")["hints"]
    assert (h["v4_path"], h["v6_path"], h["hint_class"]) == ([30, 700], [30, 700], "congruent")
    # AS5 is crossed by VP 10 (IPv4 [5, 6, 300], IPv6 [5, 7, 300]: disjoint) and VP 20 (shared
    # AS9 next to the destination: shared-edge): the more cautious class, half agree, so the
    # aggregate advice is held back to backup
    [h] = advise(cfg, "5", "300")["hints"]
    assert (h["proxies"], h["vp_asn"], h["hint_class"]) == ([10, 20], 20, "shared-edge")
    assert (h["v4_path"], h["v6_path"], h["shared_asns"]) == ([5, 6, 9, 300], [5, 7, 9, 300], [9])
    assert h["mode"] == "backup" and h["mptcp_flags_v6"] == "subflow backup" and h["confidence"] == 0.25
    assert "only 50% of the proxy VPs agree" in h["rationale"]
    assert any("1 disjoint, 1 shared-edge" in n for n in h["notes"])
    # AS1 is on VP 10's IPv4 path to AS500 and AS500 has no IPv6 path, so no pair: AS1's IPv6
    # route is not seen, and a VP's path is not made up for it (no upstream VP either): IPv4 only
    [h] = advise(cfg, "1", "500")["hints"]
    assert (h["rule"], h["hint_class"], h["v4_path"], h["v6_path"]) == ("through", "unknown", [1, 500], None)
    assert "no IPv6 path" in h["reason"] and (h["mode"], h["mptcp_flags_v4"]) == ("single-path", "subflow")
    # AS100 is only ever an origin (a stub, rule 5): the AS right before it is AS1 on the IPv4
    # paths and AS2 on the IPv6 ones; VP 10's IPv4 path [10, 1, 400] gives AS1's route [1, 400],
    # VP 20's IPv6 path [20, 2, 400] AS2's route [2, 400]: no shared AS, disjoint
    [h] = advise(cfg, "100", "400")["hints"]
    assert (h["rule"], h["v4_path"], h["v6_path"], h["hint_class"]) == ("provider", [100, 1, 400], [100, 2, 400],
                                                                         "disjoint")
    assert h["via_proxy"] and h["proxies"] == [10, 20] and h["confidence"] == pytest.approx(0.5)
    assert any("never hands traffic on (a stub)" in n and "AS1 in IPv4 and AS2 in IPv6" in n for n in h["notes"])
    # AS700 is a stub too, but no path to AS100 crosses AS30, the AS before it: no provider
    # answer; AS30 is its one neighbour in both families, and both pairs to AS100 are disjoint:
    # behind AS30, shared-edge (rule 7), AS30 the shared AS
    [h] = advise(cfg, "700", "100")["hints"]
    assert (h["rule"], h["hint_class"], h["shared_asns"], h["confidence"]) == ("one-neighbour", "shared-edge", [30], 1.0)
    assert (h["v4_path"], h["v6_path"], h["mode"]) == (None, None, "aggregate")
    assert any("AS30 is the one AS seen right before it in both families" in n for n in h["notes"])
    # AS100 is a stub whose neighbours differ (AS1 and AS3 in IPv4, AS2 in IPv6) and no path to
    # AS600 crosses them: no answer
    [h] = advise(cfg, "100", "600")["hints"]
    assert h["hint_class"] == "unknown" and "AS100 is not a vantage point in" in h["reason"] and h["rule"] == "none"
    # AS600 is a stub with one neighbour per family, but not the same one (AS8 in IPv4, AS11 in
    # IPv6) and no path to AS100 crosses them: no answer either
    [h] = advise(cfg, "600", "100")["hints"]
    assert (h["hint_class"], h["rule"]) == ("unknown", "none")


def test_proxy_rule_pure_functions():
    f = selector.from_source
    assert f(5, [10, 5, 6, 300], [10, 2, 5, 300], False) == ((5, 6, 300), (5, 300))
    assert f(40, [20, 1, 100], [20, 2, 100], True) == ((40, 20, 1, 100), (40, 20, 2, 100))
    # built the same way: an observed route beside a guess keeps the route only
    assert f(40, [20, 40, 100], [20, 2, 100], True) == ((40, 100), None)
    assert f(40, [20, 1, 100], [20, 2, 100], False) == (None, None)
    assert f(40, None, [20, 40, 7], False) == (None, (40, 7))
    assert selector.combine_proxies(["disjoint", "shared-edge", "unknown", "disjoint"]) == ("shared-edge", 1 / 3)
    assert selector.combine_proxies(["congruent", "shared-core"]) == ("congruent", 0.5)
    assert selector.combine_proxies(["unknown"]) == ("unknown", 0.0)
    # rule 6: the class most pairs show, ties to the more cautious; its share is the stated confidence
    assert selector.destination_class({"disjoint": 3, "congruent": 1}) == ("disjoint", 0.75)
    assert selector.destination_class({"disjoint": 2, "shared-core": 2, "unknown": 9}) == ("shared-core", 0.5)
    assert selector.destination_class({"unknown": 1}) == ("unknown", 0.0)
    assert [selector.BEHIND_ONE_NEIGHBOUR[c] for c in selector.CAUTION] == \
        ["shared-edge", "shared-edge", "shared-core", "congruent"]
    dest = selector.hint_fields("shared-core", None, None, None, None, None, 2, proxy=True, agreement=0.5, stated=0.5)
    assert (dest["confidence"], dest["primary_afi"], dest["mode"], dest["mptcp_flags_v4"]) == (0.5, 4, "backup", "subflow")
    # a destination answer saying disjoint that not every pair shows: held back to backup, saying why
    split = selector.hint_fields("disjoint", None, None, None, None, None, 2, proxy=True, agreement=0.75, stated=0.75)
    assert split["mode"] == "backup" and "only 75% of the month's pairs to the destination show" in split["rationale"]
    calm = selector.hint_fields("disjoint", 1.0, 1.0, 2, 2, 2, 2, proxy=True)
    low = selector.hint_fields("disjoint", 0.4, 1.0, 2, 2, 2, 2, proxy=True)
    assert (calm["mode"], calm["confidence"], low["mode"], low["confidence"]) == ("aggregate", 0.5, "backup", 0.2)
    assert "the confidence 0.20 is below 0.25" in low["rationale"]


@pytest.mark.slow
def test_addresses_longest_prefix_match(synth):
    data, _ = synth
    cfg = cfg_for(data)
    [h] = advise(cfg, "10", "10.0.100.7")["hints"]  # /24 of AS100 inside the /16 of AS200
    assert (h["prefix_v4"], h["dest_asn"], h["hint_class"]) == ("10.0.100.0/24", 100, "disjoint")
    [h] = advise(cfg, "10", "10.0.77.1")["hints"]  # only the /16 covers it
    assert (h["prefix_v4"], h["dest_asn"], h["hint_class"]) == ("10.0.0.0/16", 200, "shared-edge")
    [h] = advise(cfg, "10", "10.0.100.0/25")["hints"]  # a prefix: its longest cover
    assert h["prefix_v4"] == "10.0.100.0/24"
    [h] = advise(cfg, "10", "2001:db8:c8:1::5")["hints"]  # IPv6, AS200's /48
    assert (h["prefix_v6"], h["dest_asn"]) == ("2001:db8:c8::/48", 200)
    [h] = advise(cfg, "10", "10.9.0.1")["hints"]  # two origins: the most seen, with a note
    assert h["dest_asn"] == 300 and any("several origins" in n for n in h["notes"])
    [h] = advise(cfg, "10", ["10.0.100.1", "2001:db8:c8::1"])["hints"]  # split origins
    assert (h["dest_asn"], h["dest_asn_v6"]) == (100, 200)
    assert h["v4_path"] == [10, 1, 100] and h["v6_path"] == [10, 1, 4, 200]
    assert h["hint_class"] == "shared-edge" and any("different origins" in n for n in h["notes"])
    [h] = advise(cfg, "10", "192.168.1.1")["hints"]
    assert h["hint_class"] == "unknown" and "no IPv4 prefix" in h["reason"]


def test_endpoints_ranking_and_k(synth, tmp_path):
    data, _ = synth
    f = tmp_path / "endpoints.toml"
    f.write_text('[[endpoint]]\nname = "e100"\nipv4 = "10.0.100.1"\nipv6 = "2001:db8:64::1"\n'
                 '[[endpoint]]\nname = "e300"\nipv4 = "10.1.44.1"\nipv6 = "2001:db8:12c::1"\n'
                 '[[endpoint]]\nname = "e400"\nipv4 = "10.1.144.1"\nipv6 = "2001:db8:190::1"\n')
    ans = advise(cfg_for(data), "10", endpoints=f, k=3)
    assert [h["endpoint"] for h in ans["hints"]] == ["e100", "e300", "e400"]
    assert [h["hint_class"] for h in ans["hints"]] == ["disjoint", "shared-core", "congruent"]
    cands = [Candidate((h["endpoint"], a), tuple(h[f"v{a}_path"]), h[f"stability_v{a}"])
             for h in ans["hints"] for a in (4, 6)]
    want = brute(cands, 3, 10)
    sel = ans["selection"]
    assert [(r["endpoint"], r["afi"]) for r in sel["chosen"]] == [c.key for c in want]
    assert sel["shared_asns"] == sorted(selector.shared_among([c.path for c in want], 10))
    assert [(r["endpoint"], r["afi"]) for r in sel["ranking"]] == [c.key for c in rank(cands)]


# ------------------------------------------------------------------ CLI and bad input
def test_cli_advise(synth, capsys):
    data, _ = synth
    assert cli(["advise", "--data-dir", str(data), "--from", "10", "--to", "300", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["month"] == MONTH and out["hints"][0]["hint_class"] == "shared-core"
    assert cli(["advise", "--data-dir", str(data), "--from", "10", "--to", "100"]) == 0
    text = capsys.readouterr().out
    assert "disjoint" in text and selector.LOWER_BOUND in text


@pytest.mark.parametrize("args, message", [
    (["--from", "AS-1", "--to", "100"], "--from: expected an AS number"),
    (["--from", "4294967296", "--to", "100"], "--from: expected an AS number"),
    (["--from", "10", "--to", "10.0.0.0/33"], "--to: not an ASN, prefix or IP address"),
    (["--from", "10", "--to", "10.0.0.1/16"], "host bits set"),
    (["--from", "10", "--to", "300.1.1.1"], "--to: not an ASN, prefix or IP address"),
    (["--from", "10", "--to", "fe80::1%eth0"], "--to: not an ASN, prefix or IP address"),
    (["--from", "10", "--to", "0.0.0.0/0"], "default route"),
    (["--from", "10", "--to", "99999"], "does not appear on any path"),
    (["--from", "77", "--to", "100"], "--from: AS77 does not appear"),
    (["--from", "rrc99:10", "--to", "100"], "is not a vantage point"),
    (["--from", "10", "--to", "100", "--month", "2026-13"], "--month: expected YYYY-MM"),
    (["--from", "10", "--to", "100", "--month", "2025-01"], "month 2025-01: no published results"),
    (["--from", "10", "--to", "100", "--k", "2"], "--k: needs --endpoints"),
])
def test_bad_input_exit_2(synth, capsys, args, message):
    data, _ = synth
    assert cli(["advise", "--data-dir", str(data), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


@pytest.mark.parametrize("text, message", [
    ("[[endpoint]\n", "not valid TOML"),
    ('[[endpoint]]\nname = "a"\nipv4 = "10.0.0.1"\n', "ipv6 is required"),
    ('[[endpoint]]\nname = "a"\nipv4 = "2001:db8::1"\nipv6 = "2001:db8::1"\n', "is an IPv6 address"),
    ('[[endpoint]]\nname = "a;b"\nipv4 = "10.0.0.1"\nipv6 = "2001:db8::1"\n', "name must be"),
    ('[[endpoint]]\nname = "a"\nipv4 = "10.0.0.1"\nipv6 = "2001:db8::1"\nport = 1\n', "only the keys"),
    ("title = 1\n", "expected one or more [[endpoint]]"),
    # issue 58: the file's key and value as written (it said `--to: ::ffff:595:8f01`)
    ('[[endpoint]]\nname = "a"\nipv4 = "5.149.143.1"\nipv6 = "::ffff:5.149.143.1"\n',
     "endpoint a: ipv6 '::ffff:5.149.143.1' is an IPv4-mapped address (of 5.149.143.1)"),
])
def test_bad_endpoints_file_exit_2(synth, tmp_path, capsys, text, message):
    data, _ = synth
    f = tmp_path / "e.toml"
    f.write_text(text)
    assert cli(["advise", "--data-dir", str(data), "--from", "10", "--endpoints", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {f}") and message in err and "\n" not in err


def test_no_published_month(tmp_path, capsys):
    assert cli(["advise", "--data-dir", str(tmp_path), "--from", "10", "--to", "100"]) == 2
    assert "no published month" in capsys.readouterr().err


# ------------------------------------------------------------------ the real 2026-07 pair
@pytest.mark.slow
@needs_data
@pytest.mark.slow
def test_real_month_classes_equal_pairs(sample):
    """The real month as `congruency run` publishes it (its hints in the compare's commit):
    every hint's class is its pair's; advise gives the table's hint."""
    cfg, data = sample.cfg, sample.data
    assert resolve_month(cfg, None) == "2026-07"  # the latest published month
    rows = read_published(data, "hints", "2026-07").to_pylist()
    pairs = read_published(data, "pairs", "2026-07").to_pylist()
    assert len(rows) == len(pairs) == 2167
    by_key = {(r["vp_group"], r["vp_asn"], r["dest_asn"]): r for r in rows}
    for p in pairs:
        r = by_key[(p["vp_group"], p["vp_asn"], p["dest_asn"])]
        assert r["hint_class"] == expected_class(p)
        assert r["shared_asns"] == p["shared_asns"]
    counts = {c: sum(expected_class(p) == c for p in pairs) for c in selector.CLASSES if c != "unknown"}
    assert {c: sum(r["hint_class"] == c for r in rows) for c in counts} == counts
    # advise gives the same hint as the table, through the same method functions
    rnd = random.Random(7)
    for p in rnd.sample(pairs, 25):
        [h] = advise(cfg, f"{p['vp_group']}:{p['vp_asn']}", str(p["dest_asn"]))["hints"]
        r = by_key[(p["vp_group"], p["vp_asn"], p["dest_asn"])]
        for k in ("hint_class", "shared_asns", "v4_path", "v6_path", "confidence", "mode",
                  "mptcp_flags_v4", "mptcp_flags_v6", "mpt_weight_v4", "mpt_status_v6"):
            assert h[k] == r[k], (p, k)
    # an address of the sample: 8.8.8.0/24 is originated by AS15169
    [h] = advise(cfg, "6939", "8.8.8.8")["hints"]
    assert (h["prefix_v4"], h["dest_asn"]) == ("8.8.8.0/24", 15169)


def test_array_forms_equal_the_definitions():
    """The hints table's column-wise primary_afi and confidence equal the scalar definitions
    value for value, halfway cases of the 6-digit rounding included."""
    import numpy as np

    rng = np.random.default_rng(7)
    n = 20_000
    obs = rng.integers(1, 400, (2, n))
    s4, s6 = rng.integers(0, obs + 1) / obs
    s6[: n // 4] = s4[: n // 4]  # ties: the shorter path decides
    s4[n // 4: n // 2] = (2 * rng.integers(0, 1_000_000, n // 4) + 1) / 2e6  # c = x.xxxxxx5
    s6[n // 4: n // 2] = 1.0
    hops = rng.integers(1, 12, (2, n)).astype(float)
    hops[0, ::97] = np.nan  # a missing hop count counts as 0
    snaps, ms = rng.integers(0, 9, n), 8
    got_p = selector.primary_afi_array(s4, s6, hops[0], hops[1])
    got_c = selector.confidence_array(s4, s6, snaps, ms)
    h = [[None if np.isnan(v) else int(v) for v in row] for row in hops]
    want_p = [selector.primary_afi(a, b, c, d) for a, b, c, d in zip(s4.tolist(), s6.tolist(), *h)]
    want_c = [selector.confidence(a, b, int(s), ms) for a, b, s in zip(s4.tolist(), s6.tolist(), snaps)]
    assert got_p.tolist() == want_p
    assert got_c.tolist() == want_c


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
def test_advice_for_sources_that_are_no_vp_follows_the_proxy_rule(sample):
    """Issue 18: `advise --from 577 --to 812` said disjoint/aggregate though 3 of 5 proxies said
    shared-edge. Now: the most cautious class, recomputed here from the paths table, and no
    aggregate advice while the proxies (or, for the destination rule, the pairs) disagree."""
    import json

    paths = read_published(sample.data, "paths", "2026-07").to_pylist()
    pairs = read_published(sample.data, "pairs", "2026-07").to_pylist()
    rules = []
    for src in (577, 3356):
        r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "advise", "--data-dir", str(sample.data), "--from", str(src),
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
