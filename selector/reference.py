"""The selector's rules' reference: one question at a time in Python over a Month, the
independent implementation the answering engines are held equal to by the tests, field by
field. Rules 1-7 (`proxy_answer`, `proxies_held_out`): selector/proxies.ask, which advise,
export and `evaluate --reveal none` and `--truth` answer through (tests/test_proxies.py).
Rules 8-11 (`evidence_answer`, `held_out_reference`): selector/reveal.ask, which advise, export,
the site hints and every evaluation with evidence answer through (tests/test_reveal.py,
tests/test_evaluate.py). No command answers through this module; bench/reveal.py reads it to
say why an answer was wrong.
"""
from __future__ import annotations

from bgp_congruency.common import duck
from bgp_congruency.common.config import Config
from bgp_congruency.selector import calibration, rules
from bgp_congruency.selector.advice import _hint_via, _unknown
from bgp_congruency.selector.evaluate import neighbours_of, pairs_by_vp_as, revealed_evidence, scored_row
from bgp_congruency.selector.month import Month, resolve_month
from bgp_congruency.selector.question import Evidence, Neighbour
from bgp_congruency.selector.reveal import empty_hint


def family_route(m: Month, src: int, dest: int, afi: int, ev: Evidence, rels: dict | None,
                 inferred: bool = rules.INFERRED_ROUTES) -> tuple | None:
    """(rule, path from the source, stability, snapshots, neighbour, why) of one family by rules
    8-11 of selector/rules.py, or (None, ..., why) when none gives a path: `why` says what each
    rule found. `rels`: the month's relationships around the source (Month.relations), or None."""
    tried = []
    nbrs = ev.via.get(afi, ())
    hop = ev.first_hop.get((afi, dest))
    named = f"the first hop AS{hop}"
    if hop is None and rules.sole_neighbour(nbrs):  # the first hop toward every destination
        hop = nbrs[0].asn
        named = f"its sole IPv{afi} neighbour AS{hop}"
    if hop is not None:
        if hop == dest:
            return "first-hop", (src, dest), 1.0, m.snapshots, hop, f"{named} is the destination"
        r = m.routes({hop}, dest, afi, src).get(hop)
        if r:
            return "first-hop", (src, *r[0]), r[1], r[2], hop, f"{named} and its route"
        tried.append(f"no IPv{afi} path to AS{dest} crosses the first hop AS{hop}")
    else:  # rule 9 only without a first hop: a route through the source leaving by it is rule 8's
        r = m.routes({src}, dest, afi, src).get(src)
        if r:
            return "through", r[0], r[1], r[2], r[0][1] if len(r[0]) > 1 else dest, "VPs' paths cross the source"
        tried.append(f"no VP's IPv{afi} path to AS{dest} crosses AS{src}")
    # Rules 10 and 11: every neighbour with a route, observed or (rule 11) one AS further from
    # the month's relationships; the source's choice among them by preference.
    heads = [Neighbour(hop, "provider", 0)] if hop is not None else list(nbrs)
    if heads:
        seen = m.routes({n.asn for n in heads}, dest, afi, src) if hop is None else {}
        missing = {n.asn for n in heads if n.asn not in seen and n.asn != dest}
        guessed = inferred_routes(m, src, dest, afi, missing) if inferred and rels is not None and missing else {}
        cands = []
        for n in heads:
            if n.asn == dest:
                route, stab, snaps, rule = (dest,), 1.0, m.snapshots, "neighbours"
            elif n.asn in seen:
                (route, stab, snaps, _who), rule = seen[n.asn], "neighbours"
            elif n.asn in guessed:
                (route, stab, snaps, _m_is), rule = guessed[n.asn], "inferred"
            else:
                continue
            is_ = "provider" if hop is not None else (rels or {}).get((src, n.asn), n.rel)
            if rule == "inferred":
                nxt = guessed[n.asn][3]
            else:
                nxt = (rels or {}).get((n.asn, route[1])) if len(route) > 1 and rels is not None else None
            if rules.exported(is_, route, nxt):
                cands.append((rules.neighbour_key(is_, route, n.order, n.asn), n.asn, is_, route, stab, snaps, rule))
        if cands:
            _k, n, is_, route, stab, snaps, rule = min(cands)
            why = (f"its {is_} AS{n} (Gao-Rexford preference)" if rule == "neighbours" else
                   f"its {is_} AS{n}, whose route is inferred from the month's relationships (AS{route[1]}'s)")
            return rule, (src, *route), stab, snaps, n, why
        what = f"the first hop AS{hop}" if hop is not None else \
            f"its IPv{afi} neighbours ({', '.join(f'AS{n.asn}' for n in nbrs)})"
        further = " or their neighbours in the month's relationships (rule 11)" if inferred and rels is not None else ""
        tried.append(f"no route to AS{dest} the source would be given from {what}{further} on the month's paths")
    return None, None, None, None, None, "; ".join(tried)


