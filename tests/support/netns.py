"""Network namespaces for the tests and benches that need the real kernel (MPTCP, tc): run a
command in one, fresh namespaces deleted whatever happens, veth links between them. Only
namespaces made here and addresses inside them are ever used (no traffic leaves the host)."""
from __future__ import annotations

import subprocess
import uuid

TIMEOUT = 20  # seconds, for every command


def sh(*args, ns: str | None = None, check=True, input=None, timeout: float = TIMEOUT) -> str:
    """Run a command (in namespace `ns`); its stdout, or AssertionError naming it on failure."""
    cmd = (["ip", "netns", "exec", ns] if ns else []) + [str(a) for a in args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input)
    if check and r.returncode:
        raise AssertionError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


class Netns:
    """Fresh namespaces, deleted on exit whatever happens (their veths go with them)."""

    def __init__(self, *roles: str, prefix: str = "t11"):
        tag = uuid.uuid4().hex[:6]
        self.names = {r: f"{prefix}{r}{tag}" for r in roles}

    def __enter__(self):
        try:
            for n in self.names.values():
                sh("ip", "netns", "add", n)
                sh("ip", "link", "set", "lo", "up", ns=n)
        except BaseException:
            self.__exit__(None, None, None)  # the ones already made go too
            raise
        return self.names

    def __exit__(self, *exc):
        for n in self.names.values():
            subprocess.run(["ip", "netns", "del", n], capture_output=True, timeout=TIMEOUT)


def veth(a_ns, a_if, a_addr, b_ns, b_if, b_addr):
    """A veth pair between two namespaces; each end gets its address(es) (a str or a list) and goes up."""
    sh("ip", "link", "add", a_if, "netns", a_ns, "type", "veth", "peer", "name", b_if, "netns", b_ns)
    for ns, ifn, addrs in ((a_ns, a_if, a_addr), (b_ns, b_if, b_addr)):
        for addr in [addrs] if isinstance(addrs, str) else addrs:
            extra = ["nodad"] if ":" in addr else []
            sh("ip", "addr", "add", addr, "dev", ifn, *extra, ns=ns)
        sh("ip", "link", "set", ifn, "up", ns=ns)


def p2p(a_ns, a_if, a_addr, b_ns, b_if, b_addr):
    """A point-to-point veth link: each end keeps its own address (its own AS's prefix) and
    reaches the other's as a peer address."""
    sh("ip", "link", "add", a_if, "netns", a_ns, "type", "veth", "peer", "name", b_if, "netns", b_ns)
    for ns, ifn, mine, peer in ((a_ns, a_if, a_addr, b_addr), (b_ns, b_if, b_addr, a_addr)):
        sh("ip", "addr", "add", mine, "peer", peer, "dev", ifn, *(["nodad"] if ":" in mine else []), ns=ns)
        sh("ip", "link", "set", ifn, "up", ns=ns)
        if ":" in peer:  # IPv6 `peer` installs no route to the peer: add it
            sh("ip", "-6", "route", "replace", peer, "dev", ifn, ns=ns)
