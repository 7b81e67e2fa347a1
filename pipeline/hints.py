"""The path selector over a month's published tables: `advise` answers one question
(source -> destination, optionally ranking candidate tunnel endpoints), `publish` builds the
month's `hints` table (one row per pair) and swaps it in atomically.

Definitions (class, confidence, advice, the k-path choice) are congruency/selector.py;
this module only reads Parquet (DuckDB), resolves destinations and writes the table.

Library use:

    from common.config import load
    from pipeline.hints import advise
    answer = advise(load(), "6939", ["2001:db8::1"])      # latest published month
    answer["hints"][0]["hint_class"], answer["hints"][0]["mode"]
"""
from __future__ import annotations

import ipaddress
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from common import duck, published
from common.duck import quote
from common.config import Config, ConfigError, read_toml
from common.tables import HINTS
from pipeline.steps import sql_type
from congruency import selector

ASN_RE = re.compile(r"(?:AS|as)?(\d{1,10})")
VP_RE = re.compile(r"([A-Za-z0-9_.-]{1,64}):(?:AS|as)?(\d{1,10})")
MAX_ASN = 2**32 - 1
MAX_CANDIDATE_PATHS = 64


class HintError(ValueError):
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
        if net.version in dest.nets:
            raise HintError(f"--to: two IPv{net.version} destinations ({dest.nets[net.version]}, {t}); "
                            "give at most one per family")
        if net.prefixlen == 0:
            raise HintError(f"--to: {t} is a default route, not a destination")
        dest.nets[net.version] = net
    return dest


def load_endpoints(path: str | Path) -> list[Destination]:
    """Candidate tunnel endpoints from TOML: [[endpoint]] name = "...", ipv4 = "...", ipv6 = "...",
    and optionally tunnel = "..." (its MPT tunnel address)."""
    p = Path(path)
    try:
        data = read_toml(p, "endpoints file")
    except ConfigError as exc:
        raise HintError(str(exc)) from None
    eps = data.get("endpoint")
    if set(data) - {"endpoint"} or not isinstance(eps, list) or not eps:
        raise HintError(f"{p}: expected one or more [[endpoint]] tables (name, ipv4, ipv6) and nothing else")
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
            addrs.append(str(a))
        try:
            dest = parse_destination(addrs, endpoint=name)
        except HintError as exc:
            raise HintError(f"{p}: endpoint {name}: {exc}") from None
        if "tunnel" in ep:
            try:
                dest.tunnel = str(ipaddress.ip_address(ep["tunnel"]))
            except (TypeError, ValueError):
                raise HintError(f"{p}: endpoint {name}: tunnel is not an IP address: {ep['tunnel']!r}") from None
        out.append(dest)
    return out


# ------------------------------------------------------------------ the month's tables
def _root(cfg: Config) -> Path:
    if isinstance(cfg.data_dir, str) and "://" in cfg.data_dir:
        raise HintError(f"data dir {cfg.data_dir}: the path selector reads a local data dir")
    return Path(cfg.data_dir)


def resolve_month(cfg: Config, month: str | None) -> str:
    """The month asked for (it must be published), or the latest published one."""
    from common.months import parse_month

    if month is None:
        months = published.months(_root(cfg))
        if not months:
            raise HintError(f"{_root(cfg)}: no published month (run congruency run for the month first)")
        return months[-1]
    try:
        parse_month(str(month))
        published.require(_root(cfg), month)
    except ValueError as exc:
        raise HintError(str(exc)) from None
    for t in ("pairs", "paths", "vps"):
        if month not in published.months(_root(cfg), t):
            raise HintError(f"{_root(cfg) / t / f'month={month}'}: missing; re-run congruency compare for {month}")
    return month


def _glob(cfg: Config, table: str, month: str) -> str:
    base = duck.glob_literal(_root(cfg) / table / f"month={month}")
    return f"{base}/*/*.parquet" if table == "rib_entries" else f"{base}/*.parquet"


def _month_snapshots(con, cfg: Config, month: str) -> int:
    return con.execute(f"SELECT max(snapshots) FROM read_parquet({quote(_glob(cfg, 'paths', month))})").fetchall()[0][0] or 0


