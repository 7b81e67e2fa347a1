"""Traceroutes in the formats this field uses, read into one model (`Trace`): RIPE Atlas
results (JSON, parsed with RIPE's own `ripe-atlas-sagan`), scamper's warts (through
`sc_warts2json` of the scamper package), or a live `scamper` run from this host.

A trace keeps, per TTL, the address that answered each probe (None: no answer), so the
stable-path rule (dataplane/stable.py) sees lost probes and load-balanced hops as they were.
An Atlas reply marked `late` (it answers an earlier probe) is no answer, as sagan reads it.
Every problem with a file is one line naming it (TraceError, exit 2).
"""
from __future__ import annotations

import ipaddress
import json
import logging
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ripe.atlas.sagan import TracerouteResult

from bgp_congruency.common.errors import BadInput

#: scamper's trace methods this command runs (Paris traceroute keeps one flow per trace).
METHODS = ("icmp-paris", "udp-paris", "tcp")
#: The first bytes of every warts record.
WARTS_MAGIC = b"\x12\x05"
#: How long one live scamper run may take (it waits 1 s per unanswered probe).
LIVE_TIMEOUT_S = 300


class TraceError(BadInput):
    """A traceroute file or run that cannot be used; the message names it (exit 2)."""


@dataclass(frozen=True)
class Trace:
    family: int
    src: str | None
    dst: str
    method: str
    #: Per TTL from 1: the address that answered each probe at that TTL (None: no answer).
    hops: tuple[tuple[str | None, ...], ...]
    #: Where it came from (file and position), for messages.
    origin: str


def address(addr: str, where: str) -> tuple[str, int]:
    """(the address in its canonical spelling, its family), or TraceError naming `where`.
    Every address of a Trace is canonical, so equal addresses compare equal as text."""
    try:
        ip = ipaddress.ip_address(str(addr).strip())
    except ValueError:
        raise TraceError(f"{where}: {addr!r} is not an IP address") from None
    return str(ip), ip.version


def _canon(addr: str | None) -> str | None:
    """An answering address, canonical where it parses (kept as given otherwise)."""
    if not addr:
        return None
    try:
        return str(ipaddress.ip_address(addr))
    except ValueError:
        return addr


def _by_ttl(pairs: Iterable[tuple[int, str | None]]) -> tuple[tuple[str | None, ...], ...]:
    """(ttl, address) answers -> one tuple per TTL 1..max (a TTL nobody answered: (None,))."""
    per: dict[int, list[str | None]] = {}
    for ttl, addr in pairs:
        if 1 <= ttl <= 255:
            per.setdefault(ttl, []).append(_canon(addr))
    last = max((t for t, a in per.items() if any(a)), default=0)
    return tuple(tuple(per.get(t) or (None,)) for t in range(1, last + 1))