def inferred_routes(m: Month, src: int, dest: int, afi: int, heads: set[int]) -> dict[int, tuple]:
    """head -> (its route: head, then its chosen neighbour's observed route; stability,
    snapshots, what that neighbour is to head) for each of `heads` the month's relationships
    give a route (rule 11): among head's neighbours in the family's as_relationships whose
    observed route crosses neither the source nor head and that head would be given (a
    provider gives every route, a peer or a customer its own and its customers'), a customer,
    then a peer, then a provider; then the shortest; then the lowest ASN."""
    rels = m.relations(afi, heads) or {}
    below = {b for (a, b) in rels if a in heads}
    routes = m.routes(below, dest, afi, src)
    more = m.relations(afi, set(routes)) or {}
    out = {}
    for h in heads:
        best = None
        for (a, b), b_is in rels.items():
            if a != h or b not in routes or b == src:
                continue
            route, stab, snaps, _who = routes[b]
            if h in route:
                continue
            nxt = more.get((b, route[1])) if len(route) > 1 else None
            if b_is != "provider" and not (len(route) == 1 or nxt == "customer"):
                continue
            key = (rules.NEIGHBOUR_CLASSES.index(b_is), len(route), b)
            if best is None or key < best[0]:
                best = (key, ((h, *route), stab, snaps, b_is))
        if best:
            out[h] = best[1]
    return out


def evidence_answer(m: Month, src: int, d4: int | None, d6: int | None, ev: Evidence,
                    fallback: bool = rules.DESTINATION_FALLBACK,
                    inferred: bool = rules.INFERRED_ROUTES) -> tuple[dict, str] | None:
    """The hint of a source from its own evidence (rules 8-11 of selector/rules.py), each family
    on its own; a family with no path leaves the answer unknown, keeping the other family's
    path (with `fallback`, rule 6 `destination` gives the class instead: measured, and left
    out, selector/rules.py DESTINATION_FALLBACK). None when the evidence says nothing."""
    if not ev:
        return None
    ases = {src} | {n.asn for ns in ev.via.values() for n in ns} | set(ev.first_hop.values())
    got = {}
    for afi, d in ((4, d4), (6, d6)):
        if d is None:
            got[afi] = (None, None, None, None, None, f"no IPv{afi} destination")
            continue
        rels = m.relations(afi, ases)
        got[afi] = family_route(m, src, d, afi, ev, rels, inferred)
    h = empty_hint(m.month, src)
    h.update(via_proxy=True, dest_asn=d4, dest_asn_v6=d6)
    for afi in (4, 6):
        rule, path, stab, _snaps, _n, _why = got[afi]
        if path:
            h[f"v{afi}_path"], h[f"stability_v{afi}"] = list(path), stab
    (r4, p4, s4, k4, n4, w4), (r6, p6, s6, k6, n6, w6) = got[4], got[6]
    h.update(via_v4=n4, via_v6=n6)
    if p4 and p6:
        rule = rules.weakest([r4, r6])
        cls, shared = rules.classify(p4, p6, src, d4, d6)
        h["shared_asns"] = shared
        h["snapshots"] = min(k4, k6)
        h.update(rules.hint_fields(cls, s4, s6, len(p4) - 1, len(p6) - 1, h["snapshots"], m.snapshots,
                                      proxy=rule != "first-hop",
                                      calibrated=calibration.confidence(m.calibration, rule, cls)))
        h["how"] = (f"AS{src} is not a vantage point; from its {ev.how} evidence: IPv4 via {w4}, IPv6 via {w6} "
                    f"(rules {r4} and {r6})" if r4 != r6 else
                    f"AS{src} is not a vantage point; from its {ev.how} evidence: IPv4 via {w4}, IPv6 via {w6} "
                    f"(rule {r4})")
        return h, rule
    missing = {afi: w for afi, (r, pth, *_rest, w) in got.items() if not pth}
    dest = _hint_destination(m, src, d4, d6) if fallback and d4 is not None and d4 == d6 else None
    if dest is not None:
        other, _kind = dest
        for afi in (4, 6):  # a family's path found stays in the answer
            if h[f"v{afi}_path"]:
                other[f"v{afi}_path"], other[f"stability_v{afi}"] = h[f"v{afi}_path"], h[f"stability_v{afi}"]
        other["how"] = ("; ".join(f"IPv{a}: {w}" for a, w in missing.items())
                        + f"; so the class most pairs to AS{d4} show: " + other["how"].split(": ", 1)[-1])
        return other, "destination"
    found = [a for a in (4, 6) if h[f"v{a}_path"]]
    if found:
        h["how"] = "; ".join(f"IPv{a}: via {got[a][5]} (rule {got[a][0]})" for a in found)
    h.update(rules.hint_fields("unknown", h["stability_v4"], h["stability_v6"],
                                  len(p4) - 1 if p4 else None, len(p6) - 1 if p6 else None, None, None))
    h["reason"] = "; ".join(f"IPv{a}: {w}" for a, w in missing.items()) + (
        f": only IPv{found[0]} has a path" if found else "")
    return h, "none"