# ------------------------------------------------------------------ longest-prefix match
def _covering(net) -> list[tuple[str, int]]:
    """Every prefix that covers `net` (itself included, the default route excluded), as text."""
    return [(str(net.supernet(new_prefix=n)) if n < net.prefixlen else str(net), n)
            for n in range(net.prefixlen, 0, -1)]


def lookup_origins(con, cfg: Config, month: str, nets: dict) -> dict:
    """key -> (matched prefix, origin ASN, other origins) for each key -> network, by
    longest-prefix match over the month's rib_entries prefixes of the network's family.

    DuckDB joins the entries against every covering prefix of each network (at most 32 or
    128 per network), so one scan answers all networks. The origin of a prefix is the one
    seen on most of its entries (ties: the lowest ASN); the others are returned too.
    """
    if not nets:
        return {}
    keys, afis, cands, lens = [], [], [], []
    for key, net in nets.items():
        for text, n in _covering(net):
            keys.append(str(key))
            afis.append(net.version)
            cands.append(text)
            lens.append(n)
    cand = pa.table({"k": keys, "afi": pa.array(afis, pa.int8()), "prefix": cands, "plen": lens})
    con.register("lpm_candidates", cand)
    rows = con.execute(f"""
        SELECT c.k, c.plen, e.prefix, e.origin_asn, count(*) AS n
        FROM read_parquet({quote(_glob(cfg, 'rib_entries', month))}) e
        JOIN lpm_candidates c ON e.prefix = c.prefix AND e.afi = c.afi
        WHERE e.origin_asn IS NOT NULL
        GROUP BY ALL
    """).fetchall()
    con.unregister("lpm_candidates")
    best: dict[str, tuple] = {}
    for k, plen, prefix, origin, n in rows:
        cur = best.get(k)
        if cur is None or plen > cur[0]:
            best[k] = (plen, prefix, {})
            cur = best[k]
        if plen == cur[0]:
            cur[2][int(origin)] = cur[2].get(int(origin), 0) + n
    out = {}
    for key in nets:
        hit = best.get(str(key))
        if hit:
            origins = sorted(hit[2].items(), key=lambda kv: (-kv[1], kv[0]))
            out[key] = (hit[1], origins[0][0], [a for a, _ in origins[1:]])
    return out


# ------------------------------------------------------------------ one hint
def _empty_hint(month: str, src: int) -> dict:
    h = {name: None for name in HINTS.names}
    h.update(month=month, source_asn=src, via_proxy=False, proxies=[], shared_asns=[], notes=[],
             caveat=selector.LOWER_BOUND)
    return h


def _unknown(h: dict, reason: str, stab4=None, stab6=None, hops4=None, hops6=None) -> dict:
    h.update(selector.hint_fields("unknown", stab4, stab6, hops4, hops6, None, None))
    h["reason"] = reason
    return h