def read_atlas(path: str | Path) -> list[Trace]:
    """RIPE Atlas traceroute results: a JSON array, or one JSON object per line (the API's
    and the daily dumps' formats)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise TraceError(f"{p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise TraceError(f"{p}: not text (RIPE Atlas results are JSON)") from None
    if not text.strip():
        raise TraceError(f"{p}: empty (no RIPE Atlas traceroute results)")
    if text.lstrip().startswith("["):
        try:
            raws = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{p}: not complete JSON ({exc.msg} at line {exc.lineno}): truncated?") from None
    else:  # one result a line: the line a cut or a bad byte is on
        raws = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                raws.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise TraceError(f"{p}: line {n} is not complete JSON ({exc.msg} at column {exc.colno}): "
                                 "truncated?") from None
    out = []
    sagan = logging.getLogger("ripe.atlas.sagan")
    level, sagan.level = sagan.level, logging.CRITICAL  # it logs every unreachable hop
    try:
        for i, raw in enumerate(raws if isinstance(raws, list) else [raws], 1):
            where = f"{p} result {i}"
            if not isinstance(raw, dict) or raw.get("type") != "traceroute":
                got = (f"a JSON {type(raw).__name__}" if not isinstance(raw, dict) else
                       "a JSON object without a RIPE Atlas result type" if raw.get("type") is None else
                       f"a {raw['type']!r} result")
                raise TraceError(f"{where}: {got}, not a traceroute (RIPE Atlas type 'traceroute')")
            try:
                r = TracerouteResult(raw)
            except Exception as exc:  # sagan raises its own and plain errors on malformed results
                raise TraceError(f"{where}: not a RIPE Atlas traceroute result ({exc})") from None
            if not r.destination_address:
                raise TraceError(f"{where}: no destination address (dst_addr)")
            dst, fam = address(r.destination_address, where)
            hops = _by_ttl((h.index, pk.origin) for h in (r.hops or []) for pk in (h.packets or []))
            out.append(Trace(fam, _canon(r.origin or r.source_address), dst,
                             f"{(r.protocol or '?').lower()}{'-paris' if raw.get('paris_id') else ''}", hops, where))
    finally:
        sagan.level = level
    return out


def read_warts(path: str | Path) -> list[Trace]:
    """scamper's warts file, through sc_warts2json (the scamper package's own reader)."""
    p = Path(path)
    if not p.is_file():
        raise TraceError(f"{p}: no such file")
    if p.stat().st_size == 0:
        raise TraceError(f"{p}: empty (no warts records)")
    with open(p, "rb") as fh:
        if fh.read(2) != WARTS_MAGIC:
            raise TraceError(f"{p}: not a warts file (warts records start with 0x1205)")
    tool = shutil.which("sc_warts2json")
    if tool is None:
        raise TraceError(f"{p}: reading warts needs sc_warts2json from scamper (apt-get install scamper)")
    try:
        r = subprocess.run([tool, str(p)], capture_output=True, text=True, timeout=LIVE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise TraceError(f"{p}: sc_warts2json did not finish in {LIVE_TIMEOUT_S} s") from None
    err = r.stderr.strip()
    if r.returncode or err:
        first = err.splitlines()[0] if err else f"exit {r.returncode}"
        raise TraceError(f"{p}: truncated or corrupt warts file (sc_warts2json: {first})")
    out, kinds = [], set()
    for i, line in enumerate(r.stdout.splitlines(), 1):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            raise TraceError(f"{p}: sc_warts2json wrote a line that is not JSON (record {i})") from None
        kinds.add(obj.get("type"))
        if obj.get("type") != "trace":
            continue
        where = f"{p} trace {len(out) + 1}"
        dst = obj.get("dst")
        if not dst:
            raise TraceError(f"{where}: no destination address")
        hops = _by_ttl((h.get("probe_ttl", 0), h.get("addr")) for h in obj.get("hops") or [])
        dst, fam = address(dst, where)
        out.append(Trace(fam, _canon(obj.get("src")), dst, obj.get("method", "?"), hops, where))
    if not out:
        found = ", ".join(sorted(k for k in kinds if k)) or "none"
        raise TraceError(f"{p}: holds no traceroute (record types: {found}); `scamper -c trace` writes them")
    return out


def run_scamper(targets: list[str], method: str = "icmp-paris", count: int = 5, out: Path | None = None) -> list[Trace]:
    """`count` traceroutes to each target from this host with scamper (root), kept in a
    warts file (`out`, else a temporary one) and read back like any other."""
    if method not in METHODS:
        raise TraceError(f"--method: one of {', '.join(METHODS)}, got {method!r}")
    if not 1 <= count <= 50:
        raise TraceError(f"--count: 1..50 traceroutes per target, got {count}")
    tool = shutil.which("scamper")
    if tool is None:
        raise TraceError("scamper is not installed: apt-get install scamper (Debian), or give --atlas/--warts files")
    for t in targets:
        address(t, "--live")
    with tempfile.TemporaryDirectory(prefix="congruency-trace-") as tmp:
        warts = Path(out) if out else Path(tmp) / "live.warts"
        cmds = [a for t in targets for _ in range(count) for a in ("-I", f"trace -P {method} -w 1 -q 1 {t}")]
        try:
            r = subprocess.run([tool, "-O", "warts", "-o", str(warts), *cmds], capture_output=True, text=True,
                               timeout=LIVE_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # run() has killed scamper
            raise TraceError(f"scamper did not finish {len(cmds) // 2} traceroute(s) in {LIVE_TIMEOUT_S} s; "
                             "try fewer (--count) or another --method") from None
        if r.returncode:
            raise TraceError(f"scamper failed (exit {r.returncode}): {(r.stderr.strip().splitlines() or ['?'])[0]}")
        return read_warts(warts)
