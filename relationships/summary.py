"""What `congruency relationships` prints of a month: per family the links per relationship and
step and the clique; the hybrid links; one AS's role in each family; and scores against a
relationship file (relationships/formats.py) or the generator's truth (relationships/score.py).
Reads the month's published `as_relationships` (lake/published.py)."""
from __future__ import annotations

from collections import Counter, defaultdict

from bgp_congruency.common.config import Config
from bgp_congruency.common.errors import BadInput
from bgp_congruency.lake import published
from bgp_congruency.relationships import score
from bgp_congruency.relationships.formats import RelFile
from bgp_congruency.relationships.infer import STEPS, UNDECIDED
from bgp_congruency.relationships.table import TABLE


def rows(cfg: Config, month: str) -> list[dict]:
    """The month's as_relationships rows; BadInput when the month has none (published before
    the table existed: `congruency relationships --month M --infer` computes them)."""
    root = cfg.data_dir
    if month not in published.months(root, TABLE):
        raise BadInput(f"{month}: no as_relationships published (a month computed before the table existed: "
                       f"congruency relationships --month {month} --infer)")
    return published.read(root, TABLE, month).to_pylist()


def by_family(rs: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {4: [], 6: []}
    for r in rs:
        out[int(r["afi"])].append(r)
    return out


def links(rs: list[dict]) -> dict[tuple[int, int], tuple]:
    return score.canon((r["as1"], r["as2"], r["rel"]) for r in rs)


def sure(rs: list[dict]) -> dict[tuple[int, int], bool]:
    """link -> whether valley-free evidence decided it (a month published before the column:
    every step but the last)."""
    return {(min(r["as1"], r["as2"]), max(r["as1"], r["as2"])):
            r["step"] != UNDECIDED if r.get("decided") is None else bool(r["decided"]) for r in rs}


def clique(rs: list[dict]) -> list[int]:
    """The clique's members: the ASes of the links the clique step decided."""
    return sorted({a for r in rs if r["step"] == "clique" for a in (r["as1"], r["as2"])})


def role(rs: list[dict], asn: int) -> dict:
    """An AS's providers, customers and peers in one family's rows, and whether it is in the clique."""
    provs = sorted(r["as1"] for r in rs if r["rel"] == "p2c" and r["as2"] == asn)
    custs = sorted(r["as2"] for r in rs if r["rel"] == "p2c" and r["as1"] == asn)
    peers = sorted(r["as2"] if r["as1"] == asn else r["as1"] for r in rs
                   if r["rel"] != "p2c" and asn in (r["as1"], r["as2"]))
    return {"asn": asn, "in_clique": asn in clique(rs), "providers": provs, "customers": len(custs),
            "peers": len(peers), "transit_free": not provs}


def summary(month: str, rs: list[dict], asns: tuple[int, ...] = ()) -> dict:
    fam = by_family(rs)
    out: dict = {"month": month, "families": {}}
    for afi, r in fam.items():
        out["families"][afi] = {
            "links": len(r), "p2c": sum(x["rel"] == "p2c" for x in r), "p2p": sum(x["rel"] == "p2p" for x in r),
            "clique": clique(r),
            "steps": {s: n for s in STEPS if (n := sum(x["step"] == s for x in r))}}
    l4, l6 = links(fam[4]), links(fam[6])
    both = set(l4) & set(l6)
    hyb = score.hybrid(l4, l6)
    kinds = Counter()
    for k in hyb:
        kinds[f"{l4[k][0]} in IPv4, {l6[k][0]} in IPv6" if l4[k][0] != l6[k][0] else "p2c, reversed"] += 1
    v6_ases = {a for k in l6 for a in k}
    v4_ases = {a for k in l4 for a in k}
    out["hybrid"] = {"both_families": len(both), "hybrid": len(hyb),
                     "share": len(hyb) / len(both) if both else None, "kinds": dict(kinds.most_common()),
                     "v4_only_links": sum(1 for k in l4 if k not in l6 and k[0] in v6_ases and k[1] in v6_ases),
                     "v6_only_links": sum(1 for k in l6 if k not in l4 and k[0] in v4_ases and k[1] in v4_ases)}
    c4, c6 = set(out["families"][4]["clique"]), set(out["families"][6]["clique"])
    out["clique"] = {"both": sorted(c4 & c6), "v4_only": sorted(c4 - c6), "v6_only": sorted(c6 - c4)}
    out["ases"] = {a: {afi: role(r, a) for afi, r in fam.items()} for a in asns}
    return out


def compare_file(rs: list[dict], ref: RelFile) -> dict:
    """The month's family `ref.afi` against a relationship file: agreement on the links both
    have, per step, the cliques, and the disagreements on the most paths."""
    mine = by_family(rs)[ref.afi]
    ours = links(mine)
    steps = {(min(r["as1"], r["as2"]), max(r["as1"], r["as2"])): r["step"] for r in mine}
    paths = {(min(r["as1"], r["as2"]), max(r["as1"], r["as2"])): r["paths"] for r in mine}
    theirs = score.canon((a, b, rel) for (a, b), rel in ref.links.items())
    out = {"file": ref.path, "format": ref.format, "afi": ref.afi, **score.compare(ours, theirs, steps),
           "decided": score.decided(ours, theirs, sure(mine))}
    out["clique"] = {"month": clique(mine), "file": ref.clique}
    out["disagreements"] = [{"link": list(k), "month": _word(o), "file": _word(t), "paths": n}
                            for k, o, t, n in score.disagreements(ours, theirs, paths)]
    return out


def _word(r: tuple) -> str:
    return f"p2c (AS{r[1]} provides)" if r[0] == "p2c" else r[0]


def compare_truth(rs: list[dict], net, month: str) -> dict:
    """Per family PPV and TPR against the generator's relationships, per step, and the hybrid
    links found against the true ones."""
    fam = by_family(rs)
    out: dict = {}
    ref = {afi: score.truth_of(net, afi, month) for afi in (4, 6)}
    for afi, r in fam.items():
        steps = {(min(x["as1"], x["as2"]), max(x["as1"], x["as2"])): x["step"] for x in r}
        out[afi] = {**score.compare(links(r), ref[afi], steps), "decided": score.decided(links(r), ref[afi], sure(r))}
    l4, l6 = links(fam[4]), links(fam[6])
    out["hybrid"] = score.hybrid_score(score.hybrid(l4, l6), ref[4], ref[6], set(l4) & set(l6))
    return out


def confusion_by_step(rs: list[dict], ref: dict) -> dict:
    """step -> our class -> reference class -> links (where a target is missed: which step)."""
    out: dict = defaultdict(lambda: defaultdict(Counter))
    for x in rs:
        k = (min(x["as1"], x["as2"]), max(x["as1"], x["as2"]))
        t = ref.get(k)
        mine = ("p2c", x["as1"]) if x["rel"] == "p2c" else (x["rel"],)
        seen = "absent" if t is None else ("c2p" if t[0] == "p2c" and mine[0] == "p2c" and t != mine else t[0])
        out[x["step"]][x["rel"]][seen] += 1
    return {s: {c: dict(v) for c, v in d.items()} for s, d in out.items()}
