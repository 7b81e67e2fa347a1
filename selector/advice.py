"""The selector's answer to one question (`advise`) and the k-path choice among candidate
endpoints (`select`). Definitions (class, confidence, advice, proxies) are selector/rules.py.
This module answers a VP source from its own paths (a month read by selector/month.py) and
asks the engines for any other source: selector/proxies.py (rules 1-7) and, with the source's
evidence, selector/reveal.py (rules 8-11), as every evaluation does.

Library use:

    from bgp_congruency.common.config import load
    from bgp_congruency.selector.advice import advise
    answer = advise(load(), "6939", ["2001:db8::1"])      # latest published month
    answer["hints"][0]["hint_class"], answer["hints"][0]["mode"]
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bgp_congruency.common import duck
from bgp_congruency.common.config import Config
from bgp_congruency.lake.attach import pinned
from bgp_congruency.selector import calibration, proxies, reveal
from bgp_congruency.selector import rules as selector
from bgp_congruency.selector.month import Month, data_root, lookup_origins, resolve_month
from bgp_congruency.selector.question import (
    MAX_CANDIDATE_PATHS,
    Destination,
    Evidence,
    HintError,
    Source,
    load_endpoints,
    parse_destination,
    parse_source,
)
from bgp_congruency.selector.reveal import empty_hint, month_calibration


def _unknown(h: dict, reason: str, stab4=None, stab6=None, hops4=None, hops6=None) -> dict:
    h.update(selector.hint_fields("unknown", stab4, stab6, hops4, hops6, None, None))
    h["reason"] = reason
    return h


def _hint_via(m: Month, src: int, vp: tuple[str, int], proxy: str | None, d4: int, d6: int,
              paths: dict) -> dict:
    """The hint from one VP's paths: the source's own, or (proxy "through"/"upstream") a
    proxy VP's seen from the source (selector.from_source)."""
    h = empty_hint(m.month, src)
    h.update(vp_group=vp[0], vp_asn=vp[1], via_proxy=proxy is not None, dest_asn=d4, dest_asn_v6=d6)
    p4, p6 = paths.get((*vp, d4, 4)), paths.get((*vp, d6, 6))
    if proxy:
        q4, q6 = selector.from_source(src, p4 and p4[0], p6 and p6[0], proxy == "upstream")
        p4, p6 = (p4 and q4 and (q4, *p4[1:])), (p6 and q6 and (q6, *p6[1:]))
    if p4:
        h.update(v4_path=list(p4[0]), stability_v4=p4[1], via_v4=p4[0][1] if len(p4[0]) > 1 else None)
    if p6:
        h.update(v6_path=list(p6[0]), stability_v6=p6[1], via_v6=p6[0][1] if len(p6[0]) > 1 else None)
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


def _ends(m: Month, dest: Destination, origins: dict) -> tuple[int | None, int | None, dict, list[str], dict[int, str]]:
    """Where a destination's traffic goes: its IPv4 and IPv6 origin AS (None: that family has
    no destination), the prefixes that cover its addresses, notes, and the families whose
    address no prefix of the month covers (origins come from lookup_origins)."""
    notes: list[str] = []
    uncovered: dict[int, str] = {}  # a family whose address no prefix covers has no path
    if dest.asn is not None:
        return dest.asn, dest.asn, {}, notes, uncovered
    found, prefixes = {}, {}
    for afi, net in dest.nets.items():
        hit = origins.get((dest.endpoint, dest.query, afi))
        if hit is None:
            uncovered[afi] = f"no IPv{afi} prefix of {m.month} covers {net}"
            continue
        prefix, origin, others = hit
        prefixes[afi] = prefix
        found[afi] = origin
        if others:
            notes.append(f"{prefix} has several origins in {m.month} (AS{origin}, also "
                         + ", ".join(f"AS{a}" for a in others) + "); the most seen is used")
    if not found:
        return None, None, prefixes, notes, uncovered
    # A family the destination gave no address for goes to the other's origin; one whose
    # address is uncovered has no destination (its answer stays its own: none).
    d4 = None if 4 in uncovered else found.get(4, found.get(6))
    d6 = None if 6 in uncovered else found.get(6, found.get(4))
    if None not in (d4, d6) and d4 != d6:
        notes.append(f"the IPv4 and IPv6 addresses map to different origins (AS{d4}, AS{d6}); "
                     "each path goes to its own origin")
    return d4, d6, prefixes, notes, uncovered