def held_out_reference(cfg: Config, month: str, reveal: str, asns=None,
                       fallback: bool = rules.DESTINATION_FALLBACK,
                       inferred: bool = rules.INFERRED_ROUTES) -> list[dict]:
    """The revealed evaluation one question at a time with evidence_answer: the
    reference selector/reveal.answers is checked against (tests/test_reveal.py)."""
    con = duck.connect(cfg)
    try:
        by_asn = pairs_by_vp_as(con, cfg, month)
        every = Month(con, cfg, month, paths="eval_paths", pairs="eval_pairs")
        rows = []
        for asn, mine in sorted(by_asn.items()):
            if asns is not None and asn not in asns:
                continue
            m = every.hiding(frozenset({asn}))
            own = neighbours_of(con, "eval_paths", asn) if reveal == "neighbours" else {}
            for g, a, d, v4, v6, congruent, shared, adjacent in mine:
                observed = rules.hint_class(congruent, shared, adjacent)
                h, rule = evidence_answer(m, int(a), int(d), int(d), revealed_evidence(reveal, own, v4, v6, int(d)),
                                          fallback, inferred)
                rows.append({**scored_row(month, g, int(a), int(d), v4, v6, observed, h, rule), "kind": "vp",
                             "reveal": reveal})
        return rows
    finally:
        con.close()


# ------------------------------------------------------------------ rules 1-7
def _stub_routes(m: Month, src: int, d4: int | None, d6: int | None) -> tuple[dict, dict]:
    """Rule 5 per family: afi -> (neighbour, path, stability, snapshots, VPs) where a neighbour
    seen right before the stub has a route to the destination; and afi -> why not, for the
    families without one."""
    got, why = {}, {}
    near = m.neighbours(src)
    for afi, d in ((4, d4), (6, d6)):
        if d is None:
            why[afi] = f"no IPv{afi} destination"
            continue
        routes = m.provider_routes(src, d, afi)
        pick = rules.stub_route(src, {n: r[0] for n, r in routes.items()})
        if pick is None:
            seen = ", ".join(f"AS{n}" for n in sorted(near[afi])) or "none"
            why[afi] = (f"provider rule: no IPv{afi} path to AS{d} crosses an AS seen right before AS{src} in "
                        f"IPv{afi} ({seen})")
            continue
        got[afi] = (pick[0], pick[1], *routes[pick[0]][1:])
    return got, why


def _hint_stub(m: Month, src: int, d4: int, d6: int, got: dict) -> tuple[dict, str]:
    """(the hint of a stub source from its neighbours' routes (rule 5 of selector/rules.py),
    its rule) from _stub_routes' routes of both families."""
    (n4, p4, s4, k4, w4), (n6, p6, s6, k6, w6) = got[4], got[6]
    h = empty_hint(m.month, src)
    h.update(via_proxy=True, dest_asn=d4, dest_asn_v6=d6, v4_path=list(p4), v6_path=list(p6), via_v4=n4, via_v6=n6,
             stability_v4=s4, stability_v6=s6, proxies=sorted(set(w4) | set(w6)), snapshots=min(k4, k6))
    cls, shared = rules.classify(p4, p6, src, d4, d6)
    h["shared_asns"] = shared
    h.update(rules.hint_fields(cls, s4, s6, len(p4) - 1, len(p6) - 1, h["snapshots"], m.snapshots, proxy=True,
                                  calibrated=calibration.confidence(m.calibration, "provider", cls)))
    h["how"] = (f"AS{src} is not a vantage point and never hands traffic on (a stub): its path is itself in front "
                f"of the route of its neighbour AS{n4} in IPv4 and AS{n6} in IPv6 (the shortest route among the "
                "ASes seen right before it, shown by the paths that cross them)")
    return h, "provider"


