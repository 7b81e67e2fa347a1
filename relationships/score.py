"""Scoring a month's relationships against a reference: the generator's truth (per family, every
link) or a published file (relationships/formats.py). Pure functions over dicts.

A link is (lower ASN, higher ASN); its relationship ("p2c", provider) or ("p2p",) or ("s2s",).
PPV of a class: of the links inferred that class and present in the reference, the share the
reference agrees with (a p2c in the same direction); TPR: of the reference's links of that
class that the month's paths show, the share inferred so. Hybrid links (Giotsas and Zhou
2011): links seen in both families whose relationships differ.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

CLASSES = ("p2c", "p2p")


def canon(rows: Iterable[tuple[int, int, str]]) -> dict[tuple[int, int], tuple]:
    """(as1, as2, rel) rows -> link -> relationship."""
    out = {}
    for a, b, rel in rows:
        a, b = int(a), int(b)
        out[(min(a, b), max(a, b))] = ("p2c", a) if rel == "p2c" else (rel,)
    return out


def truth_of(net, afi: int, month: str) -> dict[tuple[int, int], tuple]:
    """The generator's relationships of one family and month (synth/topology.Internet)."""
    asn = net.asns
    c2p, p2p, _prepend, _present = net.relationships(afi, month)
    return canon([(asn[p], asn[c], "p2c") for c, p in c2p] + [(asn[a], asn[b], "p2p") for a, b in p2p])


def _label(r: tuple) -> str:
    return r[0]


def compare(ours: Mapping[tuple[int, int], tuple], ref: Mapping[tuple[int, int], tuple],
            steps: Mapping[tuple[int, int], str] | None = None) -> dict:
    """PPV and TPR per class, the confusion (ours -> reference: p2c, c2p = the other direction,
    p2p, s2s, absent) and per step the links the reference has and how many it agrees with."""
    confusion: dict[str, Counter] = {c: Counter() for c in ("p2c", "p2p", "s2s")}
    by_step: dict[str, Counter] = {}
    agree = Counter()
    for link, r in ours.items():
        t = ref.get(link)
        if t is None:
            seen = "absent"
        elif r[0] == "p2c" and t[0] == "p2c":
            seen = "p2c" if r[1] == t[1] else "c2p"
        else:
            seen = t[0]
        confusion.setdefault(r[0], Counter())[seen] += 1
        ok = t is not None and r == t
        agree[r[0]] += ok
        if steps is not None and t is not None:
            c = by_step.setdefault(steps[link], Counter())
            c["links"] += 1
            c["agree"] += ok
    out = {"links": len(ours), "reference_links": len(ref), "both": sum(k in ref for k in ours),
           "agree": sum(agree.values())}
    for c in CLASSES:
        inferred = sum(n for k, n in confusion.get(c, {}).items() if k != "absent")
        truly = [k for k, t in ref.items() if t[0] == c and k in ours]
        out[c] = {"inferred": inferred, "correct": agree[c], "ppv": agree[c] / inferred if inferred else None,
                  "reference": len(truly), "tpr": sum(ours[k] == ref[k] for k in truly) / len(truly) if truly else None}
    out["agreement"] = out["agree"] / out["both"] if out["both"] else None
    out["confusion"] = {c: dict(sorted(v.items())) for c, v in confusion.items() if v}
    if steps is not None:
        out["steps"] = {s: {"links": c["links"], "agree": c["agree"]} for s, c in sorted(by_step.items())}
    return out


def decided(ours: Mapping[tuple[int, int], tuple], ref: Mapping[tuple[int, int], tuple],
            sure: Mapping[tuple[int, int], bool]) -> dict:
    """The links valley-free evidence decided (`sure`; the table's `decided`) against the
    reference: per class how many it has and their PPV; the share of the links both have that
    were decided; and how many undecided links the reference agrees with."""
    out: dict = {}
    both = [k for k in ours if k in ref]
    for c in CLASSES:
        mine = [k for k in both if sure[k] and ours[k][0] == c]
        ok = sum(ours[k] == ref[k] for k in mine)
        out[c] = {"decided": len(mine), "correct": ok, "ppv": ok / len(mine) if mine else None}
    rest = [k for k in both if not sure[k]]
    out["share_decided"] = (len(both) - len(rest)) / len(both) if both else None
    out["undecided"] = {"links": len(rest), "agree": sum(ours[k] == ref[k] for k in rest)}
    return out


def hybrid(v4: Mapping[tuple[int, int], tuple], v6: Mapping[tuple[int, int], tuple]) -> set[tuple[int, int]]:
    """Links of both families whose relationships differ."""
    return {k for k, r in v4.items() if k in v6 and v6[k] != r}


def hybrid_score(found: set, ref_v4: Mapping, ref_v6: Mapping, seen: set) -> dict:
    """The hybrid links found against the reference's, among the links `seen` in both families."""
    true = {k for k in hybrid(ref_v4, ref_v6) if k in seen}
    hit = found & true
    return {"found": len(found), "true": len(true), "correct": len(hit),
            "precision": len(hit) / len(found) if found else None, "recall": len(hit) / len(true) if true else None}


def disagreements(ours: Mapping, ref: Mapping, evidence: Mapping[tuple[int, int], int], limit: int = 20) -> list:
    """The links the two disagree on, the ones on the most paths first: (link, ours, reference, paths)."""
    rows = [(k, ours[k], ref[k], evidence.get(k, 0)) for k in ours if k in ref and ours[k] != ref[k]]
    return sorted(rows, key=lambda r: (-r[3], r[0]))[:limit]
