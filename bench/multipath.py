#!/usr/bin/env python3
"""The multipath gain, measured: what one MPTCP connection with an IPv4 and an IPv6 subflow
carries, configured by the project's own generated script (`congruency export --format
mptcp`, selector/exports/mptcp.py, for an `aggregate` hint), against single-path TCP on the
better family, on the real kernel in network namespaces this bench makes (issue 32).

Two topologies, rates set with `tc tbf` (a 32 kB burst, up to 50 ms of queue; this kernel has
no netem, so the round trip is the queue's):
  disjoint  client --c4-- server over IPv4 limited to R4, client --c6-- server over IPv6
            limited to R6: the two families share nothing (the `disjoint` class);
  shared    both families from the client through one router whose link to the server,
            carrying IPv4 and IPv6, is limited to R: one common bottleneck (congruent paths,
            or a `shared-core` AS that is the bottleneck).
Each run sends for --seconds; goodput is what the server received per second after the
first --warmup seconds. In the shared topology two flows also run at once through the
bottleneck: MPTCP against single-path TCP, and (the control) TCP against TCP; the share
of the first is what it took. Expected from the study: disjoint close to R4 + R6, shared
close to R; upstream Linux MPTCP has no coupled congestion control, so with two subflows
it takes about two thirds of a bottleneck from one TCP flow.

    sudo .venv/bin/python bench/multipath.py [--runs 5] [--seconds 8] [--json]

Writes bench/out/multipath.json (rendered into RESULTS.md by bench/run.py) and, with
--advice, selector/measured_gain.json: the medians the selector's rationales cite
(selector/rules.py), so the advice quotes what was measured here and nothing else.
Needs root, iproute2 (ip, tc, ss) and a kernel with MPTCP.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common, render  # noqa: E402
from bgp_congruency.selector import rules  # noqa: E402
from bgp_congruency.selector.exports import mptcp  # noqa: E402
from bgp_congruency.selector.exports.local import Interface  # noqa: E402
from tests.support.netns import Netns, sh, veth  # noqa: E402

ADVICE_FILE = common.ROOT / "selector" / "measured_gain.json"
PORT = 18500
#: Every wait of the bench is bounded: a run longer than this is killed and reported.
RUN_TIMEOUT_S = 60

# The server: accepts N connections on one dual-stack MPTCP socket (plain TCP clients fall
# back to TCP on it); each connection's first line is its label; records (time, bytes)
# every 20 ms per connection and prints them all as JSON when every connection has closed.
SERVER = r"""
import json, socket, sys, threading, time
n = int(sys.argv[2])
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM, 262)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", int(sys.argv[1]))); s.listen(8); s.settimeout(30)
print("listening", flush=True)
out = []
def serve(c):
    c.settimeout(30)
    label, got, samples, last = b"", 0, [], 0.0
    while not label.endswith(b"\n"):
        b = c.recv(1)
        if not b:
            return
        label += b
    while True:
        b = c.recv(1 << 16)
        now = time.monotonic()
        if not b:
            break
        got += len(b)
        if now - last >= 0.02:
            samples.append((now, got)); last = now
    samples.append((time.monotonic(), got))
    out.append({"label": label.decode().strip(), "bytes": got, "samples": samples})
    c.close()
threads = []
for _ in range(n):
    c, _a = s.accept()
    t = threading.Thread(target=serve, args=(c,)); t.start(); threads.append(t)
for t in threads:
    t.join(40)
print(json.dumps(out), flush=True)
"""

# The client: connects (MPTCP: protocol 262, or plain TCP), sends its label line, says
# "connected" and waits for a line on stdin, so that flows measured together start together;
# then sends data for the given seconds, and closes.
CLIENT = r"""
import socket, sys, time
addr, port, proto, secs, label = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5]
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM, 262 if proto == "mptcp" else 0)
s.settimeout(30)
s.connect((addr, port))
s.sendall(label.encode() + b"\n")
print("connected", flush=True)
sys.stdin.readline()
chunk = bytes(1 << 16)
end = time.monotonic() + secs
while time.monotonic() < end:
    s.sendall(chunk)
s.shutdown(socket.SHUT_WR)
while s.recv(4096):
    pass
