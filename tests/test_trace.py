"""`congruency trace`: real RIPE Atlas results parsed (checked against their raw JSON, not
through the parser), warts written by the installed scamper read back, the stable-path rule
on hand-worked cases and on the real results, hops mapped to ASes over a published month whose
BGP paths are known, the families compared at AS and router level, and bad input as one line."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bgp_congruency.cli.main import main as cli
from bgp_congruency.dataplane import traces as T
from bgp_congruency.dataplane.stable import STABLE_SHARE, stable_path
from tests.support import hintdata
from tests.support.data import DATA, require_tool

ATLAS = DATA / "traceroute" / "atlas-traceroute-results.jsonl"
needs_atlas = pytest.mark.skipif(not ATLAS.is_file(), reason=f"shared traceroute data not found at {ATLAS}")


def _raw_hops(raw: dict) -> tuple:
    """The answering address of every packet per TTL, read straight off Atlas' JSON; a late
    reply (`late`: it answers an earlier probe) counts as no answer, as RIPE's parser has it."""
    per: dict[int, list] = {}
    for hop in raw["result"]:
        if "hop" not in hop:
            continue
        for pk in hop.get("result") or []:
            per.setdefault(hop["hop"], []).append(None if "late" in pk else pk.get("from"))
    last = max((t for t, a in per.items() if any(a)), default=0)
    return tuple(tuple(per.get(t) or (None,)) for t in range(1, last + 1))


@needs_atlas
def test_real_atlas_results_parse_as_their_json_says():
    raws = [json.loads(line) for line in ATLAS.read_text().splitlines() if line.strip()]
    got = T.read_atlas(ATLAS)
    assert len(got) == len(raws) == 19
    assert sum(t.family == 4 for t in got) == 13 and sum(t.family == 6 for t in got) == 6  # the data's README
    for t, raw in zip(got, raws):
        assert (t.family, t.dst) == (raw["af"], raw["dst_addr"])
        assert t.src == (raw.get("from") or raw.get("src_addr"))
        assert t.hops == _raw_hops(raw), t.origin
        assert t.method.startswith(raw["proto"].lower())


@needs_atlas
def test_real_repeated_traces_have_no_stable_path():
    """Probe 426 traced 121.244.76.25 five times in 2012 over routes that changed (8 to 13
    hops): no sequence holds 70% of them; the sequences agree on their first hops."""
    got = [t for t in T.read_atlas(ATLAS) if t.src == "216.66.30.82" and t.dst == "121.244.76.25"]
    assert len(got) == 5
    sp = stable_path([t.hops for t in got])
    assert sp.traces == 5 and sp.support == 1 and not sp.stable
    assert [h.addresses for h in sp.hops[:2]] == [("216.66.30.81",), ("64.71.128.50",)]


A, B, C, D = "192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"


def test_stable_path_hand_cases():
    seven = [((A,), (B,), (D,))] * 7
    other = [((A,), (C,), (D,))] * 3
    sp = stable_path(seven + other)
    assert (sp.support, sp.traces, sp.stable) == (7, 10, True) and sp.share == STABLE_SHARE
    assert [h.addresses for h in sp.hops] == [(A,), (B,), (D,)]
    sp = stable_path(seven[:6] + other + [((A,), (None,), (D,))])  # 6 + one with a lost probe at TTL 2
    assert (sp.support, sp.stable) == (7, True)  # `*` agrees with B
    sp = stable_path(seven[:6] + other + [((A,), (B,))])  # cut short: another path
    assert (sp.support, sp.stable) == (6, False)
    lb = stable_path([((A,), (B, C), (D,))] * 4 + [((A,), (C,), (D,))] * 4)  # load balancing at TTL 2
    assert lb.support == 8 and lb.hops[1].addresses == (C, B) and lb.hops[1].load_balanced
    assert not lb.hops[0].load_balanced
    assert stable_path([]) is None


