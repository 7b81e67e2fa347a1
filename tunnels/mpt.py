"""An MPT connection file (GRE-in-UDP multipath tunnel, INI format) with one [path_N]
section per underlay path: interface_name, ip_ver, public_ipaddr, remote_ipaddr,
gw_ipaddr, weight_out, keepalive_time, dead_time, status.

weight_out: MPT spreads packets over the paths in proportion to it (>= 1). status: MPT's
codes, 0 = OK (in use), 255 = disabled. MPT has no standby state, so a backup path is
written disabled (status 255, with a comment); set it to 0 to fail over. Tunnel-level keys
of the [connection] section (tunnel addresses, ports) belong to the MPT deployment and are
left to the operator.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from tunnels import validate as v
from tunnels.local import Interface, check, interface

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


def render(ps: Sequence[MptPath], header: Sequence[str] = (), name: str = "congruency") -> str:
    lines = [f"; {v.comment(h)}" for h in header]
    lines += ["[connection]", f"name = {v.name(name, 'connection name')}", f"path_count = {len(ps)}", ""]
    for n, p in enumerate(ps):
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