"""


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root (ip netns, tc)"
    for tool in ("ip", "tc", "ss"):
        if not shutil.which(tool):
            return f"needs iproute2 ({tool} is missing)"
    if not Path("/proc/sys/net/mptcp/enabled").exists():
        return "needs a kernel with MPTCP (no /proc/sys/net/mptcp)"
    return None


def aggregate_hint() -> dict:
    """The hint an `aggregate` advice gives (a disjoint pair), as the exports read it."""
    adv = rules.advice("disjoint", 4)
    assert adv.mode == "aggregate"
    return {**adv.as_dict(), "hint_class": "disjoint", "month": "bench", "source_asn": 64500,
            "dest_asn": 64501, "confidence": 1.0, "caveat": ""}


def _limit(ns: str, dev: str, mbit: float) -> None:
    sh("tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{mbit}mbit", "burst", "32kb",
       "latency", "50ms", ns=ns)


def _apply(ns: str, script: str, tmp: Path, name: str) -> None:
    f = tmp / f"{name}.sh"
    f.write_text(script)
    sh("sh", f, ns=ns)


class Topology:
    """Namespaces c (client), s (server) and, for `shared`, r (the router with the bottleneck)."""

    def __init__(self, kind: str, rates: dict, tmp: Path):
        self.kind, self.rates, self.tmp = kind, rates, tmp
        self.netns = Netns("c", "s", "r", prefix="mp") if kind == "shared" else Netns("c", "s", prefix="mp")

    def __enter__(self):
        ns = self.netns.__enter__()
        try:
            c, s = ns["c"], ns["s"]
            hint = aggregate_hint()
            if self.kind == "disjoint":
                veth(c, "c4", "10.91.4.1/24", s, "s4", "10.91.4.2/24")
                veth(c, "c6", "fd91:6::1/64", s, "s6", "fd91:6::2/64")
                _limit(c, "c4", self.rates["r4"])
                _limit(c, "c6", self.rates["r6"])
                self.addr = {4: "::ffff:10.91.4.2", 6: "fd91:6::2"}
                client = [Interface("c4", "10.91.4.1"), Interface("c6", "fd91:6::1")]
                server = [Interface("s6", "fd91:6::2")]
            else:
                r = ns["r"]
                veth(c, "c4", "10.92.4.1/24", r, "r4", "10.92.4.254/24")
                veth(c, "c6", "fd92:6::1/64", r, "r6", "fd92:6::fe/64")
                veth(r, "r0", ["10.92.0.1/24", "fd92::1/64"], s, "s0", ["10.92.0.2/24", "fd92::2/64"])
                sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=r)
                sh("sysctl", "-qw", "net.ipv6.conf.all.forwarding=1", ns=r)
                sh("ip", "route", "add", "default", "via", "10.92.4.254", ns=c)
                sh("ip", "-6", "route", "add", "default", "via", "fd92:6::fe", ns=c)
                sh("ip", "route", "add", "default", "via", "10.92.0.1", ns=s)
                sh("ip", "-6", "route", "add", "default", "via", "fd92::1", ns=s)
                _limit(r, "r0", self.rates["r"])
                self.addr = {4: "::ffff:10.92.0.2", 6: "fd92::2"}
                client = [Interface("c4", "10.92.4.1"), Interface("c6", "fd92:6::1")]
                server = [Interface("s0", "fd92::2")]
            _apply(c, mptcp.render(hint, client, role="client"), self.tmp, f"{c}-client")
            _apply(s, mptcp.render(hint, server, role="server"), self.tmp, f"{s}-server")
            self.c, self.s = c, s
            return self
        except BaseException:
            self.netns.__exit__(None, None, None)
            raise

    def __exit__(self, *exc):
        self.netns.__exit__(*exc)

    def run(self, flows: list[tuple[str, str, int]], seconds: float, warmup: float) -> dict:
        """Flows (label, proto, family) started together; goodput (Mbit/s) of each over the
        window all of them were sending in, after `warmup`; the subflow families seen."""
        procs = []
        server = subprocess.Popen(["ip", "netns", "exec", self.s, sys.executable, "-c", SERVER, str(PORT),
                                   str(len(flows))], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(server)
        try:
            if server.stdout.readline().strip() != "listening":
                raise RuntimeError(f"server did not start: {server.stderr.read().strip()}")
            for label, proto, fam in flows:
                procs.append(subprocess.Popen(
                    ["ip", "netns", "exec", self.c, sys.executable, "-c", CLIENT, self.addr[fam], str(PORT), proto,
                     str(seconds), label], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    text=True))
            for p in procs[1:]:
                if p.stdout.readline().strip() != "connected":
                    raise RuntimeError(f"client did not connect: {p.stderr.read().strip()}")
            time.sleep(0.3)  # MPTCP's second subflow joins right after the connection
            for p in procs[1:]:
                p.stdin.write("go\n")
                p.stdin.flush()
            time.sleep(min(warmup + 1.0, seconds / 2))
            seen = _subflow_families(self.c, PORT)
            for p in procs[1:]:
                _, err = p.communicate(timeout=RUN_TIMEOUT_S)
                if p.returncode:
                    raise RuntimeError(f"client failed: {err.strip()}")
            out, err = server.communicate(timeout=RUN_TIMEOUT_S)
            if server.returncode:
                raise RuntimeError(f"server failed: {err.strip()}")
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait(timeout=10)
        conns = {c["label"]: c for c in json.loads(out)}
        start = max(c["samples"][0][0] for c in conns.values()) + warmup
        end = min(c["samples"][-1][0] for c in conns.values()) - 0.2
        if end - start < 1.0:
            raise RuntimeError(f"measurement window of {end - start:.2f} s is too short (raise --seconds)")
        rates = {label: (_at(c["samples"], end) - _at(c["samples"], start)) * 8 / (end - start) / 1e6
                 for label, c in conns.items()}
        return {"mbit": rates, "window_s": round(end - start, 2), "families": sorted(seen)}


def _at(samples: list, t: float) -> float:
    """Bytes received by time t, linear between samples."""
    prev = (samples[0][0], 0)
    for s in samples:
        if s[0] >= t:
            (t0, b0), (t1, b1) = prev, s
            return b0 + (b1 - b0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)
        prev = s
    return samples[-1][1]


def _subflow_families(ns: str, port: int) -> set[str]:
    """Address families of the client's established TCP (sub)flows to the server's port."""
    fams = set()
    for line in sh("ss", "-tnH", "state", "established", ns=ns).splitlines():
        peer = line.split()[-1] if line.split() else ""
        if peer.endswith(f":{port}"):
            host = peer.rsplit(":", 1)[0].strip("[]")
            fams.add("v4" if "." in host else "v6")  # ::ffff:a.b.c.d is IPv4 on the wire
    return fams


def spread(xs: list[float]) -> dict:
    return {"min": round(min(xs), 3), "median": round(statistics.median(xs), 3), "max": round(max(xs), 3),
            "all": [round(x, 3) for x in xs]}


def goodput(mptcp: list[float], tcp: list[float], capacity: float) -> dict:
    """The runs' goodputs (Mbit/s), against the capacity and MPTCP against TCP, run by run."""
    return {"mptcp_mbit": spread(mptcp), "tcp_mbit": spread(tcp),
            "mptcp_vs_capacity": spread([x / capacity for x in mptcp]),
            "tcp_vs_capacity": spread([x / capacity for x in tcp]),
            "mptcp_vs_tcp": spread([a / b for a, b in zip(mptcp, tcp)])}


