"""How often is the path selector right? The held-out evaluation of its proxy rule (issue 31).

Operators are almost never vantage points, so `advise --from ASN` mostly answers through
proxy VPs (selector/rules.py). Here every VP of the month with pairs (a dual-stacked,
default-free VP) is held out in turn: every VP of its ASN, in every collector group and
both families, is hidden from what the selector reads (the `paths` and `pairs` tables
without their rows, which is what recomputing the month without them gives the selector,
since a VP's paths do not depend on other VPs' rows: Month.hiding in selector/reference.py, a
filter of every join in the set-based runs), the selector is asked for
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

selector/reference.proxies_held_out and held_out_reference ask one question at a time: the
references of today's rules' evaluation (selector/proxies.py) and of the evaluation with the
source's evidence revealed (selector/reveal.py).
"""
from __future__ import annotations

import os
import random
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bgp_congruency.common import duck, layout
from bgp_congruency.common.config import Config
from bgp_congruency.common.tables import SELECTOR_EVAL, sql_type
from bgp_congruency.congruency.method import edit_distance
from bgp_congruency.lake import published
from bgp_congruency.selector import calibration, rules
from bgp_congruency.selector import proxies as P
from bgp_congruency.selector import reveal as R
from bgp_congruency.selector.month import Month, resolve_month, table_relation
from bgp_congruency.selector.question import Evidence, Neighbour
from bgp_congruency.synth import truth as T

#: Confidence bins of the reliability table: [0, 0.1), [0.1, 0.2), ... [0.9, 1.0].
BINS = 10
RULES = ("through", "provider", "one-neighbour", "destination", "upstream", "none")
#: The rules of the evaluation with the source's evidence revealed (selector/rules.py 8-11, then 6).
REVEALED_RULES = ("first-hop", "through", "neighbours", "inferred", "destination", "none")


def _paths_equal(pred, obs) -> tuple[bool | None, int | None]:
    if not pred:
        return None, None
    return list(pred) == list(obs), edit_distance(list(pred), list(obs))


def pairs_by_vp_as(con, cfg: Config, month: str) -> dict[int, list]:
    """The month's paths and pairs as temp tables eval_paths and eval_pairs (what Month reads
    with a VP AS hidden), and the observed pairs by VP AS: the questions of a held-out run."""
    con.execute(f"CREATE TEMP TABLE eval_paths AS SELECT * FROM {table_relation(cfg, 'paths', month)}")
    con.execute(f"CREATE TEMP TABLE eval_pairs AS SELECT * FROM {table_relation(cfg, 'pairs', month)}")
    pairs = con.execute("""
        SELECT vp_group, vp_asn, dest_asn, v4_path, v6_path, congruent, shared_asns, shared_adjacent
        FROM eval_pairs ORDER BY vp_asn, vp_group, dest_asn""").fetchall()
    by_asn: dict[int, list] = defaultdict(list)
    for p in pairs:
        by_asn[int(p[1])].append(p)
    return by_asn


def revealed_evidence(reveal: str, own: dict, v4, v6, dest: int) -> Evidence:
    """What `--reveal` gives of a held-out VP AS for one of its pairs: `own` (afi -> its
    neighbours, the most used first: neighbours_of) for `neighbours`, the second AS of the
    pair's two paths for `first-hop`."""
    if reveal == "first-hop":
        return Evidence({}, {(4, dest): int(v4[1]), (6, dest): int(v6[1])}, "revealed first-hop")
    return Evidence({afi: tuple(Neighbour(n, "provider", i) for i, n in enumerate(ns)) for afi, ns in own.items()},
                    {}, "revealed neighbours")


def neighbours_of(con, paths: str, asn: int) -> dict[int, list[int]]:
    """afi -> the second ASes of `asn`'s paths of the month, the most used first (then the lower ASN)."""
    out: dict[int, list[int]] = {4: [], 6: []}
    for afi, n in con.execute(f"""SELECT afi, path[2] FROM {paths} WHERE vp_asn = ? AND len(path) >= 2
                                  GROUP BY ALL ORDER BY afi, count(*) DESC, path[2]""", [asn]).fetchall():
        out[int(afi)].append(int(n))
    return out


def scored_row(month: str, group, src: int, dest: int, v4, v6, observed: str, hint: dict, rule: str | None) -> dict:
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