def test_warts_written_by_the_installed_scamper(tmp_path):
    scamper = require_tool("scamper")
    require_tool("sc_warts2json")
    out = tmp_path / "lo.warts"
    subprocess.run([scamper, "-O", "warts", "-o", str(out), *["-I", "trace -P icmp-paris -q 1 -w 1 127.0.0.1"] * 3],
                   check=True, capture_output=True, timeout=120)
    got = T.read_warts(out)
    assert [(t.family, t.dst, t.hops) for t in got] == [(4, "127.0.0.1", (("127.0.0.1",),))] * 3
    assert stable_path([t.hops for t in got]).stable


# ------------------------------------------------------------------ against a published month
# The hand-made month of the selector's tests (tests/support/hintdata.py) with router
# prefixes of the source AS10 and the transit ASes 1 and 2 (seen from VP 20), so every hop
# of these traces maps to an AS. BGP: 10 -> 100 is [10, 1, 100] over IPv4 and [10, 2, 100]
# over IPv6 (disjoint); 10 -> 400 is [10, 1, 400] in both (congruent).
ROUTERS = {10: ("10.0.10.0/24", "2001:db8:a::/48"), 1: ("10.0.1.0/24", "2001:db8:1::/48"),
           2: ("10.0.2.0/24", "2001:db8:2::/48")}
H100 = ("10.0.100.1", "2001:db8:64::1")
H400 = ("10.1.144.1", "2001:db8:190::1")
V4_100 = ["10.0.10.1", "10.0.1.1", None, "10.0.1.2", H100[0]]       # AS10, AS1, *, AS1, AS100
V6_100 = ["2001:db8:a::1", "2001:db8:2::1", "2001:db8:64::1"]        # AS10, AS2, AS100
V4_400 = ["10.0.10.1", "10.0.1.1", "172.16.0.9", H400[0]]            # AS10, AS1, private, AS400
V6_400 = ["2001:db8:a::1", "2001:db8:1::1", "2001:db8:190::1"]       # AS10, AS1, AS400


def atlas_result(src: str, dst: str, hops: list, af: int) -> dict:
    """One traceroute in RIPE Atlas' result format (as the API returns them)."""
    return {"af": af, "dst_addr": dst, "from": src, "src_addr": src, "proto": "ICMP", "paris_id": 1, "msm_id": 1,
            "prb_id": 1, "timestamp": 1772323200, "endtime": 1772323210, "type": "traceroute", "fw": 5020,
            "size": 48, "result": [{"hop": i, "result": [{"x": "*"} if a is None else {"from": a, "rtt": 1.0 + i,
                                                                                        "size": 76, "ttl": 60}] * 3}
                                   for i, a in enumerate(hops, 1)]}


def publish_month(data: Path) -> Path:
    """The selector's hand-made month with the routers' prefixes, seen from VP 20."""
    extra = [hintdata.row(20, afi, [20, asn], ROUTERS[asn][afi == 6], t)
             for asn in ROUTERS for afi in (4, 6) for t in (hintdata.T0, hintdata.T1)]
    hintdata.publish_synthetic(data, extra_rows=extra)
    return data


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    return publish_month(tmp_path_factory.mktemp("trace-month"))


def write_atlas(path: Path, results: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in results))
    return path


def run(capsys, *args) -> tuple[int, str, str]:
    rc = cli(["trace", *args])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.slow