def measure(args, con) -> dict:
    cases = []
    tmp = common.OUT / "multipath"
    tmp.mkdir(parents=True, exist_ok=True)
    for r4, r6 in args.disjoint:
        better = 4 if r4 >= r6 else 6
        rows = {"mptcp": [], "tcp": []}
        fams = set()
        with Topology("disjoint", {"r4": r4, "r6": r6}, tmp) as topo:
            for i in range(args.runs):
                m = topo.run([("mptcp", "mptcp", 4)], args.seconds, args.warmup)
                rows["mptcp"].append(m["mbit"]["mptcp"])
                fams.update(m["families"])
                t = topo.run([("tcp", "tcp", better)], args.seconds, args.warmup)
                rows["tcp"].append(t["mbit"]["tcp"])
                con.print(f"  disjoint R4={r4} R6={r6} run {i + 1}/{args.runs}: MPTCP {rows['mptcp'][-1]:.1f}, "
                          f"TCP over IPv{better} {rows['tcp'][-1]:.1f} Mbit/s (subflows {'+'.join(m['families'])})")
        cases.append({"topology": "disjoint", "r4_mbit": r4, "r6_mbit": r6, "capacity_mbit": r4 + r6,
                      "better_family": better, "subflow_families": sorted(fams),
                      **goodput(rows["mptcp"], rows["tcp"], r4 + r6)})
    for r in args.shared:
        rows = {"mptcp": [], "tcp": [], "share_mptcp": [], "share_tcp": []}
        fams = set()
        with Topology("shared", {"r": r}, tmp) as topo:
            for i in range(args.runs):
                m = topo.run([("mptcp", "mptcp", 4)], args.seconds, args.warmup)
                rows["mptcp"].append(m["mbit"]["mptcp"])
                fams.update(m["families"])
                t = topo.run([("tcp", "tcp", 4)], args.seconds, args.warmup)
                rows["tcp"].append(t["mbit"]["tcp"])
                both = topo.run([("mptcp", "mptcp", 4), ("tcp", "tcp", 4)], args.seconds, args.warmup)["mbit"]
                rows["share_mptcp"].append(both["mptcp"] / (both["mptcp"] + both["tcp"]))
                ctrl = topo.run([("tcp-a", "tcp", 4), ("tcp-b", "tcp", 4)], args.seconds, args.warmup)["mbit"]
                rows["share_tcp"].append(ctrl["tcp-a"] / (ctrl["tcp-a"] + ctrl["tcp-b"]))
                con.print(f"  shared R={r} run {i + 1}/{args.runs}: MPTCP {rows['mptcp'][-1]:.1f}, TCP "
                          f"{rows['tcp'][-1]:.1f} Mbit/s; MPTCP's share against TCP {rows['share_mptcp'][-1]:.2f}, "
                          f"TCP's against TCP {rows['share_tcp'][-1]:.2f}")
        cases.append({"topology": "shared", "r_mbit": r, "capacity_mbit": r, "better_family": 4,
                      "subflow_families": sorted(fams), **goodput(rows["mptcp"], rows["tcp"], r),
                      "mptcp_share_against_tcp": spread(rows["share_mptcp"]),
                      "tcp_share_against_tcp": spread(rows["share_tcp"])})
    return {"command": " ".join(["bench/multipath.py", *sys.argv[1:]]),
            "date": common.now_utc(), "load_before": args.load_before,
            "kernel": os.uname().release, "runs": args.runs, "seconds": args.seconds, "warmup": args.warmup,
            "cpu": common.machine_facts().get("cpu"), "cases": cases}