#: The kinds of source of the evaluation against a generated archive's routes (synth/truth.KINDS;
#: with a reveal, stubs with one neighbour per family apart from multi-homed ones: `homing`).
KINDS_TRUTH = ("stub", "multihomed-stub", "transit")
#: Sources and destinations per source of the evaluation against a generated archive's routes.
TRUTH_SOURCES, TRUTH_DESTS = 40, 30


def truth_evidence(net, month: str, reveal: str, src: int, true: dict, dest: int) -> Evidence:
    """What `--reveal` gives of a generated source: its true first hop per family toward `dest`
    (first-hop), or its true neighbours per family with their true relationships, providers
    first, then peers, then customers, each by ASN (neighbours)."""
    if reveal == "first-hop":
        return Evidence({}, {(afi, dest): true[(afi, src, dest)][1] for afi in (4, 6)}, "revealed first-hop")
    return Evidence({afi: tuple(Neighbour(a, rel, i) for i, (rel, a) in enumerate(ns))
                     for afi, ns in truth_neighbours(net, month, src).items()}, {}, "revealed neighbours")


def truth_neighbours(net, month: str, src: int) -> dict[int, list[tuple[str, int]]]:
    """afi -> (what it is to src, ASN) of src's neighbours in the generated Internet, providers
    first, then peers, then customers, each by ASN."""
    i = net.asns.index(src)
    out = {}
    for afi in (4, 6):
        c2p, p2p, _pre, _present = net.relationships(afi, month)
        ns = [("provider", net.asns[p]) for c, p in c2p if c == i] + \
             [("peer", net.asns[b if a == i else a]) for a, b in p2p if i in (a, b)] + \
             [("customer", net.asns[c]) for c, p in c2p if p == i]
        out[afi] = sorted(ns, key=lambda x: (NEIGHBOUR_ORDER.index(x[0]), x[1]))
    return out


#: The order the generated sources' neighbours are declared in.
NEIGHBOUR_ORDER = ("provider", "peer", "customer")


def homing(net, month: str, src: int) -> str:
    """stub (one neighbour it can leave through in each family), multihomed-stub, or transit
    (it has customers)."""
    ns = truth_neighbours(net, month, src)
    if any(rel == "customer" for afi in ns for rel, _a in ns[afi]):
        return "transit"
    return "multihomed-stub" if any(len(ns[afi]) > 1 for afi in ns) else "stub"


def against_truth(cfg: Config, truth, month: str | None = None, sources: int = TRUTH_SOURCES,
                  dests: int = TRUTH_DESTS, seed: int = 1, progress=None, reveal: str = "none",
                  inferred: bool = rules.INFERRED_ROUTES) -> tuple[str, list[dict]]:
    """(month, one row per (source, destination)): the selector's answer for ASes that are no
    VP of a generated month (synth/truth.py: half stubs, half transit, drawn with `seed`,
    among those the month's paths show: the selector answers no other), each to `dests` of the
    month's pair destinations, against the generator's true paths of both families. Every VP
    stays visible (the sources are none); a row's `kind` says stub or transit. `truth`: the
    archive's generated Internet (synth/truth.load)."""
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
        # no dual-stacked route: nothing to be right about
        ds_of = {s: [d for d in asked[s] if true.get((4, s, d)) is not None and true.get((6, s, d)) is not None]
                 for s in srcs}
        if reveal == "none":  # every source's questions at once, through the engine advise answers by
            qs = [(s, d, d) for s in srcs for d in ds_of[s]]
            got_none = iter(P.sources_answers(con, cfg, month, qs))
        rows = []
        for i, s in enumerate(srcs):
            if progress:
                progress(i, len(srcs), s)
            ds = ds_of[s]
            if reveal != "none":  # the source's questions at once, through the engine advise answers by
                ev = Evidence({}, {}, "revealed")
                for d in ds:
                    ev = ev.merged(truth_evidence(t.net, month, reveal, s, true, d))
                _t, hints = R.source_hints(con, cfg, month, s, [(d, d) for d in ds], ev.via, ev.first_hop, ev.how,
                                           None, inferred)
            for j, d in enumerate(ds):
                v4, v6 = true[(4, s, d)], true[(6, s, d)]
                observed, _ = rules.classify(v4, v6, s, d)
                got = next(got_none)[:2] if reveal == "none" else hints[j]
                rows.append({**scored_row(month, None, s, d, v4, v6, observed, *got),
                             "kind": t.kind(s) if reveal == "none" else homing(t.net, month, s), "reveal": reveal})
        return month, rows
    finally:
        con.close()


