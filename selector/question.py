"""The path selector's question: a source (ASN or GROUP:ASN) and destinations (an ASN, a
prefix, an address, one host's IPv4 and IPv6 addresses, or an endpoints file), parsed and
checked before any month is read; every bad input is one HintError naming it."""
from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bgp_congruency.common.config import ConfigError, read_toml
from bgp_congruency.common.errors import BadInput

ASN_RE = re.compile(r"(?:AS|as)?(\d{1,10})")
VP_RE = re.compile(r"([A-Za-z0-9_.-]{1,64}):(?:AS|as)?(\d{1,10})")
MAX_ASN = 2**32 - 1
MAX_CANDIDATE_PATHS = 64


class HintError(BadInput):
    """Bad input (argument, month, file): one line naming what is wrong; exit 2."""


# ------------------------------------------------------------------ inputs
def parse_asn(text: str, what: str = "ASN") -> int:
    m = ASN_RE.fullmatch(str(text).strip())
    if not m or not 1 <= int(m.group(1)) <= MAX_ASN:
        raise HintError(f"{what}: expected an AS number 1..{MAX_ASN} (e.g. 6939 or AS6939), got {text!r}")
    return int(m.group(1))


@dataclass(frozen=True)
class Source:
    asn: int
    group: str | None = None  # a VP's collector group, when given as GROUP:ASN


def parse_source(text: str) -> Source:
    """`ASN`, `AS6939` or `GROUP:ASN` (one VP)."""
    m = VP_RE.fullmatch(str(text).strip())
    if m:
        return Source(parse_asn(m.group(2), "--from"), m.group(1))
    return Source(parse_asn(text, "--from"))


#: What a declared neighbour can be to the source (`--via4 AS:peer`); the default is provider.
NEIGHBOUR_IS = ("provider", "peer", "customer")


@dataclass(frozen=True)
class Neighbour:
    """An AS the source hands traffic to in one family: what it is to the source (declared;
    the month's relationships win where they have the link) and its place in the declared
    order (0: the primary)."""

    asn: int
    rel: str = "provider"
    order: int = 0


@dataclass(frozen=True)
class Evidence:
    """What the operator knows of its source beyond the month: per family the neighbours it
    hands traffic to (`via`), and per (family, destination AS) the neighbour a trace showed
    toward it (`first_hop`); `how` says where it came from, and `left_out` what of it was not
    used and why (traces of other hosts in an Atlas measurement), for the answer's notes."""

    via: dict[int, tuple[Neighbour, ...]] = field(default_factory=dict)
    first_hop: dict[tuple[int, int], int] = field(default_factory=dict)
    how: str = "declared"
    left_out: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.first_hop) or any(self.via.values())

    def merged(self, other: "Evidence") -> "Evidence":
        """This evidence and `other`'s: neighbours of both (ours first), first hops of both."""
        via = {}
        for afi in (4, 6):
            mine = list(self.via.get(afi, ()))
            have = {n.asn for n in mine}
            mine += [Neighbour(n.asn, n.rel, len(mine) + i) for i, n in enumerate(other.via.get(afi, ()))
                     if n.asn not in have]
            if mine:
                via[afi] = tuple(mine)
        how = other.how if not self else self.how if not other or other.how == self.how else f"{self.how} and {other.how}"
        return Evidence(via, {**other.first_hop, **self.first_hop}, how, self.left_out + other.left_out)


def parse_via(text, afi: int, what: str | None = None) -> tuple[Neighbour, ...]:
    """`AS[:provider|peer|customer][,AS...]` (or a list of such strings): the source's
    neighbours in family `afi`, primary first."""
    what = what or f"--via{afi}"
    items = text if isinstance(text, (list, tuple)) else str(text).split(",")
    out: list[Neighbour] = []
    for item in items:
        item = str(item).strip()
        if not item:
            continue
        asn_text, _, rel = item.partition(":")
        rel = rel.strip().lower() or "provider"
        if rel not in NEIGHBOUR_IS:
            raise HintError(f"{what}: {item!r}: the relationship must be provider, peer or customer")
        asn = parse_asn(asn_text, what)
        if any(n.asn == asn for n in out):
            raise HintError(f"{what}: AS{asn} is given twice")
        out.append(Neighbour(asn, rel, len(out)))
    if not out:
        raise HintError(f"{what}: expected AS[:provider|peer|customer][,AS...], got {text!r}")
    return tuple(out)


def evidence_of(via4=None, via6=None, what: str = "") -> Evidence:
    """Declared neighbours (either may be None) as Evidence."""
    via = {}
    for afi, text in ((4, via4), (6, via6)):
        if text is not None and text != []:
            via[afi] = parse_via(text, afi, f"{what}via{afi}" if what else None)
    return Evidence(via, {}, "declared")


@dataclass
class Destination:
    """What the question names: an AS, or a host/prefix per family (resolved to origins)."""

    query: str
    asn: int | None = None
    nets: dict[int, ipaddress._BaseNetwork] = field(default_factory=dict)  # afi -> network asked
    addrs: dict[int, str] = field(default_factory=dict)  # afi -> address text (hosts only)
    endpoint: str | None = None
    #: The endpoint's MPT tunnel address (endpoints file `tunnel`), for `export --format mpt`.
    tunnel: str | None = None


