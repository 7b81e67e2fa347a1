"""How often is the path selector right? The held-out evaluation of its proxy rule (issue 31).

Operators are almost never vantage points, so `advise --from ASN` mostly answers through
proxy VPs (selector/rules.py). Here every VP of the month with pairs (a dual-stacked,
default-free VP) is held out in turn: every VP of its ASN, in every collector group and
both families, is hidden from what the selector reads (Month(hidden=...): the `paths`
and `pairs` tables without them, which is what recomputing the month without their rows gives the
selector, since a VP's paths do not depend on other VPs' rows), the selector is asked for
that AS to each destination the VP has a pair for, and the answer is compared with the
VP's own observed pair: the class, the advice's mode, and each family's path (exact, and
its edit distance in AS hops).

Reported: coverage (answers with a class other than `unknown`), accuracy among the
answered, per rule the answer came from (`through`: a VP whose path crosses the source;
`provider`: a stub in front of its neighbours' routes; `one-neighbour`: a stub behind one
AS, the same in both families, with that AS's class; `destination`: the class most pairs
to the destination show; `upstream`: a VP the source hands traffic to, the source put in
front; `none`: nothing stands in), the confusion matrix of
classes, accuracy per stated and per calibrated confidence bin (selector/calibration.py),
the accuracy-coverage curve, and the ceiling of rules that answer per destination.
`against_truth` asks the same of ASes that are no VP of a generated month, against the
generator's true routes (synth/truth.py).
"""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from pathlib import Path

from bgp_congruency.common import duck, layout, published
from bgp_congruency.common.config import Config
from bgp_congruency.congruency.method import edit_distance
from bgp_congruency.selector import calibration, rules
from bgp_congruency.selector.advice import proxy_answer
from bgp_congruency.selector.month import Month, resolve_month, table_relation

#: Confidence bins of the reliability table: [0, 0.1), [0.1, 0.2), ... [0.9, 1.0].
BINS = 10
RULES = ("through", "provider", "one-neighbour", "destination", "upstream", "none")


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
        con.execute(f"CREATE TEMP TABLE eval_pairs AS SELECT * FROM {table_relation(cfg, 'pairs', month)}")
        pairs = con.execute("""
            SELECT vp_group, vp_asn, dest_asn, v4_path, v6_path, congruent, shared_asns, shared_adjacent
            FROM eval_pairs ORDER BY vp_asn, vp_group, dest_asn""").fetchall()
        by_asn: dict[int, list] = defaultdict(list)
        for p in pairs:
            by_asn[int(p[1])].append(p)
        rows = []
        for i, (asn, mine) in enumerate(sorted(by_asn.items())):
            if progress:
                progress(i, len(by_asn), asn)
            m = Month(con, cfg, month, hidden=frozenset({asn}), paths="eval_paths", pairs="eval_pairs")
            for g, a, d, v4, v6, congruent, shared, adjacent in mine:
                observed = rules.hint_class(congruent, shared, adjacent)
                rows.append({**_row(month, g, int(a), int(d), v4, v6, observed,
                                     *proxy_answer(m, int(a), int(d), int(d), [])), "kind": "vp"})
        return month, rows
    finally:
        con.close()


def _row(month: str, group, src: int, dest: int, v4, v6, observed: str, hint: dict, rule: str | None) -> dict:
    """One evaluated answer: the selector's `hint` (from `rule`) for src -> dest against the
    observed (or true) paths v4, v6 and their class."""
    pred = hint["hint_class"]
    e4, h4 = _paths_equal(hint["v4_path"], v4)
    e6, h6 = _paths_equal(hint["v6_path"], v6)
    return {"month": month, "vp_group": group, "vp_asn": src, "dest_asn": dest, "rule": rule or "none",
            "proxies": len(hint["proxies"] or []), "observed_class": observed, "predicted_class": pred,
            "correct": None if pred == "unknown" else pred == observed, "confidence": hint["confidence"],
            "observed_mode": rules.advice(observed, 4).mode, "predicted_mode": hint["mode"],
            "v4_exact": e4, "v6_exact": e6, "v4_hop_distance": h4, "v6_hop_distance": h6}


#: The kinds of source of the evaluation against a generated archive's routes (synth/truth.KINDS).
KINDS_TRUTH = ("stub", "transit")
#: Sources and destinations per source of the evaluation against a generated archive's routes.
TRUTH_SOURCES, TRUTH_DESTS = 40, 30