def test_disjoint_destination_equals_its_bgp_paths(month, tmp_path, capsys):
    f = write_atlas(tmp_path / "t.jsonl", [atlas_result("10.0.10.9", H100[0], V4_100, 4)] * 8
                    + [atlas_result("10.0.10.9", H100[0], V4_100[:1] + ["10.0.2.1"] + V4_100[2:], 4)] * 2
                    + [atlas_result("2001:db8:a::9", H100[1], V6_100, 6)] * 5)
    rc, out, err = run(capsys, "--data-dir", str(month), "--atlas", str(f), "--json")
    assert rc == 0, err
    a = json.loads(out)
    assert a["month"] == hintdata.MONTH and a["source_asn"] == 10  # the AS of the traces' source address
    v4, v6 = a["families"]["4"], a["families"]["6"]
    assert (v4["traces"], v4["stable"], v4["stable_share"]) == (10, True, 0.8)
    assert [h["asn"] for h in v4["hops"]] == [10, 1, None, 1, 100] and v4["hops"][2]["kind"] == "no answer"
    assert v4["hops"][1]["prefix"] == "10.0.1.0/24"
    assert v4["as_path"] == v4["bgp_path"] == [10, 1, 100] and v4["agreement"] == "equal"
    assert v6["as_path"] == v6["bgp_path"] == [10, 2, 100] and v6["agreement"] == "equal"
    c = a["comparison"]
    assert (c["as_level"], c["shared_asns"]) == ("disjoint", [])
    assert c["router_level"]["aliases_known"] is False and "lower bound" in c["router_level"]["note"]
    assert c["router_level"]["disjoint"] is None  # unknown without alias data
    assert a["advise"]["hint_class"] == "disjoint" and a["advise"]["mode"] == "aggregate"
    # the source's own router answers in both families: with aliases it is the one shared router
    al = tmp_path / "aliases.txt"
    al.write_text("10.0.10.1 2001:db8:a::1  # the first hop\n10.0.1.1 10.0.1.2\n")
    rc, out, err = run(capsys, "--data-dir", str(month), "--atlas", str(f), "--aliases", str(al), "--json")
    r = json.loads(out)["comparison"]["router_level"]
    assert rc == 0 and r["shared_routers"] == [["10.0.10.1", "2001:db8:a::1"]] and not r["disjoint"]
    rc, out, err = run(capsys, "--data-dir", str(month), "--atlas", str(f))
    assert rc == 0 and "AS path 10 1 100; BGP 10 1 100: equal" in out
    assert "IPv4 vs IPv6: AS level disjoint; router level 0 shared router(s)" in out


def test_congruent_destination_and_a_private_hop(month, tmp_path, capsys):
    f = write_atlas(tmp_path / "t.jsonl", [atlas_result("10.0.10.9", H400[0], V4_400, 4)] * 3
                    + [atlas_result("2001:db8:a::9", H400[1], V6_400, 6)] * 3)
    rc, out, err = run(capsys, "--data-dir", str(month), "--atlas", str(f), "--from", "10", "--json")
    assert rc == 0, err
    a = json.loads(out)
    v4 = a["families"]["4"]
    assert v4["hops"][2]["kind"] == "private" and v4["hops"][2]["asn"] is None
    assert v4["as_path"] == [10, 1, 400] == a["families"]["6"]["as_path"] and v4["agreement"] == "equal"
    assert (a["comparison"]["as_level"], a["comparison"]["shared_asns"]) == ("congruent", [1])
    assert a["advise"]["hint_class"] == "congruent"


def test_a_trace_that_leaves_the_bgp_path_differs(month, tmp_path, capsys):
    hops = ["10.0.10.1", "10.0.2.1", H100[0]]  # through AS2 over IPv4, where BGP says AS1
    f = write_atlas(tmp_path / "t.jsonl", [atlas_result("10.0.10.9", H100[0], hops, 4)] * 3)
    rc, out, err = run(capsys, "--data-dir", str(month), "--atlas", str(f), "--json")
    a = json.loads(out)
    assert rc == 0 and a["families"]["4"]["as_path"] == [10, 2, 100] and a["families"]["4"]["agreement"] == "differs"
    assert a["comparison"]["as_level"] is None and a["missing"][0].startswith("IPv6: no traceroute toward")
    rc, out, err = run(capsys, "--data-dir", str(month), "--atlas", str(f))
    assert rc == 0 and "IPv6: no traceroute toward the destination's IPv6 address" in out