def _acc(answered: np.ndarray, right: np.ndarray, mask: np.ndarray | None = None) -> dict:
    """pairs, answered, right, coverage, accuracy of the rows in `mask` (all without one)."""
    if mask is not None:
        answered, right = answered[mask], right[mask]
    n, a, k = len(answered), int(answered.sum()), int((answered & right).sum())
    return {"pairs": n, "answered": a, "correct": k, "coverage": a / n if n else None,
            "accuracy": k / a if a else None}


def destination_ceiling(rows: list[dict] | pa.Table) -> float | None:
    """The share of `rows` whose observed class is the one most common among the rows to
    the same destination: the best any rule can do that gives every source the same class
    toward a destination (the `destination` rule, and any rule that knows nothing of the
    source), even knowing the held-out answers. Where it sits below the accuracy target,
    only rules that see the source's own routes (`through`, `provider`) can close the gap."""
    t = calibration.table(rows)
    if not t.num_rows:
        return None
    cls, _ = calibration.codes(t, "observed_class")
    keys, counts = np.unique(calibration.column(t, "dest_asn").astype(np.int64) * 8 + (cls + 1), return_counts=True)
    dest = keys // 8  # sorted by destination, then class: each destination's runs of classes
    starts = np.flatnonzero(np.r_[True, dest[1:] != dest[:-1]])
    return int(np.maximum.reduceat(counts, starts).sum()) / t.num_rows


def _text(t: pa.Table, name: str):
    """Column `name` of `t` as strings (all null where rows given as dicts lack it)."""
    return t.column(name).cast(pa.string()) if name in t.column_names else pa.nulls(t.num_rows, pa.string())


def _true(mask) -> np.ndarray:
    """An Arrow comparison as numpy bools, a null (nothing to compare) as False."""
    return pc.fill_null(mask, False).to_numpy(zero_copy_only=False)