def against_truth(cfg: Config, truth, month: str | None = None, sources: int = TRUTH_SOURCES,
                  dests: int = TRUTH_DESTS, seed: int = 1, progress=None) -> tuple[str, list[dict]]:
    """(month, one row per (source, destination)): the selector's answer for ASes that are no
    VP of a generated month (synth/truth.py: half stubs, half transit, drawn with `seed`,
    among those the month's paths show: the selector answers no other), each to `dests` of the
    month's pair destinations, against the generator's true paths of both families. Every VP
    stays visible (the sources are none); a row's `kind` says stub or transit. `truth`: the
    archive's generated Internet (synth/truth.load)."""
    from bgp_congruency.synth import truth as T

    month = resolve_month(cfg, month)
    t = truth
    if t.months and month not in t.months:
        raise T.TruthError(f"generated for {', '.join(t.months)}, not {month}")
    con = duck.connect(cfg)
    try:
        m = Month(con, cfg, month)
        strangers = sorted({a for _g, a in m.vps} - t.vp_asns)
        if strangers:  # a month ingested from another archive (or a real one): no truth to check against
            raise T.TruthError(f"{month} was not ingested from this archive: its VP AS{strangers[0]} is none of the "
                               f"archive's {len(t.vp_asns)} VPs")
        pool = sorted(int(r[0]) for r in con.execute(
            f"SELECT DISTINCT dest_asn FROM {table_relation(cfg, 'pairs', month)}").fetchall())
        on_paths = {int(r[0]) for r in con.execute(f"SELECT DISTINCT unnest(path) FROM {m.paths}").fetchall()}
        srcs = t.sources(month, sources, seed, keep=on_paths.__contains__)  # one scan, not one per AS
        rng = random.Random(f"truth:{seed}:{month}:dests")
        asked = {s: rng.sample([d for d in pool if d != s], min(dests, len(pool) - (s in pool))) for s in srcs}
        true = t.paths(month, srcs, sorted({d for ds in asked.values() for d in ds}))
        rows = []
        for i, s in enumerate(srcs):
            if progress:
                progress(i, len(srcs), s)
            for d in asked[s]:
                v4, v6 = true.get((4, s, d)), true.get((6, s, d))
                if v4 is None or v6 is None:  # no dual-stacked route: nothing to be right about
                    continue
                observed, _ = rules.classify(v4, v6, s, d)
                rows.append({**_row(month, None, s, d, v4, v6, observed, *proxy_answer(m, s, d, d, [])),
                             "kind": t.kind(s)})
        return month, rows
    finally:
        con.close()


def _acc(rows: list[dict]) -> dict:
    answered = [r for r in rows if r["correct"] is not None]
    right = sum(r["correct"] for r in answered)
    return {"pairs": len(rows), "answered": len(answered), "correct": right,
            "coverage": len(answered) / len(rows) if rows else None,
            "accuracy": right / len(answered) if answered else None}


def destination_ceiling(rows: list[dict]) -> float | None:
    """The share of `rows` whose observed class is the one most common among the rows to
    the same destination: the best any rule can do that gives every source the same class
    toward a destination (the `destination` rule, and any rule that knows nothing of the
    source), even knowing the held-out answers. Where it sits below the accuracy target,
    only rules that see the source's own routes (`through`, `provider`) can close the gap."""
    by_dest: dict[int, Counter] = defaultdict(Counter)
    for r in rows:
        by_dest[r["dest_asn"]][r["observed_class"]] += 1
    return sum(max(c.values()) for c in by_dest.values()) / len(rows) if rows else None


def summary(rows: list[dict]) -> dict:
    """Coverage, accuracy, per rule, the confusion matrix and the reliability bins of `rows`."""
    answered = [r for r in rows if r["correct"] is not None]
    bins = calibration.reliability(rows, "confidence", BINS)
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
    kinds = sorted({r["kind"] for r in rows})
    cal = calibration.reliability(rows)
    return {**_acc(rows), "rules": {k: _acc([r for r in rows if r["rule"] == k]) for k in RULES},
            "kinds": {k: _acc([r for r in rows if r["kind"] == k]) for k in kinds},
            "destination_ceiling": destination_ceiling(rows),
            "stated_worst_gap": calibration.worst_gap(bins, calibration.MIN_ANSWERS),
            "calibrated": {"bins": cal, "worst_gap": calibration.worst_gap(cal), "curve": calibration.curve(rows)},
            "mode_accuracy": (sum(r["predicted_mode"] == r["observed_mode"] for r in answered) / len(answered)
                              if answered else None),
            "paths": paths, "bins": bins,
            "confusion": {o: dict(sorted(c.items())) for o, c in sorted(confusion.items())}}


def publish(cfg: Config, month: str, rows: list[dict], kinds: tuple[str, ...]) -> Path:
    """The month's `selector_eval` table (docs/SCHEMA.md): `rows` instead of the month's rows
    of `kinds` (held-out VPs, or a generated month's stubs and transit ASes), beside
    those of the other kinds; every row's calibrated confidence is fitted again on the whole
    (selector/calibration.py, leave one source out). Sets `calibrated_confidence` on `rows`."""
    from bgp_congruency.common.tables import SELECTOR_EVAL

    root = layout.local(cfg.data_dir, "congruency evaluate")
    kept = []
    if month in published.months(root, "selector_eval"):
        for r in published.read(root, "selector_eval", month).to_pylist():
            r = {**r, "month": month, "kind": r.get("kind") or "vp"}  # rows from before kinds are VPs held out
            if r["kind"] not in kinds:
                kept.append(r)
    every = kept + rows
    for r, c in zip(every, calibration.held_out(every)):
        r["calibrated_confidence"] = c
    return published.write_rows(root, "selector_eval", month, every, SELECTOR_EVAL)
