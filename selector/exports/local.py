"""The operator's own side: interfaces with one address each (and a gateway for MPT), from a
small TOML file or `--interface NAME=ADDR[@GATEWAY]` flags.

    [[interface]]
    name = "eth0"
    address = "192.0.2.10"
    gateway = "192.0.2.1"    # MPT's gw_ipaddr; optional for MPTCP
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from bgp_congruency.common.config import ConfigError, read_toml
from bgp_congruency.selector.exports import validate as v


@dataclass(frozen=True)
class Interface:
    name: str
    address: str
    gateway: str | None = None
    prefixlen: int | None = None  # ADDR/LEN given: the gateway must be inside that subnet

    @property
    def version(self) -> int:
        return ipaddress.ip_address(self.address).version


def interface(name, address, gateway=None, where: str = "interface", prefixlen=None) -> Interface:
    """A validated Interface (the gateway, when given, in the address's family and, with
    ADDR/LEN, inside its subnet). `address` may be ADDR/LEN."""
    n = v.ifname(name, f"{where}: name")
    if isinstance(address, str) and "/" in address:
        address, _, plen = address.partition("/")
        if not plen.isdigit():
            raise v.ValidationError(f"{where} {n}: address: expected ADDR/LEN, got {address}/{plen}")
        prefixlen = int(plen)
    a = v.address(address, what=f"{where} {n}: address")
    ver = ipaddress.ip_address(a).version
    net = None
    if prefixlen is not None:  # a host's address: not the subnet's own, not its broadcast
        prefixlen = v.integer(prefixlen, 0, 32 if ver == 4 else 128, f"{where} {n}: prefix length")
        net = ipaddress.ip_interface(f"{a}/{prefixlen}").network
        host = ipaddress.ip_address(a)
        if net.num_addresses > 2 and host == net.network_address:
            raise v.ValidationError(f"{where} {n}: address {a} is the network address of {net}, not a host's")
        if ver == 4 and net.num_addresses > 2 and host == net.broadcast_address:
            raise v.ValidationError(f"{where} {n}: address {a} is the broadcast address of {net}, not a host's")
    g = v.address(gateway, ver, f"{where} {n}: gateway") if gateway is not None else None
    if g is not None and net is not None:
        if ipaddress.ip_address(g) not in net:
            raise v.ValidationError(f"{where} {n}: gateway {g} is outside the interface's subnet {net}")
    return Interface(n, a, g, prefixlen)


def parse_flag(text: str) -> Interface:
    """`NAME=ADDR[/LEN]` or `NAME=ADDR[/LEN]@GATEWAY`."""
    name, sep, rest = str(text).partition("=")
    if not sep:
        raise v.ValidationError(f"--interface: expected NAME=ADDR[/LEN][@GATEWAY], got {text!r}")
    addr, _, gw = rest.partition("@")
    return interface(name, addr, gw or None, "--interface")


def load(path: str | Path) -> list[Interface]:
    p = Path(path)
    try:
        data = read_toml(p, "interfaces file")
    except ConfigError as exc:
        raise v.ValidationError(str(exc)) from None
    items = data.get("interface")
    if set(data) - {"interface"} or not isinstance(items, list) or not items:
        raise v.ValidationError(f"{p}: expected one or more [[interface]] tables (name, address, gateway)")
    out = []
    for i, it in enumerate(items, 1):
        if not isinstance(it, dict) or set(it) - {"name", "address", "gateway"}:
            raise v.ValidationError(f"{p}: interface {i}: only the keys name, address, gateway are allowed")
        out.append(interface(it.get("name"), it.get("address"), it.get("gateway"), f"{p}: interface {i}"))
    return check(out)


def check(ifaces: list[Interface]) -> list[Interface]:
    seen = set()
    for i in ifaces:
        if i.address in seen:
            raise v.ValidationError(f"interface {i.name}: address {i.address} given twice")
        seen.add(i.address)
    return ifaces