def parse_destination(texts: Sequence[str] | str, endpoint: str | None = None) -> Destination:
    """An ASN, a prefix or an address; or one IPv4 and one IPv6 address/prefix of one host."""
    texts = [texts] if isinstance(texts, str) else list(texts)
    if not texts or len(texts) > 2:
        raise HintError(f"--to: expected one destination, or an IPv4 and an IPv6 address of one host; got {len(texts)}")
    dest = Destination(query=",".join(texts), endpoint=endpoint)
    for t in texts:
        t = str(t).strip()
        if ASN_RE.fullmatch(t):
            if len(texts) > 1:
                raise HintError(f"--to: an ASN ({t}) cannot be combined with another destination")
            dest.asn = parse_asn(t, "--to")
            return dest
        try:
            if "%" in t:
                raise ValueError("scoped address")
            if "/" in t:
                net = ipaddress.ip_network(t, strict=True)
            else:
                addr = ipaddress.ip_address(t)
                net = ipaddress.ip_network(addr)
                dest.addrs[addr.version] = str(addr)
        except ValueError as exc:
            raise HintError(f"--to: not an ASN, prefix or IP address: {t!r} ({exc})") from None
        mapped = getattr(net.network_address, "ipv4_mapped", None)
        if mapped is not None:  # ::ffff:a.b.c.d is an IPv4 host: its IPv6 paths say nothing of it
            raise HintError(f"--to: {t} is an IPv4-mapped IPv6 address; give the IPv4 address {mapped} as such")
        if net.version in dest.nets:
            raise HintError(f"--to: two IPv{net.version} destinations ({dest.nets[net.version]}, {t}); "
                            "give at most one per family")
        if net.prefixlen == 0:
            raise HintError(f"--to: {t} is a default route, not a destination")
        dest.nets[net.version] = net
    return dest


def _endpoints_file(p: Path) -> dict:
    """The endpoints file's TOML, its errors as the selector's (one line naming the file)."""
    try:
        return read_toml(p, "endpoints file")
    except ConfigError as exc:
        raise HintError(str(exc)) from None


def load_endpoints(path: str | Path) -> list[Destination]:
    """Candidate tunnel endpoints from TOML: [[endpoint]] name = "...", ipv4 = "...", ipv6 = "...",
    and optionally tunnel = "..." (its MPT tunnel address)."""
    p = Path(path)
    data = _endpoints_file(p)
    eps = data.get("endpoint")
    if set(data) - {"endpoint", "source"} or not isinstance(eps, list) or not eps:
        raise HintError(f"{p}: expected one or more [[endpoint]] tables (name, ipv4, ipv6) and at most a "
                        "[source] table (asn, via4, via6)")
    out, names = [], set()
    for i, ep in enumerate(eps, 1):
        if not isinstance(ep, dict) or set(ep) - {"name", "ipv4", "ipv6", "tunnel"}:
            raise HintError(f"{p}: endpoint {i}: only the keys name, ipv4, ipv6, tunnel are allowed")
        name = ep.get("name", f"endpoint-{i}")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name) or name in names:
            raise HintError(f"{p}: endpoint {i}: name must be 1-64 of A-Z a-z 0-9 _ . - and unique, got {name!r}")
        names.add(name)
        addrs = []
        for key, version in (("ipv4", 4), ("ipv6", 6)):
            v = ep.get(key)
            if not isinstance(v, str):
                raise HintError(f"{p}: endpoint {name}: {key} is required (a string)")
            try:
                a = ipaddress.ip_address(v)
            except ValueError:
                raise HintError(f"{p}: endpoint {name}: {key} is not an IP address: {v!r}") from None
            if a.version != version:
                raise HintError(f"{p}: endpoint {name}: {key} is an IPv{a.version} address: {v!r}")
            if getattr(a, "ipv4_mapped", None) is not None:  # the file's key and value, as written
                raise HintError(f"{p}: endpoint {name}: ipv6 {v!r} is an IPv4-mapped address (of {a.ipv4_mapped}): "
                                "its IPv6 paths say nothing of the host; give the host's own IPv6 address")
            addrs.append(str(a))
        try:
            dest = parse_destination(addrs, endpoint=name)
        except HintError as exc:
            raise HintError(f"{p}: endpoint {name}: {str(exc).removeprefix('--to: ')}") from None
        if "tunnel" in ep:
            try:
                dest.tunnel = str(ipaddress.ip_address(ep["tunnel"]))
            except (TypeError, ValueError):
                raise HintError(f"{p}: endpoint {name}: tunnel is not an IP address: {ep['tunnel']!r}") from None
        out.append(dest)
    return out


def load_source(path: str | Path) -> tuple[int | None, Evidence]:
    """The [source] table of an endpoints file: the source host's AS (`asn`, or None) and its
    neighbours per family (`via4 = "3356,174:peer"` or a list); (None, empty Evidence) when
    the file has none."""
    p = Path(path)
    data = _endpoints_file(p)
    src = data.get("source")
    if src is None:
        return None, Evidence()
    if not isinstance(src, dict) or set(src) - {"asn", "via4", "via6"}:
        raise HintError(f"{p}: [source]: only the keys asn, via4 and via6 are allowed (via: AS[:provider|peer|customer],...)")
    asn = None
    if "asn" in src:
        try:
            asn = parse_source(str(src["asn"])).asn
        except HintError as exc:
            raise HintError(f"{p}: [source] asn: {str(exc).split(': ', 1)[-1]}") from None
    return asn, evidence_of(src.get("via4"), src.get("via6"), what=f"{p}: [source] ")