class _Month:
    """The month's paths and VPs, read once per question with DuckDB."""

    def __init__(self, con, cfg: Config, month: str):
        self.con, self.cfg, self.month = con, cfg, month
        self.paths = _glob(cfg, "paths", month)
        self.snapshots = _month_snapshots(con, cfg, month)
        self.vps = {(g, int(a)) for g, a in con.execute(
            f"SELECT DISTINCT vp_group, vp_asn FROM read_parquet({quote(self.paths)})").fetchall()}

    def seen(self, asn: int) -> tuple[bool, bool]:
        """(on any path of the month, origin of any path of the month)."""
        on, origin = self.con.execute(
            f"SELECT bool_or(list_contains(path, ?)), bool_or(dest_asn = ?) FROM read_parquet({quote(self.paths)})",
            [asn, asn]).fetchall()[0]
        return bool(on), bool(origin)

    def through_vps(self, asn: int, dests: set[int]) -> list[tuple[str, int]]:
        """VPs whose path to one of `dests` crosses `asn`: they show its own route."""
        return sorted((g, int(a)) for g, a in self.con.execute(f"""
            SELECT DISTINCT vp_group, vp_asn FROM read_parquet({quote(self.paths)})
            WHERE dest_asn IN ({",".join(str(int(d)) for d in dests)}) AND list_position(path, ?::BIGINT) > 1""",
            [asn]).fetchall())

    def upstream_vps(self, asn: int) -> list[tuple[str, int]]:
        """VPs seen right after `asn` on the month's paths: `asn` hands traffic to them, so
        each is its provider or peer (a VP seen right before it routes through it instead)."""
        ups = {int(r[0]) for r in self.con.execute(f"""
            SELECT DISTINCT path[list_position(path, ?::BIGINT) + 1] FROM read_parquet({quote(self.paths)})
            WHERE list_position(path, ?::BIGINT) BETWEEN 1 AND len(path) - 1""", [asn, asn]).fetchall()}
        return sorted(vp for vp in self.vps if vp[1] in ups)

    def paths_of(self, vps: list[tuple[str, int]], dests: set[int]) -> dict:
        """(group, vp_asn, dest, afi) -> (path, stability, snapshots)."""
        if not vps or not dests:
            return {}
        vp_t = pa.table({"g": [g for g, _ in vps], "a": pa.array([a for _, a in vps], pa.int64())})
        self.con.register("q_vps", vp_t)
        rows = self.con.execute(f"""
            SELECT p.vp_group, p.vp_asn, p.dest_asn, p.afi, p.path, p.stability, p.snapshots
            FROM read_parquet({quote(self.paths)}) p JOIN q_vps v ON p.vp_group = v.g AND p.vp_asn = v.a
            WHERE p.dest_asn IN ({",".join(str(int(d)) for d in dests)})""").fetchall()
        self.con.unregister("q_vps")
        return {(g, int(a), int(d), int(afi)): (tuple(int(x) for x in p), s, n) for g, a, d, afi, p, s, n in rows}


def _hint_via(m: _Month, src: int, vp: tuple[str, int], proxy: str | None, d4: int, d6: int,
              paths: dict) -> dict:
    """The hint from one VP's paths: the source's own, or (proxy "through"/"upstream") a
    proxy VP's seen from the source (selector.from_source)."""
    h = _empty_hint(m.month, src)
    h.update(vp_group=vp[0], vp_asn=vp[1], via_proxy=proxy is not None, dest_asn=d4, dest_asn_v6=d6)
    p4, p6 = paths.get((*vp, d4, 4)), paths.get((*vp, d6, 6))
    if proxy:
        q4, q6 = selector.from_source(src, p4 and p4[0], p6 and p6[0], proxy == "upstream")
        p4, p6 = (p4 and q4 and (q4, *p4[1:])), (p6 and q6 and (q6, *p6[1:]))
    if p4:
        h.update(v4_path=list(p4[0]), stability_v4=p4[1])
    if p6:
        h.update(v6_path=list(p6[0]), stability_v6=p6[1])
    hops4 = len(h["v4_path"]) - 1 if p4 else None
    hops6 = len(h["v6_path"]) - 1 if p6 else None
    who = f"VP {vp[0]}:AS{vp[1]}" + (f" (proxy for AS{src})" if proxy else "")
    if not p4 or not p6:
        missing = " and ".join(f"IPv{a}" for a, p in ((4, p4), (6, p6)) if not p)
        dests = f"AS{d4 or d6}" if d4 == d6 or None in (d4, d6) else f"AS{d4}/AS{d6}"
        return _unknown(h, f"no {missing} path from {who} to {dests} in {m.month}",
                        h["stability_v4"], h["stability_v6"], hops4, hops6)
    cls, shared = selector.classify(h["v4_path"], h["v6_path"], src, d4, d6)
    h["shared_asns"] = shared
    h["snapshots"] = min(p4[2], p6[2])
    h.update(selector.hint_fields(cls, p4[1], p6[1], hops4, hops6, h["snapshots"], m.snapshots, bool(proxy)))
    return h