@pytest.mark.slow
def test_stored_runs_are_a_table_the_published_tables_join(tmp_path, capsys):
    from bgp_congruency.lake import published

    data = publish_month(tmp_path / "data")  # its own: the traces are published into it
    f = write_atlas(tmp_path / "t.jsonl", [atlas_result("10.0.10.9", H100[0], V4_100, 4)] * 3
                    + [atlas_result("2001:db8:a::9", H100[1], V6_100, 6)] * 3)
    for _ in range(2):
        rc, out, err = run(capsys, "--data-dir", str(data), "--atlas", str(f), "--store")
        assert rc == 0 and "stored in " in err, err
    files = published.files(data, ["traces"], hintdata.MONTH)["traces"]  # appended: a publish each
    assert len(files) == 2 and len({Path(f).parent for f in files}) == 2
    capsys.readouterr()
    rc = cli(["query", "--data-dir", str(data), "--format", "json", "--sql",
              "SELECT t.afi, t.as_path, t.hop_addresses, t.hop_asns, t.agreement, t.as_level, t.shared_routers, "
              "p.congruent FROM traces t JOIN pairs p ON p.month = t.month AND p.vp_asn = t.source_asn "
              "AND p.dest_asn = t.dest_asn ORDER BY t.traced_at, t.afi"])
    out = capsys.readouterr().out
    got = [json.loads(line) for line in out.splitlines()] if not out.lstrip().startswith("[") else json.loads(out)
    assert rc == 0 and len(got) == 4
    v4, v6 = (next(r for r in got if r["afi"] == f) for f in (4, 6))
    assert [r["afi"] for r in got].count(4) == 2 and v4["as_path"] == [10, 1, 100] and v6["as_path"] == [10, 2, 100]
    assert v4["hop_addresses"] == ["10.0.10.1", "10.0.1.1", "", "10.0.1.2", H100[0]]
    assert v4["hop_asns"] == [10, 1, None, 1, 100] and v4["agreement"] == "equal"
    assert (v4["as_level"], v4["shared_routers"], v4["congruent"]) == ("disjoint", 0, False)


@pytest.mark.parametrize("content, message", [
    ("", "empty (no RIPE Atlas traceroute results)"),
    ('{"af": 4, "type": "traceroute", "dst_addr": "10.0.100.1", "resu', "not complete JSON"),
    ('{"af": 4, "type": "ping", "dst_addr": "10.0.100.1", "result": []}\n', "a 'ping' result, not a traceroute"),
    # one result a line, the seventh cut: its own line is named (issue 46: "line 1")
    ("".join('{"af": 4, "type": "ping"}\n' for _ in range(6)) + '{"af": 4, "ty', "line 7 is not complete JSON"),
    ('{"af": 4, "dst_addr": "10.0.100.1"}\n', "result 1: a JSON object without a RIPE Atlas result type, not a traceroute"),
    ("[1, 2]", "result 1: a JSON int, not a traceroute"),
])
def test_bad_atlas_file_is_one_line(month, tmp_path, capsys, content, message):
    f = tmp_path / "bad.json"
    f.write_text(content)
    rc, out, err = run(capsys, "--data-dir", str(month), "--atlas", str(f))
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert str(f) in err and message in err


@pytest.mark.slow
def test_bad_warts_and_missing_scamper(month, tmp_path, capsys):
    empty, text = tmp_path / "empty.warts", tmp_path / "text.warts"
    empty.write_bytes(b"")
    text.write_text("not warts\n")
    for f, message in ((empty, "empty (no warts records)"), (text, "not a warts file")):
        rc, out, err = run(capsys, "--data-dir", str(month), "--warts", str(f))
        assert rc == 2 and len(err.strip().splitlines()) == 1 and str(f) in err and message in err
    if shutil.which("scamper"):  # a truncated file, as the installed scamper writes it
        full = tmp_path / "lo.warts"
        subprocess.run(["scamper", "-O", "warts", "-o", str(full), "-c", "trace -P icmp-paris -q 1 -w 1",
                        "-i", "127.0.0.1"], check=True, capture_output=True, timeout=60)
        cut = tmp_path / "cut.warts"
        cut.write_bytes(full.read_bytes()[:100])
        rc, out, err = run(capsys, "--data-dir", str(month), "--warts", str(cut))
        assert rc == 2 and "truncated or corrupt warts file" in err and len(err.strip().splitlines()) == 1
    # scamper missing: a PATH without it
    bindir = Path(sys.executable).parent
    r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "trace", "--data-dir", str(month),
                        "--live", "10.0.100.1"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PATH": str(bindir)})
    assert r.returncode == 2 and r.stderr.strip().endswith("scamper is not installed: apt-get install scamper "
                                                            "(Debian), or give --atlas/--warts files")


