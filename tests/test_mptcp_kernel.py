"""The generated MPTCP script on the real kernel, inside network namespaces this test creates:
applied and read back (`ip mptcp endpoint show`, `ip mptcp limits show`) it equals what the
hint asked for, twice in a row; end to end, one MPTCP connection from an AF_INET6 socket
between two namespaces carries data over an IPv4 and an IPv6 subflow at once (both byte
counters move under a tc rate limit on each path), bytes intact; a failing preflight
changes nothing, and a failure while applying restores what was found.

Needs root, iproute2 and a kernel with MPTCP (net.mptcp); skipped with the reason otherwise
(in CI, which runs as root on the same kind of machine, a missing capability fails instead).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from bgp_congruency.common.config import load
from bgp_congruency.selector.advice import advise
from bgp_congruency.selector.exports import mptcp
from bgp_congruency.selector.exports.local import Interface
from tests.support import hintdata
from tests.support.netns import Netns, sh, veth

TIMEOUT = 20  # seconds, for every wait


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    if not shutil.which("ip") or not shutil.which("ss") or not shutil.which("tc"):
        return "needs iproute2 (ip, ss, tc)"
    if not Path("/proc/sys/net/mptcp/enabled").exists():
        return "kernel without MPTCP (no /proc/sys/net/mptcp)"
    probe = f"t11p{uuid.uuid4().hex[:6]}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode:
        return f"cannot create a network namespace: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


WHY = _why_not()
if WHY:
    pytestmark = pytest.mark.skipif(not os.environ.get("CI"), reason=WHY)


@pytest.fixture(autouse=True)
def _ci_fails_loudly():
    if WHY and os.environ.get("CI"):
        pytest.fail(f"CI must be able to run the MPTCP kernel tests: {WHY}")


def read_back(ns: str) -> tuple[tuple[int, int], list[tuple]]:
    """(subflows, add_addr_accepted), [(address, id, flags, dev)] as the kernel reports them."""
    limits = sh("ip", "mptcp", "limits", "show", ns=ns)
    lim = dict(re.findall(r"(add_addr_accepted|subflows?) (\d+)", limits))
    eps = []
    for line in sh("ip", "mptcp", "endpoint", "show", ns=ns).splitlines():
        m = re.fullmatch(r"(\S+) id (\d+) (.*?) ?dev (\S+)\s*", line)
        assert m, line
        eps.append((m.group(1), int(m.group(2)), " ".join(sorted(m.group(3).split())), m.group(4)))
    return (int(lim.get("subflows", lim.get("subflow"))), int(lim["add_addr_accepted"])), sorted(eps)


def expected(plan: mptcp.EndpointSet):
    return (plan.subflows, plan.add_addr_accepted), sorted(
        (e.address, e.id, " ".join(sorted(e.flags.split())), e.dev) for e in plan.endpoints)


@pytest.fixture(scope="module")
def hint_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("kernel-synth")
    hintdata.publish_synthetic(d)
    cfg = load().with_overrides(data_dir=d)

    def hint(dest):
        return advise(cfg, "10", dest)["hints"][0]

    return hint


@pytest.mark.kernel
@pytest.mark.parametrize("dest, mode", [("100", "aggregate"), ("300", "backup"), ("400", "single-path")])
def test_script_applied_in_a_fresh_namespace_reads_back(hint_data, tmp_path, dest, mode):
    h = hint_data(dest)
    assert h["mode"] == mode
    ifaces = [Interface("veth4", "10.77.0.1"), Interface("veth6", "fd77::1")]
    script = tmp_path / "mptcp.sh"
    script.write_text(mptcp.render(h, ifaces))
    plan = mptcp.endpoints_for(h, ifaces)
    with Netns("a") as ns:
        a = ns["a"]
        sh("ip", "link", "add", "veth4", "type", "veth", "peer", "name", "peer4", ns=a)
        sh("ip", "link", "add", "veth6", "type", "veth", "peer", "name", "peer6", ns=a)
        sh("ip", "addr", "add", "10.77.0.1/24", "dev", "veth4", ns=a)
        sh("ip", "addr", "add", "fd77::1/64", "dev", "veth6", "nodad", ns=a)
        sh("sysctl", "-qw", "net.mptcp.enabled=0", ns=a)
        sh("ip", "mptcp", "endpoint", "add", "10.77.0.1", "dev", "veth4", "id", "9", "signal", ns=a)  # stale state
        sh("sh", str(script), ns=a)
        first = read_back(a)
        assert first == expected(plan)
        assert sh("sysctl", "-n", "net.mptcp.enabled", ns=a).strip() == "1"
        sh("sh", str(script), ns=a)
        assert read_back(a) == first  # idempotent
    want_flags = {"aggregate": ["fullmesh subflow", "fullmesh subflow"], "backup": ["subflow", "backup subflow"],
                  "single-path": ["subflow"]}[mode]
    assert [e[2] for e in sorted(first[1], key=lambda e: e[1])] == want_flags


SERVER = r"""
import hashlib, socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM, 262)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", int(sys.argv[1]))); s.listen(1); s.settimeout(20)
print("listening", flush=True)
c, _ = s.accept(); c.settimeout(20)
h, n = hashlib.sha256(), 0
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    h.update(b); n += len(b)
c.sendall(f"{n} {h.hexdigest()}".encode()); c.close()
"""

CLIENT = r"""
import hashlib, random, socket, sys
data = random.Random(42).randbytes(int(sys.argv[3]))
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM, 262); s.settimeout(20)
s.connect((sys.argv[1], int(sys.argv[2])))
half = len(data) // 2
s.sendall(data[:half])
print("sent-half", flush=True)
sys.stdin.readline()
s.sendall(data[half:]); s.shutdown(socket.SHUT_WR)
reply = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    reply += b
print(reply.decode(), len(data), hashlib.sha256(data).hexdigest(), flush=True)
"""


def subflows(ns: str, port: int) -> set[str]:
    """Address families of the established TCP subflows to the server's port."""
    fams = set()
    for line in sh("ss", "-tnH", "state", "established", ns=ns).splitlines():
        cols = line.split()
        peer = cols[-1] if cols else ""
        if not peer.endswith(f":{port}"):
            continue
        host = peer.rsplit(":", 1)[0].strip("[]")
        fams.add("v4" if "." in host else "v6")  # ::ffff:a.b.c.d (v4-mapped) is IPv4 on the wire
    return fams


