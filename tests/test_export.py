"""Exports: JSON Lines (versioned schema, equal to the hints table), the MPT connection file
(parsed back with configparser to exactly the hints' paths, weights and statuses), the MPTCP
script's text, and hostile values that must never reach a script or a config file."""
from __future__ import annotations

import configparser
import json
import re
import subprocess
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from bgp_congruency.cli.main import main as cli
from bgp_congruency.common.config import load
from bgp_congruency.common.tables import HINTS
from bgp_congruency.selector.advice import advise
from bgp_congruency.selector.exports import jsonl, mpt, mptcp
from bgp_congruency.selector.exports import validate as v
from bgp_congruency.selector.exports.local import Interface
from bgp_congruency.selector.table import publish as publish_hints
from tests.support import hintdata
from tests.support.cli import congruency
from tests.support.hintdata import MONTH

IFACES = ["--interface", "eth0=192.0.2.10@192.0.2.1", "--interface", "eth1=2001:db8:ff::10@2001:db8:ff::1"]
TUNNEL = ["--tunnel-local", "10.99.0.1", "--tunnel-remote", "10.99.0.2"]
HOST100 = ["--to", "10.0.100.1", "--to", "2001:db8:64::1"]  # disjoint from AS10
HOST300 = ["--to", "10.1.44.1", "--to", "2001:db8:12c::1"]  # shared-core from AS10


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("export-synth")
    hintdata.publish_synthetic(d)
    return d


def run(data: Path, *args) -> int:
    return cli([args[0], "--data-dir", str(data), *args[1:]])


def advise_one(data, *to):
    [h] = advise(load().with_overrides(data_dir=data), "10", list(to))["hints"]
    return h


# ------------------------------------------------------------------ JSON Lines
@pytest.mark.slow
def test_jsonl_month_equals_hints_table(data, tmp_path, monkeypatch):
    from bgp_congruency.selector import table as htable

    cfg = load().with_overrides(data_dir=data)
    built = tmp_path / "built.jsonl"  # before publishing: built on the fly
    limits, build = [], htable.build
    monkeypatch.setattr(htable, "build", lambda con, *a: limits.append(
        con.execute("SELECT current_setting('memory_limit')").fetchone()[0]) or build(con, *a))
    assert run(data, "export", "--format", "jsonl", "--out", str(built)) == 0
    # built with the hints' share of the memory limit, as the compare's hints are: what DuckDB
    # shows for memory_bytes(cfg), not the config's whole limit
    share = duckdb.connect()
    share.execute(f"SET memory_limit = '{htable.memory_bytes(cfg) // 2**20}MiB'")
    assert limits == [share.execute("SELECT current_setting('memory_limit')").fetchone()[0]]
    share.close()
    monkeypatch.undo()
    publish_hints(cfg, MONTH)
    table = pq.read_table(data / "hints" / f"month={MONTH}").to_pylist()
    out = jsonl.write(cfg, tmp_path / "sub" / "hints.jsonl", MONTH)
    got = list(jsonl.read(out))
    assert [list(g) for g in got] == [["schema", *HINTS.names]] * len(table)
    assert [{k: g[k] for k in HINTS.names} for g in got] == table
    assert {g["schema"] for g in got} == {jsonl.SCHEMA}
    assert built.read_text() == out.read_text()
    assert sorted(p.name for p in out.parent.iterdir()) == ["hints.jsonl"]  # no temp file left