def test_a_family_cut_short_or_silent_is_not_compared(month, tmp_path, capsys):
    """IPv4 stops inside AS1 (the destination never answers); IPv6 got no answer at all: no
    stable IPv6 path, and no AS-level comparison from paths that are not whole."""
    f = write_atlas(tmp_path / "t.jsonl", [atlas_result("10.0.10.9", H100[0], V4_100[:2], 4)] * 3
                    + [atlas_result("2001:db8:a::9", H100[1], [None, None, None], 6)] * 3)
    rc, out, err = run(capsys, "--data-dir", str(month), "--atlas", str(f), "--json")
    a = json.loads(out)
    v4, v6 = a["families"]["4"], a["families"]["6"]
    assert rc == 0 and v4["stable"] and not v4["reached"] and v4["agreement"] == "consistent"
    assert not v6["stable"] and v6["hops"] == [] and v6["agreement"] == "no stable path"
    assert a["comparison"] == {"as_level": None, "shared_asns": None, "router_level": None}
    assert any("IPv4: the stable path does not reach 10.0.100.1" in m for m in a["missing"])


def test_traces_of_several_sources_are_not_merged(month, tmp_path, capsys):
    f = write_atlas(tmp_path / "t.jsonl", [atlas_result("10.0.10.9", H100[0], V4_100, 4)] * 3
                    + [atlas_result("10.0.10.8", H100[0], V4_100[:1] + ["10.0.2.1"] + V4_100[2:], 4)] * 3)
    rc, out, err = run(capsys, "--data-dir", str(month), "--atlas", str(f))
    assert rc == 2 and "IPv4 traces to 10.0.100.1 come from 2 sources (10.0.10.8, 10.0.10.9)" in err
    rc, out, err = run(capsys, "--data-dir", str(month), "--atlas", str(f), "--source", "10.0.10.8", "--from", "AS10",
                       "--json")
    v4 = json.loads(out)["families"]["4"]
    assert rc == 0 and v4["traces"] == 3 and v4["as_path"] == [10, 2, 1, 100]


@pytest.mark.parametrize("args, message", [
    (["--to", "not-an-ip"], "--to: 'not-an-ip' is not an IP address"),
    (["--from", "AS10x"], "--from"),
    (["--aliases", "BINARY"], "--aliases"),
])
def test_bad_arguments_are_one_line(month, tmp_path, capsys, args, message):
    f = write_atlas(tmp_path / "t.jsonl", [atlas_result("10.0.10.9", H100[0], V4_100, 4)])
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00garbage")
    args = [str(tmp_path / "bin.txt") if a == "BINARY" else a for a in args]
    rc, out, err = run(capsys, "--data-dir", str(month), "--atlas", str(f), *args)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and message in err, err


def test_several_destinations_need_to(month, tmp_path, capsys):
    f = write_atlas(tmp_path / "t.jsonl", [atlas_result("10.0.10.9", H100[0], V4_100, 4),
                                           atlas_result("10.0.10.9", H400[0], V4_400, 4)])
    rc, out, err = run(capsys, "--data-dir", str(month), "--atlas", str(f))
    assert rc == 2 and "IPv4 traces go to 2 destinations" in err and "--to ADDR" in err
    rc, out, err = run(capsys, "--data-dir", str(month), "--atlas", str(f), "--to", H400[0], "--json")
    assert rc == 0 and json.loads(out)["families"]["4"]["destination"] == H400[0]