def advice_figures(res: dict) -> dict:
    """The medians the rationales cite (selector/rules.py reads them from ADVICE_FILE)."""
    dis = [c for c in res["cases"] if c["topology"] == "disjoint"]
    sha = [c for c in res["cases"] if c["topology"] == "shared"]
    if not dis or not sha:
        raise SystemExit("error: --advice needs both a disjoint and a shared case")
    return {
        "source": "bench/RESULTS.md, 'Multipath gain' (bench/multipath.py)",
        "date": res["date"],
        "disjoint_vs_capacity": statistics.median(c["mptcp_vs_capacity"]["median"] for c in dis),
        "disjoint_vs_tcp_low": min(c["mptcp_vs_tcp"]["median"] for c in dis),
        "disjoint_vs_tcp_high": max(c["mptcp_vs_tcp"]["median"] for c in dis),
        "shared_vs_capacity": statistics.median(c["mptcp_vs_capacity"]["median"] for c in sha),
        "shared_share_against_tcp": statistics.median(c["mptcp_share_against_tcp"]["median"] for c in sha),
        "tcp_share_against_tcp": statistics.median(c["tcp_share_against_tcp"]["median"] for c in sha),
    }


def _pairs(text: str) -> list[tuple[float, float]]:
    out = []
    for item in text.split(","):
        a, _, b = item.partition("/")
        try:
            out.append((float(a), float(b)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected R4/R6 pairs in Mbit/s such as 30/30,40/15, got {item!r}")
    return out


def _rates(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected rates in Mbit/s such as 40, got {text!r}") from None


# ------------------------------------------------------------------ its section of RESULTS.md
def _mmm(x: dict, fmt: str = "{:.2f}") -> str:
    """min / median / max of a spread (bench/multipath.py)."""
    return " / ".join(fmt.format(x[k]) for k in ("min", "median", "max"))


def section(runs: list[dict]) -> list[str]:
    """bench/multipath.py: one MPTCP connection over IPv4 + IPv6 against single-path TCP."""
    intro = ["`bench/multipath.py` (root; network namespaces, `tc tbf` bottlenecks, no netem in this kernel):",
             "one MPTCP connection with an IPv4 and an IPv6 subflow, configured by the project's own",
             "`congruency export --format mptcp` script for an `aggregate` hint, against single-path TCP on the",
             "better family. *disjoint*: IPv4 limited to R4 and IPv6 to R6 on separate links; *shared*: both",
             "families through one router whose link to the server is limited to R. Goodput is what the server",
             "received per second after the warm-up; min / median / max over the runs. *Share*: two flows",
             "started together through the shared bottleneck, the first one's part of their sum (MPTCP against",
             "TCP; the control, TCP against TCP). The selector's rationales cite these medians",
             "(selector/measured_gain.json, written by `--advice`)."]
    rows = []
    for r in runs:
        for c in r["cases"]:
            cap = (f"R4 {c['r4_mbit']:g} + R6 {c['r6_mbit']:g}" if c["topology"] == "disjoint"
                   else f"R {c['r_mbit']:g}")
            share = (f"{_mmm(c['mptcp_share_against_tcp'])} (TCP: {_mmm(c['tcp_share_against_tcp'])})"
                     if "mptcp_share_against_tcp" in c else "-")
            rows.append([c["topology"], cap, "+".join(c["subflow_families"]), _mmm(c["mptcp_mbit"], "{:.1f}"),
                         _mmm(c["mptcp_vs_capacity"]), f"IPv{c['better_family']} " + _mmm(c["tcp_mbit"], "{:.1f}"),
                         _mmm(c["mptcp_vs_tcp"]), share])
    out = render.section("Multipath gain: MPTCP over IPv4 + IPv6 (bench/multipath.py)", intro,
                   ["paths", "rates Mbit/s", "subflows", "MPTCP Mbit/s", "MPTCP / capacity", "TCP Mbit/s",
                    "MPTCP / TCP", "share against TCP"], rows, align="lllrrrrr")
    for r in runs:
        out += [f"`{r['command']}` ({r['date']}, kernel {r['kernel']}, {r['runs']} runs of {r['seconds']:g} s, "
                f"{r['warmup']:g} s warm-up, load before {r['load_before']}; {r.get('cpu')}).", ""]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--disjoint", type=_pairs, default=[(30.0, 30.0), (40.0, 15.0)], metavar="R4/R6,...",
                   help="rate pairs of the disjoint topology, Mbit/s (default 30/30,40/15: equal and unequal)")
    p.add_argument("--shared", type=_rates, default=[40.0], metavar="R,...",
                   help="bottleneck rates of the shared topology, Mbit/s (default 40)")
    p.add_argument("--runs", type=int, default=5, help="runs of each measurement (default 5)")
    p.add_argument("--seconds", type=float, default=8.0, help="how long each flow sends (default 8)")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds left out at the start (default 2)")
    p.add_argument("--advice", action="store_true",
                   help=f"also write the medians the selector's rationales cite ({ADVICE_FILE.relative_to(common.ROOT)})")
    p.add_argument("--reuse", action="store_true",
                   help="measure nothing: take the last run's figures (bench/out/multipath.json), e.g. with --advice")
    p.add_argument("--json", action="store_true", help="print this run's figures as JSON on stdout")
    a = p.parse_args(argv)
    con = common.console()
    if a.reuse:
        last = common.OUT / "multipath.json"
        if not last.is_file():
            con.print(f"[red]error: --reuse: {last} does not exist (run the bench first)[/]")
            return 2
        res = json.loads(last.read_text())
        if a.advice:
            ADVICE_FILE.write_text(json.dumps(advice_figures(res), indent=1) + "\n")
            con.print(f"wrote {ADVICE_FILE} from {last}")
        return 0
    why = _why_not()
    if why:
        con.print(f"[red]error: bench/multipath.py {why}; nothing measured[/]")
        return 2
    if not 1 <= a.runs <= 50 or not 2 <= a.seconds <= 60 or not 0 <= a.warmup < a.seconds - 1:
        con.print("[red]error: --runs 1-50, --seconds 2-60 and --warmup below --seconds - 1[/]")
        return 2
    a.load_before = common.load_now()
    res = measure(a, con)
    common.write_json(res, common.OUT / "multipath.json", stdout=a.json)
    if a.advice:
        fig = advice_figures(res)
        ADVICE_FILE.write_text(json.dumps(fig, indent=1) + "\n")
        con.print(f"wrote {ADVICE_FILE}")
    for c in res["cases"]:
        cap = (f"R4 {c['r4_mbit']:g} + R6 {c['r6_mbit']:g}" if c["topology"] == "disjoint" else f"R {c['r_mbit']:g}")
        con.print(f"{c['topology']} ({cap} Mbit/s): MPTCP median {c['mptcp_mbit']['median']:.1f} Mbit/s = "
                  f"{c['mptcp_vs_capacity']['median']:.2f} of capacity, {c['mptcp_vs_tcp']['median']:.2f}x TCP")
    return 0


if __name__ == "__main__":
    sys.exit(main())