@pytest.mark.slow
def test_jsonl_batches_render_what_line_gives(data, tmp_path, monkeypatch):
    """A month's table is rendered a batch at a time by DuckDB (selector/exports/jsonl.py); `line` is
    the definition. Every row of the published table, and rows with what a renderer gets
    wrong (quotes, backslashes, control and non-ASCII characters, U+2028, tiny and huge
    floats, nulls, empty lists, 32-bit ASNs), give the same objects with the same keys in the
    same order, into a text buffer and into a file (whose buffer takes the bytes)."""
    import io

    import pyarrow as pa

    cfg = load().with_overrides(data_dir=data)
    publish_hints(cfg, MONTH)
    rows = pq.read_table(data / "hints" / f"month={MONTH}").to_pylist()
    odd = dict(rows[0], notes=['a "quoted" \\ path\n\ttab\r', "Zürich → 東京", "\x00\x1f", "\u2028\x85"],
               shared_asns=[], confidence=1e-7, stability_v4=1 / 3, stability_v6=None, source_asn=4_294_967_295,
               v4_path=[4_294_967_295, 1], reason=None, proxies=[])
    rows = rows + [odd, dict(odd, confidence=1e300, notes=[]), dict(odd, confidence=0.0)]
    table = pa.Table.from_pylist(rows, schema=HINTS)
    want = [json.loads(jsonl.line(r)) for r in rows]
    buf = io.StringIO()
    assert jsonl.dump(table, buf) == len(rows)
    text = buf.getvalue()
    assert text.endswith("\n") and text.count("\n") == len(rows)
    got = [json.loads(x) for x in text.split("\n")[:-1]]
    assert got == want and [list(g) for g in got] == [list(w) for w in want]
    out = jsonl.write(table, tmp_path / "odd.jsonl")
    assert out.read_bytes() == text.encode("utf-8")  # the raw path: the same bytes
    # Batches cut into slices (offsets into a registered batch), order kept across them.
    monkeypatch.setattr(jsonl, "BATCH", 1000)
    n = len(rows)
    big = pa.concat_tables([table.set_column(1, "source_asn", pa.array(range(i * n, (i + 1) * n), pa.int64()))
                            for i in range(4000 // n + 2)])
    reader = pa.RecordBatchReader.from_batches(HINTS, big.combine_chunks().to_batches())  # one big batch
    path = tmp_path / "big.jsonl"
    with open(path, "w", encoding="utf-8") as fp:
        assert jsonl.dump(reader, fp) == big.num_rows > 3 * 1000
    assert [json.loads(x)["source_asn"] for x in path.read_text("utf-8").split("\n")[:-1]] == \
        big.column("source_asn").to_pylist()
    # A batch with a column HINTS does not have is refused with one line, like a dict row.
    with pytest.raises(ValueError, match=r"unexpected \['extra'\]"):
        jsonl.dump(table.append_column("extra", pa.array([1] * len(rows))), io.StringIO())


@pytest.mark.parametrize("kind", ["string", "large_string", "string_view"])
def test_jsonl_joined_strings_of_a_sliced_array(kind):
    import pyarrow as pa

    arr = pa.array(["a\n", "", "bé\n", None, "cd\n", "e\n"], getattr(pa, kind)())
    assert bytes(jsonl._joined(arr)) == "a\nbé\ncd\ne\n".encode()
    assert bytes(jsonl._joined(arr.slice(2, 3))) == "bé\ncd\n".encode()
    assert bytes(jsonl._joined(arr.slice(4, 0))) == b""


def test_jsonl_of_a_question_with_endpoints(data, tmp_path, capsys):
    f = tmp_path / "ep.toml"
    f.write_text('[[endpoint]]\nname = "e100"\nipv4 = "10.0.100.1"\nipv6 = "2001:db8:64::1"\n'
                 '[[endpoint]]\nname = "e300"\nipv4 = "10.1.44.1"\nipv6 = "2001:db8:12c::1"\n')
    assert run(data, "export", "--format", "jsonl", "--from", "10", "--endpoints", str(f), "--k", "2") == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    ans = advise(load().with_overrides(data_dir=data), "10", endpoints=f, k=2)
    assert [x["endpoint"] for x in lines] == ["e100", "e300"]
    chosen = {(r["endpoint"], r["afi"]) for r in ans["selection"]["chosen"]}
    assert [x["selected"] for x in lines] == [sorted(a for e, a in chosen if e == n) for n in ("e100", "e300")]
    assert [{k: x[k] for k in HINTS.names} for x in lines] == [{k: h[k] for k in HINTS.names} for h in ans["hints"]]
    assert [(x["rule"], x["rule_accuracy"]) for x in lines] == [("vp", None)] * 2  # advise's own keys, kept


# ------------------------------------------------------------------ MPT
def mpt_sections(text: str) -> dict:
    cp = configparser.ConfigParser(interpolation=None)
    cp.read_string(text)
    return {s: dict(cp[s]) for s in cp.sections()}


def expected_paths(h: dict, chosen=None) -> list[dict]:
    local = {4: ("eth0", "192.0.2.10", "192.0.2.1"), 6: ("eth1", "2001:db8:ff::10", "2001:db8:ff::1")}
    out = []
    for afi in (4, 6):
        if h[f"mpt_weight_v{afi}"] is None or (chosen is not None and (h["endpoint"], afi) not in chosen):
            continue
        name, addr, gw = local[afi]
        out.append(dict(interface_name=name, ip_ver=str(afi), public_ipaddr=addr, remote_ipaddr=h[f"addr_v{afi}"],
                        gw_ipaddr=gw, weight_out=str(h[f"mpt_weight_v{afi}"]), keepalive_time="5",
                        dead_time="11", status=str(h[f"mpt_status_v{afi}"])))
    return out


@pytest.mark.parametrize("host, cls, statuses", [(HOST100, "disjoint", ["0", "0"]),
                                                 (HOST300, "shared-core", ["0", "255"])])
def test_mpt_file_parses_back_to_the_hint(data, tmp_path, host, cls, statuses):
    out = tmp_path / "conn.conf"
    assert run(data, "export", "--format", "mpt", "--from", "10", *host, *IFACES, *TUNNEL, "--out", str(out)) == 0
    h = advise_one(data, host[1], host[3])
    assert h["hint_class"] == cls
    sec = mpt_sections(out.read_text())
    assert sec["connection"] == {"name": "congruency", "ip_ver": "4", "ip_local": "10.99.0.1", "port_local": "65050",
                                 "ip_remote": "10.99.0.2", "port_remote": "65050", "path_count": "2",
                                 "network_count": "0"}
    paths = [sec[f"path_{n}"] for n in range(2)]
    assert paths == expected_paths(h)
    assert [p["status"] for p in paths] == statuses
    assert set(sec) == {"connection", "path_0", "path_1"}


@pytest.mark.slow
def test_mpt_with_chosen_endpoints(data, tmp_path, capsys):
    """One connection file per remote peer, each with that peer's tunnel address and only
    its chosen paths; more than one peer needs --out."""
    f = tmp_path / "ep.toml"
    f.write_text('[[endpoint]]\nname = "e100"\nipv4 = "10.0.100.1"\nipv6 = "2001:db8:64::1"\ntunnel = "fd99::100"\n'
                 '[[endpoint]]\nname = "e400"\nipv4 = "10.1.144.1"\nipv6 = "2001:db8:190::1"\ntunnel = "fd99::400"\n')
    out = tmp_path / "conn.conf"
    ask = ["export", "--format", "mpt", "--from", "10", "--endpoints", str(f), "--k", "2", *IFACES,
           "--tunnel-local", "fd99::1", "--tunnel-port", "4000"]
    assert run(data, *ask) == 2
    assert capsys.readouterr().err.startswith("error: --out FILE: the chosen paths go to 2 peers (e100, e400)")
    assert run(data, *ask, "--out", str(out)) == 0
    ans = advise(load().with_overrides(data_dir=data), "10", endpoints=f, k=2)
    chosen = {(r["endpoint"], r["afi"]) for r in ans["selection"]["chosen"]}
    assert sorted(p.name for p in tmp_path.glob("conn*")) == ["conn-e100.conf", "conn-e400.conf"]
    for h in ans["hints"]:
        sec = mpt_sections((tmp_path / f"conn-{h['endpoint']}.conf").read_text())
        want = expected_paths(h, chosen)
        assert sec["connection"] == {"name": h["endpoint"], "ip_ver": "6", "ip_local": "fd99::1", "port_local": "4000",
                                     "ip_remote": f"fd99::{h['endpoint'][1:]}", "port_remote": "4000",
                                     "path_count": str(len(want)), "network_count": "0"}
        assert [sec[f"path_{n}"] for n in range(len(want))] == want and len(want) == 1
    assert not (tmp_path / "conn.conf").exists()


@pytest.mark.slow
def test_mpt_needs_addresses_and_gateways(data, tmp_path, capsys):
    out = tmp_path / "c.conf"
    assert run(data, "export", "--format", "mpt", "--from", "10", "--to", "100", *IFACES, "--out", str(out)) == 2
    assert "MPT needs the tunnel endpoint's addresses" in capsys.readouterr().err
    assert run(data, "export", "--format", "mpt", "--from", "10", *HOST100, "--interface", "eth0=192.0.2.10",
               "--interface", "eth1=2001:db8:ff::10", "--out", str(out)) == 2
    assert "needs its gateway" in capsys.readouterr().err
    for tunnel, err in (([], "error: --tunnel-local: MPT needs this side's tunnel address\n"),
                        (["--tunnel-local", "10.99.0.1"],
                         "error: the --to host: MPT needs its tunnel address (--tunnel-remote ADDR)\n"),
                        (["--tunnel-local", "10.99.0.1", "--tunnel-remote", "fd99::2"],
                         "error: the --to host: tunnel address: expected an IPv4 address, got 'fd99::2'\n")):
        assert run(data, "export", "--format", "mpt", "--from", "10", *HOST100, *IFACES, *tunnel, "--out", str(out)) == 2
        assert capsys.readouterr().err == err
    assert not out.exists()


# ------------------------------------------------------------------ MPTCP script text
@pytest.mark.slow
def test_mptcp_script_text(data, tmp_path):
    out = tmp_path / "mptcp.sh"
    assert run(data, "export", "--format", "mptcp", "--from", "10", "--to", "100", *IFACES, "--out", str(out)) == 0
    text = out.read_text()
    assert subprocess.run(["sh", "-n", str(out)]).returncode == 0
    cmds = [x for x in text.splitlines() if x and not x.lstrip().startswith("#")]
    prelude = [x for x in mptcp._PRELUDE.splitlines() if not x.lstrip().startswith("#")]
    assert cmds == ["set -uf", *prelude,
                    "need_addr eth0 192.0.2.10", "need_addr eth1 2001:db8:ff::10",
                    "if ! { sysctl -q -w net.mptcp.enabled=1 &&", "     ip mptcp endpoint flush &&",
                    "     ip mptcp limits set subflow 4 add_addr_accepted 4 &&",
                    "     ip mptcp endpoint add 192.0.2.10 dev eth0 id 1 subflow fullmesh &&",
                    "     ip mptcp endpoint add 2001:db8:ff::10 dev eth1 id 2 subflow fullmesh; }; then",
                    "  restore",
                    '  fail "applying the MPTCP configuration failed; the endpoints, limits and net.mptcp.enabled '
                    'found before were restored"', "fi",
                    "echo 'MPTCP client configured: endpoints 192.0.2.10 (subflow fullmesh), 2001:db8:ff::10 "
                    "(subflow fullmesh); limits subflow 4 add_addr_accepted 4.'",
                    "echo 'Connect to a host of AS100 that runs the --role server script.'",
                    "echo 'Applications need MPTCP sockets: run them under mptcpize (mptcpize run CMD), or open "
                    "socket(AF_INET6, SOCK_STREAM, IPPROTO_MPTCP): an AF_INET6 socket carries IPv4 and IPv6 "
                    "subflows in one connection.'"]
    assert out.stat().st_mode & 0o111
    assert "OLIA" in text and "out-of-tree" in text and "lower bound" in text
    server = mptcp.render(advise_one(data, "100"), [Interface("veth0", "10.1.0.2"), Interface("veth1", "2001:db8:1::2")],
                          role="server")
    lines = [x.strip() for x in server.splitlines()]
    assert "ip mptcp endpoint add 10.1.0.2 dev veth0 id 1 signal &&" in lines
    assert "ip mptcp endpoint add 2001:db8:1::2 dev veth1 id 2 signal; }; then" in lines
    assert lines[-1].startswith("echo 'Servers need MPTCP listening sockets: run them under mptcpize")
    backup = mptcp.endpoints_for(advise_one(data, "300"), [Interface("a", "192.0.2.1"), Interface("b", "2001:db8::1")])
    assert [e.flags for e in backup.endpoints] == ["subflow", "subflow backup"]
    congruent = mptcp.endpoints_for(advise_one(data, "400"), [Interface("a", "192.0.2.1"), Interface("b", "2001:db8::1")])
    assert [(e.address, e.flags) for e in congruent.endpoints] == [("192.0.2.1", "subflow")]
    assert (congruent.subflows, congruent.add_addr_accepted) == (2, 2)


# ------------------------------------------------------------------ hostile values
CANARY = "/tmp/congruency-export-canary"
HOSTILE_IFACES = [
    f"eth0;touch {CANARY}=192.0.2.10",
    f"$(touch {CANARY})=192.0.2.10",
    f"`touch {CANARY}`=192.0.2.10",
    "eth0\nip link del lo=192.0.2.10",
    "averyveryverylongname=192.0.2.10",  # 21 bytes: Linux allows 15
    "eth 0=192.0.2.10",
    "-eth0=192.0.2.10",
    "..=192.0.2.10",
    f"eth0=192.0.2.10;touch {CANARY}",
    "eth0=192.0.2.10\n[path_9]",
    "eth0=192.0.2.10 dev lo",
    "eth0=fe80::1%eth0",
    "eth0=0.0.0.0",
    "eth0=192.0.2.300",
    f"eth0=192.0.2.10@192.0.2.1$(touch {CANARY})",
    "eth0=192.0.2.10@2001:db8::1",  # gateway of the other family
    "eth0=255.255.255.255",  # broadcast
    "eth0=127.0.0.1",  # loopback
    "eth0=::1",
    "eth0=fe80::1",  # link-local: would need a scope
    "eth0=169.254.1.1",
    "eth0=224.0.0.1",  # multicast
    "eth0=::ffff:192.0.2.10",  # IPv4-mapped: give the IPv4 address
    "eth0=192.0.2.10/24@198.51.100.1",  # gateway outside the subnet
    "eth0=192.0.2.10/33",
]


@pytest.mark.parametrize("fmt", ["mptcp", "mpt"])
@pytest.mark.parametrize("iface", HOSTILE_IFACES)
def test_hostile_interfaces_are_rejected(data, tmp_path, capsys, fmt, iface):
    Path(CANARY).unlink(missing_ok=True)
    out = tmp_path / "out"
    rc = run(data, "export", "--format", fmt, "--from", "10", *HOST100, f"--interface={iface}",
             "--interface", "eth1=2001:db8:ff::10@2001:db8:ff::1", "--out", str(out))
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: ") and err.count("\n") == 1
    assert not out.exists() and list(tmp_path.iterdir()) == [] and not Path(CANARY).exists()


def test_hostile_interfaces_file(data, tmp_path, capsys):
    f = tmp_path / "if.toml"
    f.write_text('[[interface]]\nname = "eth0\\n[path_7]"\naddress = "192.0.2.10"\n')
    assert run(data, "export", "--format", "mptcp", "--from", "10", "--to", "100", "--interfaces", str(f)) == 2
    assert "interface name" in capsys.readouterr().err
    f.write_text('[[interface]]\nname = "eth0"\naddress = "192.0.2.10"\nscript = "x"\n')
    assert run(data, "export", "--format", "mptcp", "--from", "10", "--to", "100", "--interfaces", str(f)) == 2
    assert "only the keys" in capsys.readouterr().err


def test_renderers_validate_everything(data):
    good = advise_one(data, "100")
    ifaces = [Interface("eth0", "192.0.2.10", "192.0.2.1")]
    for bad in ("subflow; reboot", "subflow\nsignal", "fullmesh", "signal fullmesh", "subflow subflow", ""):
        with pytest.raises(v.ValidationError):
            mptcp.render(dict(good, mptcp_flags_v4=bad), ifaces)
    with pytest.raises(v.ValidationError):
        mptcp.render(good, [Interface("eth0;id", "192.0.2.10")])
    with pytest.raises(v.ValidationError):
        mptcp.render(good, ifaces, role="server; reboot")
    ok = mpt.MptPath("eth0", 4, "192.0.2.10", "198.51.100.1", "192.0.2.1", 10, 5, 11, 0)
    for field, bad in (("interface_name", "eth0\nstatus = 0"), ("ip_ver", 5), ("public_ipaddr", "192.0.2.10\n"),
                       ("remote_ipaddr", "2001:db8::1"), ("weight_out", 0), ("status", 256), ("weight_out", True)):
        with pytest.raises(v.ValidationError):
            mpt.render(mpt.Connection("c", "10.99.0.1", "10.99.0.2", 65050, (mpt.MptPath(**{**ok.__dict__, field: bad}),)))
    for bad in (dict(name="x\n[path_5]"), dict(ip_remote="fd99::2"), dict(ip_local="10.99.0.1\n"), dict(port=0),
                dict(ip_remote="127.0.0.1")):
        with pytest.raises(v.ValidationError):
            mpt.render(mpt.Connection(**{**dict(name="c", ip_local="10.99.0.1", ip_remote="10.99.0.2", port=65050,
                                                paths=(ok,)), **bad}))


def test_free_text_cannot_leave_a_comment(data):
    """Hint text reaches the outputs only as comments, which cannot contain a line break."""
    evil = f"x\nrm -rf /; touch {CANARY}\n[path_3]\nstatus = 0\r\n"
    h = dict(advise_one(data, "10.0.100.1", "2001:db8:64::1"), rationale=evil, query=evil, caveat=evil)
    ifaces = [Interface("eth0", "192.0.2.10", "192.0.2.1"), Interface("eth1", "2001:db8:ff::10", "2001:db8:ff::1")]
    script = mptcp.render(h, ifaces)
    fixed = {"set -uf", "fi", "  restore", *mptcp._PRELUDE.splitlines()}
    grammar = re.compile(r" *#[ -~]*|#!/bin/sh|need_addr [A-Za-z0-9_.-]{1,15} [0-9a-f.:]+|"
                         r"if ! \{ sysctl -q -w net\.mptcp\.enabled=1 &&|     ip mptcp endpoint flush &&|"
                         r"     ip mptcp limits set subflow \d add_addr_accepted \d &&|"
                         r"     ip mptcp endpoint add [0-9a-f.:]+ dev [A-Za-z0-9_.-]{1,15} id \d+ "
                         r"(subflow|signal)( backup)?( fullmesh)?( &&|; \}; then)|"
                         r"  fail \"applying [a-zA-Z ,;.]+\"|"
                         r"echo '([ -&(-~]|'\\\\'')*'")  # one single-quoted word: ' only as '\\''
    assert all(x in fixed or grammar.fullmatch(x) for x in script.splitlines()), script
    assert "rm -rf" not in "".join(x for x in script.splitlines() if not x.startswith("#"))
    [conn] = mpt.connections([h], ifaces, "10.99.0.1", {None: "10.99.0.2"})
    conf = mpt.render(conn, header=[evil])
    assert set(mpt_sections(conf)) == {"connection", "path_0", "path_1"}
    assert mpt_sections(conf)["path_0"]["status"] == "0"


def test_jsonl_into_a_closed_pipe_ends_quietly(data):
    """`congruency export --format jsonl | head -1`: the reader goes away; exit 141, no error."""
    import os
    import sys

    r, w = os.pipe()
    os.close(r)
    p = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "export", "--format", "jsonl", "--data-dir", str(data)],
                       stdout=w, stderr=subprocess.PIPE, text=True, timeout=60)
    os.close(w)
    assert (p.returncode, p.stderr) == (141, "")


# ------------------------------------------------------------------ never a harmful config
@pytest.mark.slow
def test_a_question_the_data_cannot_answer_writes_nothing(data, tmp_path, capsys):
    """No known path (an address no prefix of the month covers), or a family the hint uses
    without an interface of it: exit 3, one line, no file (a script flushing every endpoint
    and adding none, or an MPT file with no path, would have harmed the machine)."""
    out = tmp_path / "x"
    for fmt, ifaces in (("mptcp", IFACES), ("mpt", IFACES)):
        assert run(data, "export", "--format", fmt, "--from", "10", "--to", "10.200.0.1", *ifaces,
                   "--out", str(out)) == 3
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "no known path" in err[0] and err[0].endswith("no config written"), err
    # The hint aggregates IPv4 and IPv6, the operator gave only an IPv4 interface.
    assert run(data, "export", "--format", "mptcp", "--from", "10", *HOST100, "--interface", "eth0=192.0.2.10",
               "--out", str(out)) == 3
    err = capsys.readouterr().err
    assert "uses IPv6" in err and "no IPv6 interface was given" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_gateway_inside_its_subnet_is_accepted(data, tmp_path):
    out = tmp_path / "c.conf"
    assert run(data, "export", "--format", "mpt", "--from", "10", *HOST100, "--interface", "eth0=192.0.2.10/24@192.0.2.1",
               "--interface", "eth1=2001:db8:ff::10/64@2001:db8:ff::1", *TUNNEL, "--out", str(out)) == 0
    assert "gw_ipaddr = 192.0.2.1" in out.read_text()


def test_bad_arguments_are_one_error_line(capsys):
    with pytest.raises(SystemExit) as exc:
        cli(["export", "--format", "nope"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: congruency export: argument --format: invalid choice: 'nope' "
                   "(choose from 'jsonl', 'mptcp', 'mpt') (see congruency export --help)"]


@pytest.mark.slow
def test_mptcp_follows_the_endpoints_and_k_choice(data, tmp_path, capsys):
    """--endpoints/--k: the script configures the families chosen for the best chosen
    endpoint, names it as the host to connect to, and names the chosen paths to other
    hosts; a --k above the candidates is a note, not silence."""
    f = tmp_path / "endpoints.toml"
    f.write_text('[[endpoint]]\nname = "e100"\nipv4 = "10.0.100.1"\nipv6 = "2001:db8:64::1"\n'
                 '[[endpoint]]\nname = "e400"\nipv4 = "10.1.144.1"\nipv6 = "2001:db8:190::1"\n')
    ans = advise(load().with_overrides(data_dir=data), "10", endpoints=f, k=2)
    chosen = [(r["endpoint"], r["afi"]) for r in ans["selection"]["chosen"]]
    assert chosen == [("e100", 6), ("e400", 4)]  # by the ranking: see test_selector's brute force
    out = tmp_path / "m.sh"
    assert run(data, "export", "--format", "mptcp", "--from", "10", "--endpoints", str(f), "--k", "2",
               *IFACES, "--out", str(out)) == 0
    text = out.read_text()
    assert "ip mptcp endpoint add 2001:db8:ff::10 dev eth1 id 1 subflow fullmesh; }; then" in \
        [x.strip() for x in text.splitlines()]
    assert "192.0.2.10 dev eth0" not in text  # IPv4 was not chosen for e100
    assert "echo 'Connect to 2001:db8:64::1, the server that runs the --role server script;" in text
    assert "# --k 2 chose e100 IPv6, e400 IPv4; this script configures e100's IPv6" in text
    assert "# e400 IPv4 go to other hosts: an MPTCP connection has one peer" in text
    capsys.readouterr()
    assert run(data, "export", "--format", "mptcp", "--from", "10", "--endpoints", str(f), "--k", "7",
               *IFACES, "--out", str(out)) == 0
    note = ("--k 7: only 4 candidate path(s) exist; all of them are chosen; the 4 chosen paths are 3 distinct AS "
            "path(s): e400 IPv4 and e400 IPv6 follow the same ASes (no other choice parts them)")
    assert capsys.readouterr().err == f"note: {note}\n"
    assert f"# {note}" in out.read_text()


@pytest.mark.slow
def test_k_paths_that_part_beat_identical_paths_and_every_comment_says_what_is_configured(data, tmp_path, capsys):
    """Issue 46: one endpoint's IPv4 and IPv6 paths over the same ASes (e400: 10 1 400 twice)
    must not be the k=2 choice while paths that part exist (e200: 10 1 3 200, 10 1 4 200; all
    share AS1); chosen alone (only e400), the choice says it collapsed to one AS path, and each
    export's comments claim what the file then configures: one IPv4 subflow (the hint is
    congruent: single-path), one MPT path."""
    both = tmp_path / "both.toml"
    both.write_text('[[endpoint]]\nname = "e400"\nipv4 = "10.1.144.1"\nipv6 = "2001:db8:190::1"\n'
                    '[[endpoint]]\nname = "e200"\nipv4 = "10.0.200.1"\nipv6 = "2001:db8:c8::1"\n')
    ans = advise(load().with_overrides(data_dir=data), "10", endpoints=both, k=2)
    chosen = [tuple(r["path"]) for r in ans["selection"]["chosen"]]
    assert len(set(chosen)) == 2 and ans["selection"]["note"] is None, ans["selection"]
    # shared AS1 either way (not counted: the paths' only common transit); then the choice
    # that parts, the shortest such: e400 IPv4 with e200's
    assert chosen[0] == (10, 1, 400) and chosen[1] in {(10, 1, 3, 200), (10, 1, 4, 200)}
    alone = tmp_path / "alone.toml"
    alone.write_text('[[endpoint]]\nname = "e400"\nipv4 = "10.1.144.1"\nipv6 = "2001:db8:190::1"\n')
    sel = advise(load().with_overrides(data_dir=data), "10", endpoints=alone, k=2)["selection"]
    assert sel["note"] == ("--k 2: the 2 chosen paths are 1 distinct AS path(s): e400 IPv4 and e400 IPv6 follow "
                           "the same ASes (no other choice parts them)")
    capsys.readouterr()
    script = tmp_path / "m.sh"
    assert run(data, "export", "--format", "mptcp", "--from", "10", "--endpoints", str(alone), "--k", "2",
               *IFACES, "--out", str(script)) == 0
    text = script.read_text()
    claims = [x for x in text.splitlines() if x.startswith("# --k 2 chose")]
    assert claims == ["# --k 2 chose e400 IPv4, e400 IPv6; this script configures e400's IPv4 (not IPv6: the hint is "
                      "congruent, mode single-path)"], claims
    # the commands the script runs: one endpoint, IPv4's, as its comment says
    added = re.findall(r"ip mptcp endpoint add (\S+) dev (\S+) id \d+ (\w[\w ]*?)(?:;|$)", text)
    assert [(a, d) for a, d, _f in added] == [("192.0.2.10", "eth0")], added
    conf = tmp_path / "m.conf"
    assert run(data, "export", "--format", "mpt", "--from", "10", "--endpoints", str(alone), "--k", "2",
               *IFACES, "--tunnel-local", "10.99.0.1", "--tunnel-remote", "10.99.0.2", "--out", str(conf)) == 0
    body = conf.read_text()
    ini = configparser.ConfigParser()
    ini.read_string("\n".join(x for x in body.splitlines() if not x.startswith(";")))
    paths = [s for s in ini.sections() if s.startswith("path_")]
    assert ini["connection"]["path_count"] == str(len(paths)) == "1"
    [claim] = [x for x in body.splitlines() if re.match(r"; \d+ path\(s\): ", x)]
    assert claim == "; 1 path(s): IPv4 over eth0 (not IPv6: the hint is congruent, mode single-path)", claim
    assert ini[paths[0]]["ip_ver"] == "4"


def test_folders_where_files_belong_are_bad_input(data, tmp_path, capsys):
    """--interfaces DIR, --endpoints DIR and --out DIR: exit 2, one line naming the path given."""
    d = tmp_path / "adir"
    d.mkdir()
    for args, err in (
        (["--to", "100", "--interfaces", str(d)], f"error: {d}: is a folder; the interfaces file must be a TOML file\n"),
        (["--endpoints", str(d), *IFACES], f"error: {d}: is a folder; the endpoints file must be a TOML file\n"),
        (["--to", "100", *IFACES, "--out", str(d)], f"error: --out: {d} is a folder; give a file path\n"),
    ):
        assert run(data, "export", "--format", "mptcp", "--from", "10", *args) == 2, args
        assert capsys.readouterr().err == err
    assert list(d.iterdir()) == []


# --- the real sample month: each family's answer on its own; advise and export agree --------

@pytest.mark.slow
def test_an_uncovered_family_keeps_the_other_path(sample, tmp_path):
    """1403 -> 8.8.8.8 has an IPv4 path (1403 15169); the host's IPv6 address, which no
    IPv6 prefix of the month covers, must not drop it (before issue 30: v4_path None)."""
    from bgp_congruency.selector.advice import advise

    [v4only] = advise(sample.cfg, "1403", "8.8.8.8")["hints"]
    assert v4only["v4_path"] == [1403, 15169]
    [both] = advise(sample.cfg, "1403", ["8.8.8.8", "2001:4860:4860::8888"])["hints"]
    assert (both["v4_path"], both["v6_path"], both["prefix_v4"]) == ([1403, 15169], None, "8.8.8.0/24")
    assert both["hint_class"] == "unknown" and both["mode"] == "single-path" and both["primary_afi"] == 4
    assert both["reason"] == ("no IPv6 prefix of 2026-07 covers 2001:4860:4860::8888/128: "
                              "only IPv4 has a path")
    assert both["mptcp_flags_v4"] == "subflow" and both["mptcp_flags_v6"] is None
    ends = tmp_path / "ends.toml"
    ends.write_text('[[endpoint]]\nname = "dns"\nipv4 = "8.8.8.8"\nipv6 = "2001:4860:4860::8888"\n')
    [ep] = advise(sample.cfg, "1403", endpoints=ends)["hints"]
    assert (ep["v4_path"], ep["reason"]) == ([1403, 15169], both["reason"])


@pytest.mark.slow
def test_export_configures_what_advise_says(sample, tmp_path):
    """`export --format mptcp` writes the single-path config `advise` describes (before
    issue 30: exit 3, "no known path")."""
    r = congruency("export", "--format", "mptcp", "--from", "1403", "--to", "8.8.8.8", "--interface",
                   "eth0=192.0.2.10/24", "--interface", "eth1=2001:db8::10/64", "--data-dir",
                   str(sample.data), "--out", str(tmp_path / "c.sh"))
    assert r.returncode == 0, r.stderr
    script = (tmp_path / "c.sh").read_text()
    assert "ip mptcp endpoint add 192.0.2.10 dev eth0 id 1 subflow" in script
    assert "2001:db8::10" not in script.split("# -- apply")[-1]


@pytest.mark.slow
def test_advise_and_export_agree_on_every_hint(sample):
    """Over every hint of the sample month: the MPTCP plan configures exactly the families
    the advice gives subflow flags, with those flags; a hint with no path is refused."""
    from bgp_congruency.lake import published
    from bgp_congruency.selector.exports import mptcp
    from bgp_congruency.selector.exports.local import Interface
    from bgp_congruency.selector.exports.validate import Unanswerable

    rows = published.read(sample.data, "hints", "2026-07").to_pylist()
    ifaces = [Interface("eth0", "192.0.2.10", None, 24), Interface("eth1", "2001:db8::10", None, 64)]
    assert len(rows) == 2167
    seen = set()
    for h in rows:
        flags = {f: h[f"mptcp_flags_v{f}"] for f in (4, 6) if h[f"mptcp_flags_v{f}"] is not None}
        if not flags:
            with pytest.raises(Unanswerable):
                mptcp.endpoints_for(h, ifaces)
            continue
        plan = mptcp.endpoints_for(h, ifaces)
        got = {4 if ":" not in e.address else 6: e.flags for e in plan.endpoints}
        assert got == flags, h
        assert (len(got) == 1) == (h["mode"] == "single-path"), h
        seen.add((h["hint_class"], h["mode"]))
    assert {m for _c, m in seen} == {"aggregate", "backup", "single-path"}


# --- operator configs ------------------------------------------------------------------------------

HOST100 = ["--to", "10.0.100.1", "--to", "2001:db8:64::1"]  # disjoint from AS10 (tests/support/hintdata.py)


@pytest.mark.parametrize("argv,message", [
    (["--format", "mptcp", "--interface", "eth0=192.0.2.0/24", "--interface", "eth1=2001:db8:ff::10/64"],
     "error: --interface eth0: address 192.0.2.0 is the network address of 192.0.2.0/24, not a host's"),
    (["--format", "mptcp", "--interface", "eth0=192.0.2.255/24", "--interface", "eth1=2001:db8:ff::10/64"],
     "error: --interface eth0: address 192.0.2.255 is the broadcast address of 192.0.2.0/24, not a host's"),
    (["--format", "mptcp", "--interface", "eth0=192.0.2.10/24", "--interface", "eth1=2001:db8:ff::/64"],
     "error: --interface eth1: address 2001:db8:ff:: is the network address of 2001:db8:ff::/64, not a host's"),
    (["--format", "mpt", "--interface", "eth0=192.0.2.10@192.0.2.1", "--interface",
      "eth1=2001:db8:ff::10@2001:db8:ff::1", "--tunnel-local", "10.99.0.1", "--tunnel-remote", "10.99.0.1"],
     "error: the --to host: its tunnel address 10.99.0.1 is --tunnel-local's: the two ends of a tunnel need "
     "different addresses"),
    (["--format", "mptcp", "--interface", "eth0=192.0.2.10/24", "--interface", "eth1=2001:db8:ff::10/64",
      "--out", "/nonexistent/dir/o.sh"],
     "error: --out: no such folder /nonexistent/dir (it is not created: a typo would otherwise leave files "
     "where nobody looks)"),
])
def test_operator_config_mistakes_are_refused(hint_month, argv, message):
    r = congruency("export", "--from", "10", *HOST100, *argv, "--data-dir", str(hint_month.data))
    assert (r.returncode, r.stdout, r.stderr) == (2, "", message + "\n")
    assert not Path("/nonexistent").exists()


@pytest.mark.slow
def test_a_server_config_for_other_addresses_is_warned(hint_month):
    ifaces = ["--interface", "eth0=192.0.2.10/24", "--interface", "eth1=2001:db8:ff::10/64"]
    r = congruency("export", "--format", "mptcp", "--role", "server", "--from", "10", *HOST100, *ifaces,
                   "--data-dir", str(hint_month.data))
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        "warning: --role server: the hint was computed for the IPv4 address 10.0.100.1, but this server's IPv4 "
        "interfaces are eth0 192.0.2.10; its clients' paths may differ",
        "warning: --role server: the hint was computed for the IPv6 address 2001:db8:64::1, but this server's IPv6 "
        "interfaces are eth1 2001:db8:ff::10; its clients' paths may differ"]
    mine = ["--interface", "eth0=10.0.100.1/24", "--interface", "eth1=2001:db8:64::1/64"]
    r = congruency("export", "--format", "mptcp", "--role", "server", "--from", "10", *HOST100, *mine,
                   "--data-dir", str(hint_month.data))
    assert (r.returncode, r.stderr) == (0, "")


def test_export_help_says_the_script_replaces_the_endpoints():
    r = congruency("export", "--help")
    assert "replaces every MPTCP endpoint of the network namespace" in " ".join(r.stdout.split())