def _hint_destination(m: Month, src: int, d4: int, d6: int, behind: int | None = None) -> tuple[dict, str] | None:
    """(The hint of a source that is not a stub from the class most pairs to the destination
    show (rule 6 of selector/rules.py), or with `behind`, of a stub whose one neighbour in
    both families is that AS, from that class seen through it (rule 7); with its rule. None when the two
    families go to different origins (no pair is about both) or no pair goes to the
    destination."""
    if d4 is None or d4 != d6:
        return None
    shown = {}  # class (behind `behind` for rule 7) -> the VP ASes of the pairs showing it
    for (congruent, none_shared, adjacent), who in m.destination_classes(d4).items():
        c = rules.hint_class(congruent, [] if none_shared else [None], adjacent)
        shown.setdefault(c if behind is None else rules.BEHIND_ONE_NEIGHBOUR[c], []).extend(who)
    cls, share = rules.destination_class({c: len(w) for c, w in shown.items()})
    if cls == "unknown":
        return None
    rule = "destination" if behind is None else "one-neighbour"
    h = empty_hint(m.month, src)
    h.update(via_proxy=True, dest_asn=d4, dest_asn_v6=d6, proxies=sorted(set(shown[cls])),
             shared_asns=[] if behind is None or cls == "congruent" else [behind])
    h.update(rules.hint_fields(cls, None, None, None, None, None, m.snapshots, proxy=True, agreement=share,
                                  calibrated=calibration.confidence(m.calibration, rule, cls), stated=share))
    pairs = sum(map(len, shown.values()))
    most = f"{len(shown[cls])} of the {pairs} pairs of the month's VPs to AS{d4} ({share:.0%})"
    h["how"] = (f"AS{src} is not a vantage point and no VP's path to AS{d4} shows its route in both families: "
                f"{cls}, the class of {most}; no path is known" if behind is None else
                f"AS{src} is not a vantage point and never hands traffic on (a stub) and AS{behind} is the one AS "
                f"seen right before it in both families: {cls}, the class of {most} seen behind AS{behind} (shared "
                "next to the source); no path is known")
    return h, rule