def subflow_bytes(ns: str, port: int) -> dict[str, int]:
    """bytes_acked per address family over the established subflows to the server's port."""
    out: dict[str, int] = {}
    lines = sh("ss", "-tniH", "state", "established", ns=ns).splitlines()
    for head, info in zip(lines[::2], lines[1::2]):
        peer = head.split()[-1] if head.split() else ""
        m = re.search(r"bytes_acked:(\d+)", info)
        if peer.endswith(f":{port}") and m:
            fam = "v4" if "." in peer.rsplit(":", 1)[0] else "v6"
            out[fam] = out.get(fam, 0) + int(m.group(1))
    return out


@pytest.mark.kernel
def test_end_to_end_ipv4_and_ipv6_subflows(hint_data, tmp_path):
    h = hint_data("100")
    assert h["hint_class"] == "disjoint" and h["mptcp_flags_v4"] == h["mptcp_flags_v6"] == "subflow fullmesh"
    port, size = 18011, 4 << 20
    client_ifaces = [Interface("c4", "10.11.0.1"), Interface("c6", "fd11::1")]
    server_ifaces = [Interface("s6", "fd11::2")]
    (tmp_path / "client.sh").write_text(mptcp.render(h, client_ifaces, role="client"))
    (tmp_path / "server.sh").write_text(mptcp.render(h, server_ifaces, role="server"))
    procs = []
    with Netns("c", "s") as ns:
        c, s = ns["c"], ns["s"]
        try:
            veth(c, "c4", "10.11.0.1/24", s, "s4", "10.11.0.2/24")
            veth(c, "c6", "fd11::1/64", s, "s6", "fd11::2/64")
            for dev in ("c4", "c6"):  # a bottleneck on each path: one subflow alone cannot carry it all
                sh("tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", "40mbit", "burst", "32kb",
                   "latency", "50ms", ns=c)
            sh("sh", str(tmp_path / "server.sh"), ns=s)
            sh("sh", str(tmp_path / "client.sh"), ns=c)
            assert read_back(c) == expected(mptcp.endpoints_for(h, client_ifaces))
            assert read_back(s)[1] == [("fd11::2", 1, "signal", "s6")]
            server = subprocess.Popen(["ip", "netns", "exec", s, sys.executable, "-c", SERVER, str(port)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs.append(server)
            assert server.stdout.readline().strip() == "listening"
            client = subprocess.Popen(["ip", "netns", "exec", c, sys.executable, "-c", CLIENT, "::ffff:10.11.0.2",
                                       str(port), str(size)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
            procs.append(client)
            assert client.stdout.readline().strip() == "sent-half"
            seen: set[str] = set()
            deadline = time.monotonic() + TIMEOUT
            while seen != {"v4", "v6"} and time.monotonic() < deadline:
                seen = subflows(c, port)
                time.sleep(0.1)
            mptcp_socks = sh("ss", "-MnH", ns=c)
            moved = subflow_bytes(c, port)  # after the first half (2 MiB) went out
            client.stdin.write("go\n")
            client.stdin.flush()
            out, err = client.communicate(timeout=TIMEOUT)
            assert client.returncode == 0, err
            server.wait(timeout=TIMEOUT)
            assert seen == {"v4", "v6"}, f"subflow families seen: {seen}"
            assert set(moved) == {"v4", "v6"} and min(moved.values()) > 64 * 1024, moved
            assert mptcp_socks.strip(), "ss -M shows no MPTCP socket"
            got_n, got_sha, sent_n, sent_sha = out.split()
            assert (int(got_n), got_sha) == (int(sent_n), sent_sha) and int(sent_n) == size
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait(timeout=TIMEOUT)


def _state(ns: str) -> tuple:
    """Everything the script may change: endpoints, limits and net.mptcp.enabled, as read."""
    return (sh("ip", "mptcp", "endpoint", "show", ns=ns), sh("ip", "mptcp", "limits", "show", ns=ns),
            sh("sysctl", "-n", "net.mptcp.enabled", ns=ns).strip())


def _with_state(a: str) -> tuple:
    """Two devices with their addresses, and MPTCP state left by someone else."""
    for dev, peer, addr in (("eth0", "p0", "10.78.0.1/24"), ("eth1", "p1", "fd78::1/64")):
        sh("ip", "link", "add", dev, "type", "veth", "peer", "name", peer, ns=a)
        sh("ip", "addr", "add", addr, "dev", dev, *(["nodad"] if ":" in addr else []), ns=a)
        sh("ip", "link", "set", dev, "up", ns=a)
    sh("sysctl", "-qw", "net.mptcp.enabled=0", ns=a)
    sh("ip", "mptcp", "endpoint", "add", "10.78.0.1", "dev", "eth0", "id", "9", "signal", "backup", ns=a)
    sh("ip", "mptcp", "limits", "set", "subflow", "3", "add_addr_accepted", "1", ns=a)
    return _state(a)


@pytest.mark.parametrize("ifaces, error", [
    ([Interface("eth0", "10.78.0.1"), Interface("eth7", "fd78::1")], "error: device eth7 does not exist"),
    ([Interface("eth0", "10.78.0.1"), Interface("eth1", "fd78::9")], "error: address fd78::9 is not configured on eth1"),
])
@pytest.mark.kernel
def test_preflight_failure_changes_nothing(hint_data, tmp_path, ifaces, error):
    """A mistyped device or an address not on its device: one error line, exit 1, and the
    state found (a stale endpoint, limits, MPTCP off) left exactly as it was."""
    script = tmp_path / "mptcp.sh"
    script.write_text(mptcp.render(hint_data("100"), ifaces))
    with Netns("a") as ns:
        before = _with_state(ns["a"])
        r = subprocess.run(["ip", "netns", "exec", ns["a"], "sh", str(script)], capture_output=True, text=True,
                           timeout=TIMEOUT)
        assert (r.returncode, r.stderr, r.stdout) == (1, error + "\n", "")
        assert _state(ns["a"]) == before


@pytest.mark.kernel
def test_a_failure_while_applying_restores_what_was_found(hint_data, tmp_path):
    """The kernel refusing the second endpoint (injected: an `ip` in front of the real one
    fails that one command) rolls back to the endpoints, limits and sysctl found."""
    ifaces = [Interface("eth0", "10.78.0.1"), Interface("eth1", "fd78::1")]
    script = tmp_path / "mptcp.sh"
    script.write_text(mptcp.render(hint_data("100"), ifaces))
    shim = tmp_path / "bin"
    shim.mkdir()
    real_ip = shutil.which("ip")
    (shim / "ip").write_text(f'#!/bin/sh\ncase "$*" in *"endpoint add fd78::1 dev eth1"*) '
                             f'echo "Error: injected" >&2; exit 2;; esac\nexec {real_ip} "$@"\n')
    (shim / "ip").chmod(0o755)
    with Netns("a") as ns:
        before = _with_state(ns["a"])
        r = subprocess.run(["ip", "netns", "exec", ns["a"], "env", f"PATH={shim}:{os.environ['PATH']}", "sh",
                            str(script)], capture_output=True, text=True, timeout=TIMEOUT)
        assert r.returncode == 1 and r.stdout == ""
        assert r.stderr.splitlines()[-1] == ("error: applying the MPTCP configuration failed; the endpoints, limits "
                                             "and net.mptcp.enabled found before were restored")
        assert _state(ns["a"]) == before
        # the same script without the fault applies, and says where to connect
        r = subprocess.run(["ip", "netns", "exec", ns["a"], "sh", str(script)], capture_output=True, text=True,
                           timeout=TIMEOUT)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        assert read_back(ns["a"]) == expected(mptcp.endpoints_for(hint_data("100"), ifaces))
        assert "Applications need MPTCP sockets: run them under mptcpize (mptcpize run CMD)" in r.stdout


@pytest.mark.slow
def test_shellcheck_finds_nothing(hint_data, tmp_path):
    from tests.support.data import require_tool

    require_tool("shellcheck")  # installed by make test (system-deps)
    for role in ("client", "server"):
        f = tmp_path / f"{role}.sh"
        f.write_text(mptcp.render(hint_data("300"), [Interface("eth0", "10.78.0.1"), Interface("eth1", "fd78::1")],
                                  role=role))
        r = subprocess.run(["shellcheck", "-s", "sh", str(f)], capture_output=True, text=True, timeout=TIMEOUT)
        assert r.returncode == 0, r.stdout