def _hint(m: Month, src: Source, dest: Destination, ends: tuple, evidence: Evidence | None = None,
          answer: tuple[dict, str] | None = None) -> dict:
    """One hint for (source, destination) from its ends (_ends). A source that is no VP is
    answered from its `evidence` where it has some (rules 8-11: `answer`, the engine's, from
    reveal.source_hints), else by proxies (rules 1-7: `answer`, the engine's, from
    proxies.sources_answers)."""
    h = empty_hint(m.month, src.asn)
    h.update(query=dest.query, endpoint=dest.endpoint, addr_v4=dest.addrs.get(4), addr_v6=dest.addrs.get(6))
    d4, d6, prefixes, notes, uncovered = ends
    notes = list(notes)
    for afi, prefix in prefixes.items():
        h[f"prefix_v{afi}"] = prefix
    if d4 is None and d6 is None:
        return _unknown(h, "; ".join(uncovered.values()))
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
        best["rule"] = "vp"
    elif evidence:
        best, kind = answer
        best = dict(best)
        if "how" in best:
            notes.append(best.pop("how"))
        if evidence.left_out:
            notes.append("traces left out: " + "; ".join(
                evidence.left_out[:3]) + ("; ..." if len(evidence.left_out) > 3 else ""))
        notes.extend(calibration.note(m.calibration, kind, best["hint_class"]))
        best["rule"] = kind
    else:
        best, kind, how = answer
        best = dict(best)
        notes.extend(how)
        best["rule"] = kind or "none"
    for k in ("query", "endpoint", "addr_v4", "addr_v6", "prefix_v4", "prefix_v6"):
        best[k] = h[k]
    if uncovered and best["hint_class"] == "unknown":
        only = [a for a in (4, 6) if best[f"v{a}_path"]]
        best["reason"] = "; ".join(uncovered.values()) + (
            f": only IPv{only[0]} has a path" if only else "")
    best["notes"] = notes
    return best


def advise(cfg: Config, source: str | int, to: Sequence[str] | str | None = None, *,
           month: str | None = None, endpoints: str | Path | list[Destination] | None = None,
           k: int | None = None, evidence: Evidence | None = None) -> dict:
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
    # One attached catalog for every read of the question, at one snapshot (it writes nothing).
    with pinned(data_root(cfg), hold=True):
        month = resolve_month(cfg, month)
        con = duck.connect(cfg)
        try:
            m = Month(con, cfg, month)
            fits = month_calibration(con, cfg, month) or {}
            # an answer from the source's evidence is calibrated on the evaluation of that
            # evidence (first hops known, or only the neighbours), others on today's rules
            mode = "none" if not evidence else "first-hop" if evidence.first_hop else "neighbours"
            m.calibration = fits.get(mode)
            if not evidence and not m.seen(src.asn):  # declared neighbours or a trace stand in for its paths
                raise HintError(f"--from: AS{src.asn} does not appear on any path of {month} (give its neighbours: "
                                "--via4/--via6, --atlas/--warts/--stored-traces or the endpoints file's [source])")
            for d in dests:
                if d.asn is not None and not m.seen(d.asn):
                    raise HintError(f"--to: AS{d.asn} does not appear on any path of {month}")
            nets = {(d.endpoint, d.query, afi): net for d in dests for afi, net in d.nets.items()}
            origins = lookup_origins(con, cfg, month, nets)
            unused = None
            src_is_vp = any(vp[1] == src.asn for vp in m.vps)
            if evidence and src_is_vp:
                # a VP's own paths are what it uses: they answer, not the evidence (said in the notes)
                unused = (f"AS{src.asn} is a vantage point of {month}: its own paths answer; its {evidence.how} "
                          "evidence (--via4/--via6, traces, [source]) is not used")
                evidence = None
            ends = [_ends(m, d, origins) for d in dests]
            answers: list = [None] * len(dests)
            asked = [(e[0], e[1]) if src.asn not in (e[0], e[1]) else (None, None) for e in ends]
            if not src_is_vp and not evidence:
                # every destination's question at once, through the evaluation's engine of rules 1-7
                answers = proxies.sources_answers(con, cfg, month, [(src.asn, *a) for a in asked], m.calibration)
            elif evidence:
                # every destination's question at once, through the evaluation's engine
                _t, answers = reveal.source_hints(con, cfg, month, src.asn, asked, evidence.via, evidence.first_hop,
                                                  evidence.how, m.calibration)
            hints = [_hint(m, src, d, e, evidence, a) for d, e, a in zip(dests, ends, answers)]
            for h in hints if unused else ():
                h["notes"].append(unused)
        finally:
            con.close()
    # How often each rule was right in the month's evaluation (congruency evaluate). A VP's own
    # answer (rule `vp`) is its observation, not a prediction: not in it.
    held_out = calibration.rule_accuracy(m.calibration)
    for h in hints:
        h["rule_accuracy"] = held_out.get(h.get("rule"))
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
    if chosen and (n := selector.collapsed(chosen)) < len(chosen):
        same = "; ".join(" and ".join(f"{c.key[0]} IPv{c.key[1]}" for c in chosen if tuple(c.path) == p)
                         for p in dict.fromkeys(tuple(c.path) for c in chosen)
                         if sum(tuple(c.path) == p for c in chosen) > 1)
        collapse = (f"the {len(chosen)} chosen paths are {n} distinct AS path(s): {same} follow the same ASes "
                    "(no other choice parts them)")
        note = f"{note}; {collapse}" if note else f"--k {k}: {collapse}"
    return {"k": k, "ranking": [row(c) for c in selector.rank(cands)], "chosen": [row(c) for c in chosen],
            "shared_asns": sorted(selector.shared_among([c.path for c in chosen], src)), "note": note}
