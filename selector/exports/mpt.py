"""MPT connection files (GRE-in-UDP multipath tunnel, INI format): one connection per remote
peer, each with its tunnel and one [path_N] per underlay path.

[connection] (MPT user guide 2.6.3.1): name; ip_ver, ip_local, ip_remote: the tunnel's
addresses (this side's and the peer's tunnel interface address); port_local, port_remote:
the UDP port of the GRE-in-UDP tunnel on both sides; path_count; network_count (0: no
routed networks behind the tunnel; add [net_N] sections to route some). Keys this file does
not set (the peer's permission to change the connection at runtime, authentication) keep
MPT's defaults and are the operator's to add.
[path_N] (2.6.3.2): interface_name, ip_ver, public_ipaddr, remote_ipaddr, gw_ipaddr,
weight_out, keepalive_time, dead_time, status. weight_out: MPT spreads packets over the
paths in proportion to it (>= 1). status: MPT's codes, 0 = OK (in use), 255 = disabled.
MPT has no standby state, so a backup path is written disabled (status 255, with a
comment); set it to 0 to fail over.
MPT's guide recommends one connection per file (`mpt delete FILE` removes every connection
of a file): several peers give several files.
"""
from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from bgp_congruency.selector.exports import validate as v
from bgp_congruency.selector.exports.local import Interface, check, interface

KEEPALIVE_S = 5  # MPT's example configuration
DEAD_S = 11


@dataclass(frozen=True)
class MptPath:
    interface_name: str
    ip_ver: int
    public_ipaddr: str
    remote_ipaddr: str
    gw_ipaddr: str
    weight_out: int
    keepalive_time: int
    dead_time: int
    status: int


KEYS = tuple(f.name for f in fields(MptPath))
#: The tunnel's UDP port on both sides unless --tunnel-port says otherwise.
PORT = 65050


@dataclass(frozen=True)
class Connection:
    name: str
    ip_local: str
    ip_remote: str
    port: int
    paths: tuple[MptPath, ...]


def connections(hints: Sequence[Mapping], ifaces: Sequence[Interface], local: str | None,
                remotes: Mapping[str | None, str | None], chosen: set | None = None, port: int = PORT,
                keepalive: int = KEEPALIVE_S, dead: int = DEAD_S) -> list[Connection]:
    """One connection per remote peer (a hint's endpoint, or the --to host) that has a path
    to configure: `local` is this side's tunnel address, `remotes` maps each peer (endpoint
    name, None for --to) to its tunnel address."""
    out = []
    for peer in dict.fromkeys(h.get("endpoint") for h in hints):
        group = [h for h in hints if h.get("endpoint") == peer]
        try:
            ps = paths(group, ifaces, chosen, keepalive, dead)
        except v.Unanswerable:
            if chosen is not None:  # none of this endpoint's paths was chosen
                continue
            raise
        who = f"endpoint {peer}" if peer else "the --to host"
        if local is None:
            raise v.ValidationError("--tunnel-local: MPT needs this side's tunnel address")
        if remotes.get(peer) is None:
            raise v.ValidationError(f"{who}: MPT needs its tunnel address ("
                                    + ("`tunnel = ADDR` in the endpoints file)" if peer else "--tunnel-remote ADDR)"))
        a = v.address(local, what="--tunnel-local")
        b = v.address(remotes[peer], ipaddress.ip_address(a).version, f"{who}: tunnel address")
        if ipaddress.ip_address(a) == ipaddress.ip_address(b):
            raise v.ValidationError(f"{who}: its tunnel address {b} is --tunnel-local's: the two ends of "
                                    "a tunnel need different addresses")
        out.append(Connection(v.name(peer or "congruency", "connection name"), a, b,
                              v.integer(port, 1, 65535, "--tunnel-port"), tuple(ps)))
    if not out:
        raise v.Unanswerable("no chosen path to configure; no config written")
    return out


def paths(hints: Sequence[Mapping], ifaces: Sequence[Interface], chosen: set | None = None,
          keepalive: int = KEEPALIVE_S, dead: int = DEAD_S) -> list[MptPath]:
    """One path per hint and family the hint gives an MPT weight (and, with `chosen`, only
    the chosen (endpoint, family) pairs), from the first local interface of that family."""
    ifaces = check([interface(i.name, i.address, i.gateway, prefixlen=i.prefixlen) for i in ifaces])
    keepalive = v.integer(keepalive, 1, 3600, "keepalive_time")
    dead = v.integer(dead, keepalive + 1, 36000, "dead_time (more than keepalive_time)")
    out = []
    for h in hints:
        for afi in (4, 6):
            weight, status = h.get(f"mpt_weight_v{afi}"), h.get(f"mpt_status_v{afi}")
            if weight is None or (chosen is not None and (h.get("endpoint"), afi) not in chosen):
                continue
            local = next((i for i in ifaces if i.version == afi), None)
            if local is None:
                raise v.Unanswerable(f"the hint uses an IPv{afi} path but no IPv{afi} interface was given; "
                                     "no config written")
            if local.gateway is None:
                raise v.ValidationError(f"interface {local.name}: MPT needs its gateway (NAME=ADDR@GATEWAY)")
            remote = h.get(f"addr_v{afi}")
            if remote is None:
                raise v.ValidationError(f"no remote IPv{afi} address for {h.get('query') or h.get('endpoint')}: "
                                        "MPT needs the tunnel endpoint's addresses (--to ADDR or --endpoints)")
            out.append(MptPath(local.name, afi, local.address, v.address(remote, afi, "remote address"),
                               local.gateway, v.integer(weight, 1, 1000, "weight_out"), keepalive, dead,
                               v.integer(status, 0, 255, "status")))
    if not out:
        unknown = [h for h in hints if h.get("hint_class") == "unknown"]
        why = f": {unknown[0].get('reason')}" if unknown and unknown[0].get("reason") else ""
        raise v.Unanswerable(f"no known path to configure{why}; no config written")
    return out


def render(conn: Connection, header: Sequence[str] = ()) -> str:
    ver = ipaddress.ip_address(v.address(conn.ip_local, what="tunnel address")).version
    lines = [f"; {v.comment(h)}" for h in header]
    lines += ["[connection]", f"name = {v.name(conn.name, 'connection name')}", f"ip_ver = {v.ip_version(ver)}",
              f"ip_local = {v.address(conn.ip_local, ver)}", f"port_local = {v.integer(conn.port, 1, 65535, 'port')}",
              f"ip_remote = {v.address(conn.ip_remote, ver)}", f"port_remote = {v.integer(conn.port, 1, 65535, 'port')}",
              f"path_count = {len(conn.paths)}", "network_count = 0", ""]
    for n, p in enumerate(conn.paths):
        if p.status == 255:
            lines.append("; backup path: disabled until the others fail (set status = 0 to use it)")
        lines.append(f"[path_{n}]")
        vals = (v.ifname(p.interface_name), v.ip_version(p.ip_ver),
                v.address(p.public_ipaddr, p.ip_ver), v.address(p.remote_ipaddr, p.ip_ver),
                v.address(p.gw_ipaddr, p.ip_ver), v.integer(p.weight_out, 1, 1000, "weight_out"),
                v.integer(p.keepalive_time, 1, 3600, "keepalive_time"),
                v.integer(p.dead_time, 2, 36000, "dead_time"), v.integer(p.status, 0, 255, "status"))
        lines += [f"{k} = {val}" for k, val in zip(KEYS, vals)] + [""]
    return "\n".join(lines)
