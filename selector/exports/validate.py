"""The one gate between input and generated scripts/config files: strict validators that
return a canonical value or raise ValidationError naming what is wrong.

Whitelists, not escaping: an interface name, address or number that passes can be written
verbatim into a shell command or an INI line, with nothing left to interpret.
"""
from __future__ import annotations

import ipaddress
import re

from bgp_congruency.common.errors import BadInput

#: Linux interface names: at most 15 bytes (IFNAMSIZ - 1); this subset never needs quoting.
IFNAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}")
NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
#: `ip mptcp endpoint` flags (iproute2 ip-mptcp(8)); fullmesh only together with subflow.
MPTCP_FLAGS = ("subflow", "signal", "backup", "fullmesh")


class ValidationError(BadInput):
    """A value that must not reach a generated file; one line naming it."""


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def ifname(value, what: str = "interface name") -> str:
    if not isinstance(value, str) or not IFNAME_RE.fullmatch(value) or value in (".", ".."):
        raise ValidationError(f"{what}: expected 1-15 of A-Z a-z 0-9 _ . - (a Linux interface name), "
                              f"got {_shown(value)}")
    return value


def name(value, what: str = "name") -> str:
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        raise ValidationError(f"{what}: expected 1-64 of A-Z a-z 0-9 _ . -, got {_shown(value)}")
    return value


class Unanswerable(ValidationError):
    """A config the data cannot back (no known path, a needed family without an interface):
    nothing is written; its own exit code (3), so a script can tell it from a typo."""

    exit_code = 3


def address(value, version: int | None = None, what: str = "address") -> str:
    """A usable unicast IP address in canonical text. Refused: unspecified, multicast,
    broadcast, loopback, link-local (a scope would be needed; none is accepted), and
    IPv4-mapped IPv6 (give the IPv4 address it stands for: it is one)."""
    try:
        if not isinstance(value, str) or "%" in value or value != value.strip():
            raise ValueError
        a = ipaddress.ip_address(value)
    except ValueError:
        raise ValidationError(f"{what}: not an IP address: {_shown(value)}") from None
    if a.version == 6 and a.ipv4_mapped is not None:
        raise ValidationError(f"{what}: {_shown(value)} is an IPv4-mapped IPv6 address; give the IPv4 "
                              f"address {a.ipv4_mapped} as such")
    if version is not None and a.version != version:
        raise ValidationError(f"{what}: expected an IPv{version} address, got {_shown(value)}")
    if a.is_unspecified or a.is_multicast:
        raise ValidationError(f"{what}: not a unicast address: {_shown(value)}")
    if a == ipaddress.IPv4Address("255.255.255.255"):
        raise ValidationError(f"{what}: the broadcast address is not a host address: {_shown(value)}")
    if a.is_loopback:
        raise ValidationError(f"{what}: a loopback address cannot reach another host: {_shown(value)}")
    if a.is_link_local:
        raise ValidationError(f"{what}: a link-local address needs an interface scope, which tunnel configs "
                              f"cannot carry; give a global address: {_shown(value)}")
    return str(a)


def integer(value, lo: int, hi: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValidationError(f"{what}: expected an integer {lo}..{hi}, got {_shown(value)}")
    return value


def ip_version(value, what: str = "ip_ver") -> int:
    if isinstance(value, bool) or value not in (4, 6):
        raise ValidationError(f"{what}: expected 4 or 6, got {_shown(value)}")
    return value


def mptcp_flags(value, what: str = "mptcp flags") -> str:
    words = value.split(" ") if isinstance(value, str) else None
    if (not words or any(w not in MPTCP_FLAGS for w in words) or len(set(words)) != len(words)
            or ("signal" not in words and "subflow" not in words)
            or ("fullmesh" in words and "signal" in words)):
        raise ValidationError(f"{what}: expected ip-mptcp endpoint flags (subflow|signal [backup] "
                              f"[fullmesh, with subflow only]), got {_shown(value)}")
    return " ".join(words)


def comment(text) -> str:
    """Free text for a comment line: printable ASCII only, so it cannot end the comment."""
    s = "".join(c if " " <= c <= "~" else "?" for c in str(text))
    return s