def _hint(m: _Month, src: Source, dest: Destination, origins: dict) -> dict:
    """One hint for (source, destination); origins come from lookup_origins."""
    h = _empty_hint(m.month, src.asn)
    h.update(query=dest.query, endpoint=dest.endpoint, addr_v4=dest.addrs.get(4), addr_v6=dest.addrs.get(6))
    notes: list[str] = []
    uncovered: dict[int, str] = {}  # a family whose address no prefix covers has no path
    if dest.asn is not None:
        d4 = d6 = dest.asn
    else:
        found = {}
        for afi, net in dest.nets.items():
            hit = origins.get((dest.endpoint, dest.query, afi))
            if hit is None:
                uncovered[afi] = f"no IPv{afi} prefix of {m.month} covers {net}"
                continue
            prefix, origin, others = hit
            h[f"prefix_v{afi}"] = prefix
            found[afi] = origin
            if others:
                notes.append(f"{prefix} has several origins in {m.month} (AS{origin}, also "
                             + ", ".join(f"AS{a}" for a in others) + "); the most seen is used")
        if not found:
            return _unknown(h, "; ".join(uncovered.values()))
        # A family the destination gave no address for goes to the other's origin; one whose
        # address is uncovered has no destination (its answer stays its own: none).
        d4 = None if 4 in uncovered else found.get(4, found.get(6))
        d6 = None if 6 in uncovered else found.get(6, found.get(4))
        if None not in (d4, d6) and d4 != d6:
            notes.append(f"the IPv4 and IPv6 addresses map to different origins (AS{d4}, AS{d6}); "
                         "each path goes to its own origin")
    h.update(dest_asn=d4, dest_asn_v6=d6, notes=notes)
    if src.asn in (d4, d6):
        return _unknown(h, f"the source AS{src.asn} is the destination")
    vps = sorted(vp for vp in m.vps if vp[1] == src.asn and (src.group is None or vp[0] == src.group))
    if src.group is not None and not vps:
        raise HintError(f"--from: {src.group}:AS{src.asn} is not a vantage point in {m.month}")
    dests = {d for d in (d4, d6) if d is not None}
    if vps:
        cands = [_hint_via(m, src.asn, vp, None, d4, d6, m.paths_of(vps, dests)) for vp in vps]
        known = [c for c in cands if c["hint_class"] != "unknown"]
        best = min(known or cands, key=lambda c: (-c["confidence"], c["vp_group"], c["vp_asn"]))
        if len(vps) > 1:
            notes.append(f"AS{src.asn} is a VP in {len(vps)} collector groups; the most confident one is used")
    else:
        best = _proxy_hint(m, src.asn, d4, d6, notes)
    for k in ("query", "endpoint", "addr_v4", "addr_v6", "prefix_v4", "prefix_v6"):
        best[k] = h[k]
    if uncovered and best["hint_class"] == "unknown":
        only = [a for a in (4, 6) if best[f"v{a}_path"]]
        best["reason"] = "; ".join(uncovered.values()) + (
            f": only IPv{only[0]} has a path" if only else "")
    best["notes"] = notes
    return best


def _proxy_hint(m: _Month, src: int, d4: int, d6: int, notes: list[str]) -> dict:
    """The hint of a source that is no VP, from proxy VPs (the rule in congruency/selector.py):
    VPs whose paths cross it first; only when none shows both families, its upstream VPs."""
    tried = []
    dests = {d for d in (d4, d6) if d is not None}
    for kind, find in (("through", lambda: m.through_vps(src, dests)), ("upstream", lambda: m.upstream_vps(src))):
        vps = find()
        cands = [_hint_via(m, src, vp, kind, d4, d6, m.paths_of(vps, dests)) for vp in vps]
        if any(c["hint_class"] != "unknown" for c in cands):
            break
        tried.append((kind, cands))
    else:  # no proxy gives a class: the first kind that has proxies says why
        kind, cands = next(((k, c) for k, c in tried if c), tried[-1])
    if not cands:
        h = _empty_hint(m.month, src)
        h.update(dest_asn=d4, dest_asn_v6=d6)
        return _unknown(h, f"AS{src} is not a vantage point in {m.month}, no vantage point's path to "
                           "the destination crosses it and none is seen right after it on the month's paths")
    known = [c for c in cands if c["hint_class"] != "unknown"]
    cls, agree = selector.combine_proxies([c["hint_class"] for c in known])
    pick = [c for c in known if c["hint_class"] == cls] or cands
    best = min(pick, key=lambda c: (-c["confidence"], c["vp_group"], c["vp_asn"]))
    best["proxies"] = sorted({c["vp_asn"] for c in cands})
    if known:
        hops4, hops6 = len(best["v4_path"]) - 1, len(best["v6_path"]) - 1
        best.update(selector.hint_fields(cls, best["stability_v4"], best["stability_v6"], hops4, hops6,
                                         best["snapshots"], m.snapshots, proxy=True, agreement=agree))
        split = ", ".join(f"{n} {c}" for c, n in sorted(
            {c: sum(k["hint_class"] == c for k in known) for c in selector.CAUTION}.items(),
            key=lambda kv: selector.CAUTION.index(kv[0])) if n)
    how = (f"the paths of VP {best['vp_group']}:AS{best['vp_asn']}, whose route crosses AS{src}, from AS{src} on"
           if kind == "through" else
           f"AS{src} in front of the paths of its upstream VP {best['vp_group']}:AS{best['vp_asn']}")
    notes.append(f"AS{src} is not a vantage point: {how}; "
                 + (f"{len(known)} of {len(cands)} proxy VP(s) give a class ({split}): the most cautious "
                    f"is used, {agree:.0%} agree; lower confidence" if known else
                    f"none of its {len(cands)} proxy VP(s) shows both families"))
    return best


