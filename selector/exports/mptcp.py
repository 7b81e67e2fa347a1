"""A POSIX sh script that configures upstream Linux MPTCP (net.mptcp sysctls and the
in-kernel path manager through iproute2's `ip mptcp`) as a hint advises.

Safe to run unread: it first checks everything it relies on (iproute2 with `ip mptcp`, a
kernel with MPTCP, each device present, each address configured on its device) and
changes nothing when a check fails. Then it saves the namespace's MPTCP state (endpoints,
limits, net.mptcp.enabled), applies its own, and on any failure restores what it saved.
Idempotent: it replaces the namespace's endpoints with its own, so running it twice leaves
the same state. It ends by saying where to connect and that applications need MPTCP
sockets. Congestion control is not set: upstream MPTCP runs each subflow with the normal
TCP congestion control (net.ipv4.tcp_congestion_control) and has no coupled algorithm;
OLIA and BALIA existed only in the out-of-tree multipath-tcp.org kernel.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bgp_congruency.selector.exports import validate as v
from bgp_congruency.selector.exports.local import Interface, check, interface

#: The in-kernel path manager accepts at most 8 subflows and 8 accepted ADD_ADDRs.
MAX_LIMIT = 8
ROLES = ("client", "server")
#: On the server, the client's subflow flags become announcements of its own addresses.
SERVER_FLAGS = {"subflow fullmesh": "signal", "subflow": "signal", "subflow backup": "signal backup"}


@dataclass(frozen=True)
class Endpoint:
    address: str
    dev: str
    id: int
    flags: str


@dataclass(frozen=True)
class EndpointSet:
    """The MPTCP state the script sets: what `ip mptcp limits/endpoint show` must read back."""

    subflows: int
    add_addr_accepted: int
    endpoints: tuple[Endpoint, ...]


def endpoints_for(hint: Mapping, ifaces: Sequence[Interface], role: str = "client", families=None) -> EndpointSet:
    """One endpoint per local address whose family the hint uses (and, with `families`,
    only those families: the --endpoints/--k choice), with the hint's flags; limits of two
    subflows per endpoint (at least 2, at most 8), as many ADD_ADDRs."""
    if role not in ROLES:
        raise v.ValidationError(f"role: expected client or server, got {role!r}")
    ifaces = check([interface(i.name, i.address, i.gateway, prefixlen=i.prefixlen) for i in ifaces])
    who = f"AS{hint.get('source_asn')} -> {hint.get('query') or hint.get('dest_asn')}"
    # The client opens a subflow per family the hint uses: each needs a local address. (A
    # server may announce fewer: the client's first subflow reaches its address anyway.) An
    # `unknown` hint with one family's path is advised single-path on it: configured so.
    has = [f for f in (4, 6) if hint.get(f"mptcp_flags_v{f}") is not None]
    if not has:
        raise v.Unanswerable(f"{who}: no known path ({hint.get('reason') or 'the month has none'}); "
                             "no config written")
    used = [f for f in has if families is None or f in families]
    if not used:
        raise v.Unanswerable(f"{who}: none of the chosen families has a path; no config written")
    have = {i.version for i in ifaces}
    lacking = [f for f in used if f not in have]
    if lacking and role == "client":
        raise v.Unanswerable(f"{who}: the hint uses IPv{lacking[0]} (mode {hint.get('mode')}) but no IPv{lacking[0]} "
                             f"interface was given; no config written")
    eps = []
    for i in ifaces:
        flags = hint.get(f"mptcp_flags_v{i.version}")
        if flags is None or i.version not in used:
            continue
        flags = v.mptcp_flags(flags, f"hint mptcp_flags_v{i.version}")
        if role == "server":
            flags = SERVER_FLAGS.get(flags, flags)
        eps.append(Endpoint(i.address, i.name, len(eps) + 1, v.mptcp_flags(flags)))
    n = min(MAX_LIMIT, max(2, 2 * len(eps)))
    return EndpointSet(n, n, tuple(eps))


#: The shell functions every script starts with: preflight helpers, the saved state, rollback.
_PRELUDE = r"""fail() { echo "error: $*" >&2; exit 1; }
# -- preflight: every check before anything changes
command -v ip >/dev/null 2>&1 || fail "ip (iproute2) is not installed"
[ -r /proc/sys/net/mptcp/enabled ] || fail "this kernel has no MPTCP (no /proc/sys/net/mptcp/enabled)"
ip mptcp limits show >/dev/null 2>&1 || fail "ip mptcp does not work here (iproute2 >= 5.7 and root are needed)"
need_addr() {  # DEV ADDR: the device exists and holds the address
  ip link show dev "$1" >/dev/null 2>&1 || fail "device $1 does not exist"
  [ -n "$(ip -o addr show dev "$1" to "$2" 2>/dev/null)" ] || fail "address $2 is not configured on $1"
}
# -- the state found, restored if applying fails
saved_enabled=$(cat /proc/sys/net/mptcp/enabled)
saved_limits=$(ip mptcp limits show | sed 's/subflows/subflow/')
saved_endpoints=$(ip mptcp endpoint show | grep -v implicit)
# The saved lines are split into ip's arguments on purpose (set -f: no globbing).
restore() {
  ip mptcp endpoint flush 2>/dev/null
  printf '%s\n' "$saved_endpoints" | while read -r ep; do
    # shellcheck disable=SC2086
    [ -n "$ep" ] && ip mptcp endpoint add $ep 2>/dev/null
  done
  # shellcheck disable=SC2086
  ip mptcp limits set $saved_limits 2>/dev/null
  sysctl -q -w net.mptcp.enabled="$saved_enabled" 2>/dev/null
}"""


def render(hint: Mapping, ifaces: Sequence[Interface], role: str = "client", notes: Sequence[str] = (),
           families=None) -> str:
    """The script; `notes`: lines the caller adds to its header and final message, and
    `families` the families to configure (the --endpoints/--k choice)."""
    p = endpoints_for(hint, ifaces, role, families)
    head = [
        "#!/bin/sh",
        f"# Linux MPTCP ({role} side) generated by `congruency export --format mptcp` from a "
        f"{v.comment(hint.get('month'))} hint.",
        f"# AS{v.comment(hint.get('source_asn'))} -> {v.comment(hint.get('query') or hint.get('dest_asn'))}: "
        f"class {v.comment(hint.get('hint_class'))}, mode {v.comment(hint.get('mode'))}, "
        f"confidence {v.comment(hint.get('confidence'))}",
        f"# {v.comment(hint.get('rationale'))}",
        f"# {v.comment(hint.get('caveat'))}",
        *(f"# {v.comment(n)}" for n in notes),
        "# Congestion control: nothing to set. Upstream MPTCP runs each subflow with the normal TCP",
        "# congestion control (net.ipv4.tcp_congestion_control) and has no coupled algorithm;",
        "# OLIA and BALIA existed only in the out-of-tree multipath-tcp.org kernel.",
        "# Checks first and changes nothing if a check fails; restores the MPTCP state it found",
        "# if applying fails; idempotent (replaces this namespace's endpoints with these).",
        "set -uf",
        _PRELUDE,
    ]
    checks = [f"need_addr {v.ifname(e.dev)} {v.address(e.address)}" for e in p.endpoints]
    apply = ["sysctl -q -w net.mptcp.enabled=1", "ip mptcp endpoint flush",
             f"ip mptcp limits set subflow {v.integer(p.subflows, 0, MAX_LIMIT, 'subflows')} "
             f"add_addr_accepted {v.integer(p.add_addr_accepted, 0, MAX_LIMIT, 'add_addr_accepted')}"]
    apply += [f"ip mptcp endpoint add {v.address(e.address)} dev {v.ifname(e.dev)} "
              f"id {v.integer(e.id, 1, 255, 'endpoint id')} {v.mptcp_flags(e.flags)}" for e in p.endpoints]
    body = ["# -- apply; on any failure, put back what was found",
            "if ! { " + " &&\n     ".join(apply) + "; }; then",
            "  restore",
            '  fail "applying the MPTCP configuration failed; the endpoints, limits and net.mptcp.enabled '
            'found before were restored"',
            "fi"]
    tail = [f"echo {_quote(v.comment(line))}" for line in _message(hint, p, role, notes)]
    return "\n".join(head + checks + body + tail) + "\n"


def _quote(text: str) -> str:
    """A single-quoted sh word (the text is ours and validated, quoted all the same)."""
    return "'" + text.replace("'", "'\\''") + "'"


def _message(hint: Mapping, p: EndpointSet, role: str, notes: Sequence[str]) -> list[str]:
    """What the script prints when done: what it set, where to connect, which sockets."""
    eps = ", ".join(f"{e.address} ({e.flags})" for e in p.endpoints)
    out = [f"MPTCP {role} configured: endpoints {eps}; limits subflow {p.subflows} "
           f"add_addr_accepted {p.add_addr_accepted}."]
    fams = {4 if ":" not in e.address else 6 for e in p.endpoints}
    remote = {a: v.address(hint[f"addr_v{a}"], a, "remote address") for a in (4, 6)
              if hint.get(f"addr_v{a}") and (a in fams or role == "server")}
    if role == "client":
        if remote:
            first = remote.get(6) or remote[4]
            mapped = f" (or its IPv4 {remote[4]} as ::ffff:{remote[4]})" if 6 in remote and 4 in remote else ""
            out.append(f"Connect to {first}{mapped}, the server that runs the --role server script; "
                       "it announces its other addresses.")
        else:
            out.append(f"Connect to a host of AS{hint.get('dest_asn')} that runs the --role server script.")
        out.append("Applications need MPTCP sockets: run them under mptcpize (mptcpize run CMD), or open "
                   "socket(AF_INET6, SOCK_STREAM, IPPROTO_MPTCP): an AF_INET6 socket carries IPv4 and "
                   "IPv6 subflows in one connection.")
    else:
        out.append("Servers need MPTCP listening sockets: run them under mptcpize (mptcpize run CMD), or listen on "
                   "socket(AF_INET6, SOCK_STREAM, IPPROTO_MPTCP) with IPV6_V6ONLY off, so clients of "
                   "either family reach the same socket.")
    out += list(notes)
    return out
