"""How often is the path selector right? The held-out evaluation of its proxy rule (issue 31).

Operators are almost never vantage points, so `advise --from ASN` mostly answers through
proxy VPs (selector/rules.py). Here every VP of the month with pairs (a dual-stacked,
default-free VP) is held out in turn: every VP of its ASN, in every collector group and
both families, is hidden from what the selector reads (Month(hidden=...): the `paths`
table without them, which is what recomputing the month without their rows gives the
selector, since a VP's paths do not depend on other VPs' rows), the selector is asked for
that AS to each destination the VP has a pair for, and the answer is compared with the
VP's own observed pair: the class, the advice's mode, and each family's path (exact, and
its edit distance in AS hops).

Reported: coverage (answers with a class other than `unknown`), accuracy among the
answered, per rule the answer came from (`through`: a VP whose path crosses the source;
`upstream`: a VP the source hands traffic to, the source put in front; `none`: no VP
stands in), the confusion matrix of classes, and accuracy per confidence bin.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from bgp_congruency.common import duck, layout, published
from bgp_congruency.common.config import Config
from bgp_congruency.congruency.method import edit_distance
from bgp_congruency.selector import rules
from bgp_congruency.selector.advice import proxy_answer
from bgp_congruency.selector.month import Month, resolve_month, table_relation

#: Confidence bins of the reliability table: [0, 0.1), [0.1, 0.2), ... [0.9, 1.0].
BINS = 10
RULES = ("through", "upstream", "none")


def _paths_equal(pred, obs) -> tuple[bool | None, int | None]:
    if not pred:
        return None, None
    return list(pred) == list(obs), edit_distance(list(pred), list(obs))


def held_out(cfg: Config, month: str | None = None, progress=None) -> tuple[str, list[dict]]:
    """(month, one row per observed pair: what the selector answers with the pair's VP held out)."""
    month = resolve_month(cfg, month)
    con = duck.connect(cfg)
    try:
        con.execute(f"CREATE TEMP TABLE eval_paths AS SELECT * FROM {table_relation(cfg, 'paths', month)}")
        pairs = con.execute(f"""
            SELECT vp_group, vp_asn, dest_asn, v4_path, v6_path, congruent, shared_asns, shared_adjacent
            FROM {table_relation(cfg, 'pairs', month)}
            ORDER BY vp_asn, vp_group, dest_asn""").fetchall()
        by_asn: dict[int, list] = defaultdict(list)
        for p in pairs:
            by_asn[int(p[1])].append(p)
        rows = []
        for i, (asn, mine) in enumerate(sorted(by_asn.items())):
            if progress:
                progress(i, len(by_asn), asn)
            m = Month(con, cfg, month, hidden=frozenset({asn}), paths="eval_paths")
            for g, a, d, v4, v6, congruent, shared, adjacent in mine:
                observed = rules.hint_class(congruent, shared, adjacent)
                hint, rule = proxy_answer(m, int(a), int(d), int(d), [])
                pred = hint["hint_class"]
                e4, h4 = _paths_equal(hint["v4_path"], v4)
                e6, h6 = _paths_equal(hint["v6_path"], v6)
                rows.append({
                    "month": month, "vp_group": g, "vp_asn": int(a), "dest_asn": int(d), "rule": rule or "none",
                    "proxies": len(hint["proxies"] or []), "observed_class": observed, "predicted_class": pred,
                    "correct": None if pred == "unknown" else pred == observed,
                    "confidence": hint["confidence"],
                    "observed_mode": rules.advice(observed, 4).mode, "predicted_mode": hint["mode"],
                    "v4_exact": e4, "v6_exact": e6, "v4_hop_distance": h4, "v6_hop_distance": h6})
        return month, rows
    finally:
        con.close()


def _acc(rows: list[dict]) -> dict:
    answered = [r for r in rows if r["correct"] is not None]
    right = sum(r["correct"] for r in answered)
    return {"pairs": len(rows), "answered": len(answered), "correct": right,
            "coverage": len(answered) / len(rows) if rows else None,
            "accuracy": right / len(answered) if answered else None}


def summary(rows: list[dict]) -> dict:
    """Coverage, accuracy, per rule, the confusion matrix and the reliability bins of `rows`."""
    answered = [r for r in rows if r["correct"] is not None]
    bins = []
    for b in range(BINS):
        lo, hi = b / BINS, (b + 1) / BINS
        inb = [r for r in answered if lo <= (r["confidence"] or 0.0) < hi or (b == BINS - 1 and r["confidence"] == 1.0)]
        bins.append({"low": lo, "high": hi, "answers": len(inb),
                     "mean_confidence": sum(r["confidence"] for r in inb) / len(inb) if inb else None,
                     "accuracy": sum(r["correct"] for r in inb) / len(inb) if inb else None})
    confusion = defaultdict(Counter)
    for r in rows:
        confusion[r["observed_class"]][r["predicted_class"]] += 1
    paths = {}
    for fam in (4, 6):
        given = [r for r in answered if r[f"v{fam}_exact"] is not None]
        paths[f"v{fam}"] = {"answers": len(given),
                            "exact": sum(r[f"v{fam}_exact"] for r in given) / len(given) if given else None,
                            "within_one_hop": sum(r[f"v{fam}_hop_distance"] <= 1 for r in given) / len(given)
                            if given else None}
    return {**_acc(rows), "rules": {k: _acc([r for r in rows if r["rule"] == k]) for k in RULES},
            "mode_accuracy": (sum(r["predicted_mode"] == r["observed_mode"] for r in answered) / len(answered)
                              if answered else None),
            "paths": paths, "bins": bins,
            "confusion": {o: dict(sorted(c.items())) for o, c in sorted(confusion.items())}}


def publish(cfg: Config, month: str, rows: list[dict]) -> Path:
    """The month's `selector_eval` table (docs/SCHEMA.md), replaced whole by rename."""
    from bgp_congruency.common.tables import SELECTOR_EVAL

    root = layout.local(cfg.data_dir, "congruency evaluate")
    return published.write_rows(root, "selector_eval", month, rows, SELECTOR_EVAL)