def advise(cfg: Config, source: str | int, to: Sequence[str] | str | None = None, *,
           month: str | None = None, endpoints: str | Path | list[Destination] | None = None,
           k: int | None = None) -> dict:
    """Path-selector advice for traffic from `source` (ASN, or GROUP:ASN for one VP) to `to`
    (an ASN, a prefix, an address, or one IPv4 and one IPv6 address of a host), over the
    month's published tables (default: the latest published month).

    With `endpoints` (a TOML file of [[endpoint]] name/ipv4/ipv6, or parsed Destinations),
    every endpoint gets a hint, its IPv4 and IPv6 underlay paths are ranked, and the `k`
    paths sharing the fewest ASes are chosen (ties: more stable, then shorter).

    Returns {"month", "hints": [one dict per destination, keys of common.tables.HINTS],
    "selection": None or {"k", "ranking", "chosen", "shared_asns", "note"}} (note: None, or
    why fewer than k paths are chosen). Raises HintError on bad
    input; a valid question the data can't answer gets an `unknown` hint with its reason.
    """
    src = parse_source(str(source))
    if endpoints is not None and to:
        raise HintError("--to and --endpoints: give one of them")
    if endpoints is None and not to:
        raise HintError("--to: a destination is required (or --endpoints)")
    if k is not None and (endpoints is None or not 1 <= int(k) <= MAX_CANDIDATE_PATHS):
        raise HintError(f"--k: needs --endpoints and a value 1..{MAX_CANDIDATE_PATHS}, got {k}")
    dests = (load_endpoints(endpoints) if isinstance(endpoints, (str, Path)) else list(endpoints)
             if endpoints is not None else [parse_destination(to)])
    if 2 * len(dests) > MAX_CANDIDATE_PATHS:
        raise HintError(f"--endpoints: at most {MAX_CANDIDATE_PATHS // 2} endpoints, got {len(dests)}")
    month = resolve_month(cfg, month)
    con = duck.connect(cfg)
    try:
        m = _Month(con, cfg, month)
        on, _ = m.seen(src.asn)
        if not on:
            raise HintError(f"--from: AS{src.asn} does not appear on any path of {month}")
        for d in dests:
            if d.asn is not None and not m.seen(d.asn)[0]:
                raise HintError(f"--to: AS{d.asn} does not appear on any path of {month}")
        nets = {(d.endpoint, d.query, afi): net for d in dests for afi, net in d.nets.items()}
        origins = lookup_origins(con, cfg, month, nets)
        hints = [_hint(m, src, d, origins) for d in dests]
    finally:
        con.close()
    selection = None
    if endpoints is not None:
        selection = select(hints, k or 2, src.asn)
    return {"month": month, "hints": hints, "selection": selection}