def summary(rows: list[dict] | pa.Table) -> dict:
    """Coverage, accuracy, per rule, the confusion matrix and the reliability bins of `rows`
    (dicts, or an Arrow table: a month's millions of answers, over whole columns)."""
    t = calibration.table(rows)
    answered = calibration.valid(t, "correct")
    right = calibration.column(t, "correct", False).astype(bool)
    bins = calibration.reliability(t, "confidence", BINS)
    (obs, obs_v), (pred, pred_v) = calibration.codes(t, "observed_class"), calibration.codes(t, "predicted_class")
    pairs, counts = np.unique((obs + 1) * (len(pred_v) + 1) + (pred + 1), return_counts=True)
    names_o, names_p = [None, *obs_v], [None, *pred_v]
    confusion = defaultdict(dict)
    for pair, n in zip(pairs.tolist(), counts.tolist()):
        confusion[names_o[pair // (len(pred_v) + 1)]][names_p[pair % (len(pred_v) + 1)]] = n
    paths = {}
    for fam in (4, 6):
        given = answered & calibration.valid(t, f"v{fam}_exact")
        g = int(given.sum())
        exact = calibration.column(t, f"v{fam}_exact", False).astype(bool)
        hops = calibration.column(t, f"v{fam}_hop_distance", 0.0)
        paths[f"v{fam}"] = {"answers": g, "exact": int(exact[given].sum()) / g if g else None,
                            "within_one_hop": int((hops[given] <= 1).sum()) / g if g else None}
    kind, kinds = calibration.codes(t, "kind")
    cal = calibration.reliability(t, by=calibration.cell_confidence(t))
    revealed = _true(pc.is_in(_text(t, "reveal"), value_set=pa.array(["first-hop", "neighbours"]))).any()
    same_mode = _true(pc.equal(_text(t, "observed_mode"), _text(t, "predicted_mode")))
    rule = _text(t, "rule")
    a = int(answered.sum())
    return {**_acc(answered, right),
            "rules": {k: _acc(answered, right, _true(pc.equal(rule, k))) for k in (REVEALED_RULES if revealed else RULES)},
            "kinds": {k: _acc(answered, right, kind == i) for i, k in sorted(enumerate(kinds), key=lambda x: x[1])},
            "destination_ceiling": destination_ceiling(t),
            "stated_worst_gap": calibration.worst_gap(bins, calibration.MIN_ANSWERS),
            "calibrated": {"bins": cal, "worst_gap": calibration.worst_gap(cal), "curve": calibration.curve(t)},
            "mode_accuracy": int((answered & same_mode).sum()) / a if a else None,
            "paths": paths, "bins": bins,
            "confusion": {o: dict(sorted(c.items())) for o, c in sorted(confusion.items())}}


def spill(cfg: Config, rows: pa.Table) -> Path:
    """`rows` (a set-based run's answers, millions at the study's scale) as a Parquet file of the
    data dir's staging folder, for publish: the caller drops its table, so the rows are never
    in Python while DuckDB fits their calibration (every process of a scale run stays within
    duckdb_memory_limit and one copy of the answers). Written whole or not at all."""
    folder = Path(layout.staging_dir(layout.local(cfg.data_dir, "congruency evaluate")))
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="selector_eval-", suffix=".parquet", dir=folder)
    os.close(fd)
    try:
        pq.write_table(rows, name)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


def publish(cfg: Config, month: str, rows: list[dict] | pa.Table | Path, kinds: tuple[str, ...],
            reveal: str = "none") -> tuple[Path, pa.Table]:
    """The month's `selector_eval` table (docs/SCHEMA.md): `rows` instead of the month's rows
    of `kinds` (held-out VPs, or a generated month's stubs and transit ASes) and of this
    `reveal`, beside the others; every row's calibrated confidence is fitted again, per reveal
    (selector/calibration.py, leave one source out, in SQL). `rows` may be spill()'s file, which
    publish removes. Returns the file and `rows` with their calibrated confidence, as a table
    (summary() reads it over whole columns)."""
    root = layout.local(cfg.data_dir, "congruency evaluate")
    spilled = rows if isinstance(rows, Path) else None
    if spilled is None:
        new = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(
            [{**r, "reveal": r.get("reveal", reveal)} for r in rows], schema=SELECTOR_EVAL.remove(
                SELECTOR_EVAL.get_field_index("calibrated_confidence")))
        new = new.append_column("calibrated_confidence", pa.nulls(new.num_rows, pa.float64())) \
            if "calibrated_confidence" not in new.column_names else new
        new = new.select(SELECTOR_EVAL.names).cast(SELECTOR_EVAL)
    con = duck.connect(cfg)
    try:
        if spilled is None:
            con.register("eval_new", new)
        else:  # spill()'s file: DuckDB reads it, no copy in Python beside DuckDB's memory
            con.execute(f"CREATE TEMP VIEW eval_new AS SELECT *, NULL::DOUBLE AS calibrated_confidence "
                        f"FROM read_parquet({duck.quote(str(spilled))})")
        parts = ["SELECT * FROM eval_new"]
        old = published.files(root, ["selector_eval"], month)["selector_eval"] \
            if month in published.months(root, "selector_eval") else []
        if old:
            # the month's other rows read by DuckDB from their files (never whole in Python beside
            # the new ones: at the study's scale each mode is millions of rows); a column from
            # before it existed is null
            rel = "read_parquet([" + ", ".join(duck.quote(duck.glob_literal(f)) for f in old) + "], union_by_name = true)"
            have = {r[0] for r in con.execute(f"SELECT column_name FROM (DESCRIBE SELECT * FROM {rel})").fetchall()}
            cols = ", ".join(f.name if f.name in have else f"CAST(NULL AS {sql_type(f.type, 'duckdb')}) AS {f.name}"
                             for f in SELECTOR_EVAL if f.name != "month")
            # rows from before kinds are VPs held out, from before reveal today's rules (none)
            parts.append(f"""SELECT {cols} FROM {rel} WHERE NOT (coalesce(kind, 'vp') IN
                             ({', '.join(duck.quote(k) for k in kinds)}) AND coalesce(reveal, 'none') = {duck.quote(reveal)})""")
        # the month's every row: a view over the Arrow tables, read in place (no copy of millions of rows)
        con.execute(f"CREATE TEMP VIEW eval_every AS SELECT * REPLACE (coalesce(kind, 'vp') AS kind, "
                    f"coalesce(reveal, 'none') AS reveal) FROM ({' UNION ALL BY NAME '.join(parts)})")
        # written as DuckDB streams it: the month's rows never whole in Python beside DuckDB's own
        fitted = con.execute(f"SELECT * FROM ({calibration.held_out_sql(con, 'eval_every')}) "
                             "ORDER BY reveal, kind, vp_asn, vp_group, dest_asn").to_arrow_reader(100_000)
        where = published.write_rows(root, "selector_eval", month, fitted, SELECTOR_EVAL)
    finally:
        con.close()
        if spilled is not None:
            spilled.unlink(missing_ok=True)
    mine = pq.read_table(where, filters=[("reveal", "=", reveal), ("kind", "in", list(kinds))])
    return where, mine.append_column("month", pa.array([month] * mine.num_rows, pa.string()))