# ------------------------------------------------------------------ a real testbed
# Namespaces with forwarding routers whose addresses come from the month's prefixes: the
# source host h (AS10), router r1 (AS1), router r2 (AS2), destination host d. Point-to-point
# links (`peer`) let each end keep its own AS's address. Disjoint: IPv4 h-r1-d, IPv6 h-r2-d
# toward AS100's host (BGP: [10, 1, 100] and [10, 2, 100]); shared: both families through r1
# toward AS400's host (BGP: [10, 1, 400] twice).
def _testbed(ns: dict, shared: bool) -> tuple[tuple[str, str], list[list[str]]]:
    """Builds the topology; returns the destination's two addresses and the routers' aliases."""
    from tests.support.netns import p2p, sh

    h, r1, r2, d = ns["h"], ns["r1"], ns["r2"], ns["d"]
    dst = H400 if shared else H100
    v6_router, v6_asn_addr = (r1, "2001:db8:1::") if shared else (r2, "2001:db8:2::")
    p2p(h, "h4", "10.0.10.1", r1, "r1h", "10.0.1.1")
    p2p(r1, "r1d", "10.0.1.2", d, "d4", dst[0])
    p2p(h, "h6", "2001:db8:a::1", v6_router, "v6h", v6_asn_addr + "1")
    p2p(v6_router, "v6d", v6_asn_addr + "2", d, "d6", dst[1])
    for r in (r1, r2):
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=r)
        sh("sysctl", "-qw", "net.ipv6.conf.all.forwarding=1", ns=r)
    for ns_, via, dev, to in ((h, "10.0.1.1", "h4", "default"), (h, v6_asn_addr + "1", "h6", "default"),
                              (r1, dst[0], "r1d", dst[0]), (v6_router, dst[1], "v6d", dst[1]),
                              (d, "10.0.1.2", "d4", "default"), (d, v6_asn_addr + "2", "d6", "default")):
        sh("ip", "-6" if ":" in via else "-4", "route", "replace", to, "via", via, "dev", dev, "onlink", ns=ns_)
    aliases = [["10.0.1.1", "10.0.1.2"] + (["2001:db8:1::1", "2001:db8:1::2"] if shared else []),
               ["2001:db8:2::1", "2001:db8:2::2"]]
    return dst, aliases


@pytest.mark.kernel
@pytest.mark.parametrize("shared", [False, True], ids=["disjoint", "shared"])
def test_live_scamper_in_a_namespace_testbed(month, tmp_path, shared):
    from tests.support.netns import Netns

    require_tool("scamper")
    if os.geteuid() != 0:
        pytest.skip("needs root (ip netns)")
    with Netns("h", "r1", "r2", "d", prefix="tr") as ns:
        dst, aliases = _testbed(ns, shared)
        al = tmp_path / "aliases.txt"
        al.write_text("".join(" ".join(r) + "\n" for r in aliases))
        r = subprocess.run(["ip", "netns", "exec", ns["h"], sys.executable, "-m", "bgp_congruency.cli.main", "trace",
                            "--data-dir", str(month), "--live", dst[0], "--live", dst[1], "--count", "3",
                            "--from", "10", "--aliases", str(al), "--keep", str(tmp_path / "live.warts"), "--json"],
                           capture_output=True, text=True, timeout=400)  # above scamper's own bound (300 s)
    assert r.returncode == 0, r.stderr
    a = json.loads(r.stdout)
    v4, v6 = a["families"]["4"], a["families"]["6"]
    assert v4["traces"] == v6["traces"] == 3 and v4["stable"] and v6["stable"]
    assert [h["addresses"] for h in v4["hops"]] == [["10.0.1.1"], [dst[0]]]
    want6 = ["2001:db8:1::1"] if shared else ["2001:db8:2::1"]
    assert [h["addresses"] for h in v6["hops"]] == [want6, [dst[1]]]
    assert v4["agreement"] == v6["agreement"] == "equal"  # the AS paths are the synthetic month's BGP paths
    c = a["comparison"]
    if shared:
        assert v4["as_path"] == v6["as_path"] == [10, 1, 400]
        assert (c["as_level"], c["shared_asns"]) == ("congruent", [1]) and a["advise"]["hint_class"] == "congruent"
        assert c["router_level"]["shared_routers"] == [["10.0.1.1", "2001:db8:1::1"]]
    else:
        assert (v4["as_path"], v6["as_path"]) == ([10, 1, 100], [10, 2, 100])
        assert c["as_level"] == "disjoint" and a["advise"]["hint_class"] == "disjoint"
        assert c["router_level"]["shared_routers"] == [] and c["router_level"]["disjoint"]
    assert len(T.read_warts(tmp_path / "live.warts")) == 6  # --keep kept the run's warts