def proxy_answer(m: Month, src: int, d4: int, d6: int, notes: list[str]) -> tuple[dict, str | None]:
    """The reference of rules 1-7 (selector/proxies.ask answers by them for every command): the
    hint of a source that is no VP, by the rules of selector/rules.py in their order:
    VPs whose paths cross it; then a stub's neighbours' routes, else the class through its one
    neighbour, or for any other source the class most pairs to the destination show; then its
    upstream VPs. With it the rule it came from ("through", "provider", "one-neighbour",
    "destination", "upstream"; None when nothing stands in):
    advise names it, and the evaluation scores each rule on its own."""
    dests = {d for d in (d4, d6) if d is not None}

    def proxies(kind, vps):
        return [_hint_via(m, src, vp, kind, d4, d6, m.paths_of(vps, dests)) for vp in vps]

    tried = [("through", proxies("through", m.through_vps(src, d4, d6)))]
    partial, why = {}, {}  # a stub's family that rule 5 found a path for, and why the others have none
    if not any(c["hint_class"] != "unknown" for c in tried[0][1]):
        if m.is_stub(src):
            partial, why = _stub_routes(m, src, d4, d6)
            got = _hint_stub(m, src, d4, d6, partial) if len(partial) == 2 else None
            if got is None:
                near = m.neighbours(src)
                if len(near[4]) == 1 and near[4] == near[6]:
                    got = _hint_destination(m, src, d4, d6, behind=next(iter(near[4])))
                    if got is None:
                        why["one-neighbour"] = (f"one-neighbour rule: no pair to AS{d4} to take the class of "
                                                f"AS{next(iter(near[4]))}'s from")
                else:
                    why["one-neighbour"] = ("one-neighbour rule: the ASes seen right before it differ between the "
                                            f"families (IPv4 {_ases(near[4])}, IPv6 {_ases(near[6])})")
        else:
            got = _hint_destination(m, src, d4, d6)
            if got is None:
                why["destination"] = (f"destination rule: no pair of the month goes to AS{d4}" if d4 == d6 else
                                      "destination rule: the families go to different origins")
        if got is not None:
            other, kind = got
            notes.append(other.pop("how"))
            notes.extend(calibration.note(m.calibration, kind, other["hint_class"]))
            return other, kind
        tried.append(("upstream", proxies("upstream", m.upstream_vps(src))))
    kind, cands = tried[-1]
    if not any(c["hint_class"] != "unknown" for c in cands):  # the first kind that has proxies says why
        kind, cands = next(((k, c) for k, c in tried if c), tried[-1])
    if not cands:
        h = empty_hint(m.month, src)
        h.update(dest_asn=d4, dest_asn_v6=d6)
        for afi, (n, path, stab, _k, _w) in partial.items():  # a family's own path stays in the answer
            h.update({f"v{afi}_path": list(path), f"stability_v{afi}": stab, f"via_v{afi}": n})
        reasons = [f"through rule: no VP's path to the destination crosses AS{src}"] + list(why.values()) + \
            ["upstream rule: no VP is seen right after it on the month's paths"]
        only = [a for a in (4, 6) if h[f"v{a}_path"]]
        return _unknown(h, f"AS{src} is not a vantage point in {m.month}; " + "; ".join(reasons)
                        + (f": only IPv{only[0]} has a path" if only else ""),
                        h["stability_v4"], h["stability_v6"],
                        len(h["v4_path"]) - 1 if h["v4_path"] else None,
                        len(h["v6_path"]) - 1 if h["v6_path"] else None), None
    known = [c for c in cands if c["hint_class"] != "unknown"]
    cls, agree = rules.combine_proxies([c["hint_class"] for c in known])
    pick = [c for c in known if c["hint_class"] == cls] or cands
    best = min(pick, key=lambda c: (-c["confidence"], c["vp_group"], c["vp_asn"]))
    best["proxies"] = sorted({c["vp_asn"] for c in cands})
    if known:
        hops4, hops6 = len(best["v4_path"]) - 1, len(best["v6_path"]) - 1
        best.update(rules.hint_fields(cls, best["stability_v4"], best["stability_v6"], hops4, hops6,
                                         best["snapshots"], m.snapshots, proxy=True, agreement=agree,
                                         calibrated=calibration.confidence(m.calibration, kind, cls)))
        split = ", ".join(f"{n} {c}" for c, n in sorted(
            {c: sum(k["hint_class"] == c for k in known) for c in rules.CAUTION}.items(),
            key=lambda kv: rules.CAUTION.index(kv[0])) if n)
    how = (f"the paths of VP {best['vp_group']}:AS{best['vp_asn']}, whose route crosses AS{src}, from AS{src} on"
           if kind == "through" else
           f"AS{src} in front of the paths of its upstream VP {best['vp_group']}:AS{best['vp_asn']}")
    notes.append(f"AS{src} is not a vantage point: {how}; "
                 + (f"{len(known)} of {len(cands)} proxy VP(s) give a class ({split}): the most cautious "
                    f"is used, {agree:.0%} agree; lower confidence" if known else
                    f"none of its {len(cands)} proxy VP(s) shows both families"))
    if known:
        notes.extend(calibration.note(m.calibration, kind, cls))
    return best, kind


def _ases(asns) -> str:
    return ", ".join(f"AS{a}" for a in sorted(asns)) or "none"


def proxies_held_out(cfg: Config, month: str | None = None, progress=None, asns=None) -> tuple[str, list[dict]]:
    """(month, one row per observed pair: what rules 1-7 answer with the pair's VP AS held out),
    one question at a time with proxy_answer, for the VP ASes `asns` (default: all): the
    reference selector/proxies.answers is checked against (tests/test_proxies.py)."""
    month = resolve_month(cfg, month)
    con = duck.connect(cfg)
    try:
        by_asn = pairs_by_vp_as(con, cfg, month)
        if asns is not None:
            by_asn = {a: p for a, p in by_asn.items() if a in asns}
        every = Month(con, cfg, month, paths="eval_paths", pairs="eval_pairs")
        rows = []
        for i, (asn, mine) in enumerate(sorted(by_asn.items())):
            if progress:
                progress(i, len(by_asn), asn)
            m = every.hiding(frozenset({asn}))
            for g, a, d, v4, v6, congruent, shared, adjacent in mine:
                observed = rules.hint_class(congruent, shared, adjacent)
                rows.append({**scored_row(month, g, int(a), int(d), v4, v6, observed,
                                     *proxy_answer(m, int(a), int(d), int(d), [])), "kind": "vp"})
        return month, rows
    finally:
        con.close()