def select(hints: list[dict], k: int, src: int) -> dict:
    """Rank the endpoints' underlay paths and choose the k sharing the fewest ASes."""
    cands = [selector.Candidate((h["endpoint"], afi), tuple(h[f"v{afi}_path"]), h[f"stability_v{afi}"])
             for h in hints for afi in (4, 6) if h[f"v{afi}_path"]]
    try:
        chosen = selector.choose_k(cands, k, src) if cands else []
    except ValueError as exc:
        raise HintError(f"--k: {exc}") from None

    def row(c):
        return {"endpoint": c.key[0], "afi": c.key[1], "path": list(c.path), "stability": c.stability}

    note = (f"--k {k}: only {len(cands)} candidate path(s) exist; all of them are chosen"
            if k > len(cands) else None)
    return {"k": k, "ranking": [row(c) for c in selector.rank(cands)], "chosen": [row(c) for c in chosen],
            "shared_asns": sorted(selector.shared_among([c.path for c in chosen], src)), "note": note}


# ------------------------------------------------------------------ the month's hints table
_KEY = ["congruent", "has_shared", "adjacent", "stability_v4", "stability_v6", "hops_v4", "hops_v6", "snapshots"]


def _derived(con, month_snapshots: int) -> tuple[pa.Table, pa.Table] | None:
    """The derived fields of every distinct key of the month's pairs, computed over whole
    columns (selector's *_array forms; no Python per key): the key, hint_class, primary_afi
    and confidence; and the advice (selector.advice) of each (class, primary family), a
    handful of rows. None when the month has no pairs."""
    import numpy as np

    keys = con.sql(f"SELECT DISTINCT {', '.join(_KEY)} FROM hint_input").to_arrow_table()
    if keys.num_rows == 0:
        return None
    col = {c: keys.column(c).to_numpy(zero_copy_only=False) for c in _KEY}
    # The class depends on three small columns: selector.hint_class once per combination.
    code = col["congruent"].astype(np.int8) * 6 + col["has_shared"].astype(np.int8) * 3 + (col["adjacent"] + 1)
    combos, which = np.unique(code, return_inverse=True)
    names = [selector.hint_class(bool(c // 6), [1] if (c // 3) % 2 else [], None if c % 3 == 0 else bool(c % 3 - 1))
             for c in combos.tolist()]
    cls = pa.array(names, pa.string()).take(pa.array(which.ravel()))
    primary = selector.primary_afi_array(col["stability_v4"], col["stability_v6"], col["hops_v4"], col["hops_v6"])
    conf = selector.confidence_array(col["stability_v4"], col["stability_v6"], col["snapshots"], month_snapshots)
    derived = keys.append_column("hint_class", cls).append_column("primary_afi", pa.array(primary)) \
        .append_column("confidence", pa.array(conf, pa.float64()))
    adv = sorted({(n, a) for n in names for a in (4, 6)})
    rows = [{"hint_class": n, "primary_afi": a, **selector.advice(n, a).as_dict(), "caveat": selector.LOWER_BOUND}
            for n, a in adv]
    return derived, pa.Table.from_pylist(rows)


def _hints_sql(con, cfg: Config, month: str, spill: Path | None = None) -> str | None:
    """The SELECT giving the month's hints table (columns and types of HINTS), or None when
    the month has no pairs. Joins each pair with its two paths once (a temp table), then
    with the derived fields of its key."""
    pairs, paths = _glob(cfg, "pairs", month), _glob(cfg, "paths", month)
    if spill is not None:
        con.execute(f"SET temp_directory = {quote(spill)}")
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE hint_input AS
        SELECT p.vp_group, p.vp_asn, p.dest_asn, p.v4_path, p.v6_path, p.shared_asns, p.congruent,
               len(p.shared_asns) > 0 AS has_shared, coalesce(p.shared_adjacent::TINYINT, -1) AS adjacent,
               s4.stability AS stability_v4, s6.stability AS stability_v6,
               p.hops_v4, p.hops_v6, least(s4.snapshots, s6.snapshots) AS snapshots
        FROM read_parquet({quote(pairs)}) p
        JOIN read_parquet({quote(paths)}) s4
          ON s4.vp_group = p.vp_group AND s4.vp_asn = p.vp_asn AND s4.dest_asn = p.dest_asn AND s4.afi = 4
        JOIN read_parquet({quote(paths)}) s6
          ON s6.vp_group = p.vp_group AND s6.vp_asn = p.vp_asn AND s6.dest_asn = p.dest_asn AND s6.afi = 6""")
    got = _derived(con, _month_snapshots(con, cfg, month))
    if got is None:
        return None
    derived, advice = got
    con.register("hint_derived", derived)
    con.register("hint_advice", advice)
    on = " AND ".join(f"i.{c} = d.{c}" for c in _KEY)  # no key column is null
    direct = {"vp_group", "vp_asn", "dest_asn", "v4_path", "v6_path", "shared_asns",
              "stability_v4", "stability_v6", "snapshots"}
    cols = []
    for f in HINTS:
        if f.name == "month":
            expr = quote(month)
        elif f.name in ("source_asn", "dest_asn_v6"):
            expr = {"source_asn": "i.vp_asn", "dest_asn_v6": "i.dest_asn"}[f.name]
        elif f.name in direct:
            expr = f"i.{f.name}"
        elif f.name == "via_proxy":
            expr = "false"
        elif f.name in ("proxies", "notes"):
            expr = "[]"
        elif f.name in derived.column_names:
            expr = f"d.{f.name}"
        elif f.name in advice.column_names:
            expr = f"a.{f.name}"
        else:
            expr = "NULL"
        if not expr.startswith(("d.", "a.")):  # DuckDB would write constants and join keys NOT NULL; HINTS has none
            expr = f"CASE WHEN d.hint_class IS NULL THEN NULL ELSE {expr} END"
        cols.append(f"CAST({expr} AS {sql_type(f.type, 'duckdb')}) AS {f.name}")
    return (f"SELECT {', '.join(cols)} FROM hint_input i JOIN hint_derived d ON {on} "
            "JOIN hint_advice a ON a.hint_class = d.hint_class AND a.primary_afi = d.primary_afi "
            "ORDER BY i.vp_group, i.vp_asn, i.dest_asn")


def build(con, cfg: Config, month: str) -> pa.RecordBatchReader:
    """The month's hints table (schema HINTS) as a stream of record batches."""
    sql = _hints_sql(con, cfg, month)
    if sql is None:
        return pa.RecordBatchReader.from_batches(HINTS, [])
    reader = con.sql(sql).to_arrow_reader(100_000)
    return pa.RecordBatchReader.from_batches(
        HINTS, (pa.Table.from_batches([b]).cast(HINTS).to_batches()[0] for b in reader if b.num_rows))


def publish(cfg: Config, month: str | None = None, progress=None) -> dict:
    """Build the month's hints table and publish it as DATA_DIR/hints/month=M like the other
    tables (pipeline.publish.LocalStore: staged whole under DATA_DIR/_staging, then swapped
    in; readers see the old month or the new one). Returns a summary: month, rows, rows per
    class, path, seconds. `progress`: the caller's rich Progress (one display), else its own."""
    from contextlib import nullcontext

    from common import console
    from pipeline.publish import LocalStore

    t0 = time.perf_counter()
    month = resolve_month(cfg, month)
    store = LocalStore(_root(cfg))
    staged = store.staging(month)
    con = duck.connect(cfg)
    try:
        with console.progress() if progress is None else nullcontext(progress) as prog:
            task = prog.add_task(f"hints {month}", total=3)
            out = Path(staged) / "hints" / "part-0.parquet"
            store.mkdirs(str(out.parent))
            sql = _hints_sql(con, cfg, month, Path(staged) / ".duckdb-tmp")
            prog.advance(task)
            if sql is None:
                pq.write_table(HINTS.empty_table(), out, compression="zstd")
            else:
                con.execute(f"COPY ({sql}) TO {quote(out)} (FORMAT parquet, COMPRESSION zstd)")
            if not pq.read_schema(out).equals(HINTS):  # the contract of common/tables.py
                raise OSError(f"{out}: written schema differs from common.tables.HINTS")
            prog.advance(task)
            counts = con.execute(f"SELECT hint_class, count(*) FROM read_parquet({quote(out)}) GROUP BY 1 ORDER BY 1").fetchall()
            con.close()
            store.delete(f"{staged}/.duckdb-tmp")
            [final] = store.publish(staged, ["hints"], month)
            staged = None
            prog.advance(task)
    finally:
        con.close()
        if staged is not None:
            store.delete(staged)
    classes = {c: int(n) for c, n in counts}
    return {"month": month, "rows": sum(classes.values()), "classes": classes, "path": final,
            "seconds": round(time.perf_counter() - t0, 3)}
