#!/usr/bin/env python3
"""How far the `neighbours` mode (rule 10, issue 47) is from what the relationships allow: an
experiment, not a rule of the product. On a generated month, every source that is no VP
(evaluate.against_truth's sources and destinations) has its route to each destination
simulated by Gao-Rexford preference over a relationship graph, its own neighbours as
`--reveal neighbours` gives them (their true relationships), against the generator's true
paths; side by side in one run with the product's rule 10 on the same questions.

    .venv/bin/python bench/route_simulation.py --generated DATA:ARCHIVE

The graph: (a) the month's inferred as_relationships, what the product could use; (b) the
links it infers with their true relationships (its wrong labels apart from its missing links);
(c) the generator's true relationships, the ceiling of the preference itself. The simulation: customer
routes up the providers by length, then a peer's customer route, then providers' routes down
the customers (shortest, then the lowest next AS); prepending is not simulated. Rows per how
the source is homed (evaluate.homing). The router is the generator's own (synth/topology.Graph),
not a second one. The result goes to bench/out/route_simulation.json.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import render  # noqa: E402
from bench.common import OUT, machine_facts, write_json  # noqa: E402

MONTH = "2026-07"


def graph(rels: list[tuple[int, int, int, str]], afi: int, src: int, own: list[tuple[str, int]]):
    """The family's relationship graph (synth.topology.Graph, the generator's own Gao-Rexford
    router): `rels` (afi, as1, as2, p2c|p2p) without the source's links, and the source's own as
    revealed (`own`: (what it is, ASN)); None when its provider links make a cycle."""
    from bgp_congruency.synth.topology import Graph

    mine = [(afi, n, src, "p2c") if rel == "provider" else (afi, src, n, "p2c") if rel == "customer"
            else (afi, src, n, "p2p") for rel, n in own]
    c2p, p2p = set(), set()
    for f, a, b, rel in [r for r in rels if src not in r[1:3]] + mine:
        if f == afi:
            (c2p if rel == "p2c" else p2p).add((b, a) if rel == "p2c" else (min(a, b), max(a, b)))
    try:
        return Graph.from_asns(sorted(c2p), sorted(p2p - {(min(c, p), max(c, p)) for c, p in c2p}))
    except ValueError:
        return None


def simulate(g, src: int, d: int) -> tuple[int, ...] | None:
    """The source's route to `d` over graph `g` (None: no route, or no graph)."""
    try:
        return tuple(g.path(g.route(g.index(d)), g.index(src))) if g else None
    except (KeyError, TypeError):  # d not in the graph; no route (path None)
        return None


def measure(data: Path, archive: Path) -> dict:
    from bgp_congruency.common import duck
    from bgp_congruency.common.config import load
    from bgp_congruency.lake import published
    from bgp_congruency.selector import evaluate as E
    from bgp_congruency.selector import rules
    from bgp_congruency.selector.month import Month, table_relation
    from bgp_congruency.synth.truth import load as load_truth

    cfg = load().with_overrides(data_dir=data)
    t = load_truth(archive)
    t0 = time.perf_counter()
    _m, rule10 = E.against_truth(cfg, t, MONTH, reveal="neighbours")
    rule10_s = time.perf_counter() - t0
    # the same sources and destinations as against_truth (its seed and draws)
    con = duck.connect(cfg)
    try:
        m = Month(con, cfg, MONTH)
        pool = sorted(int(r[0]) for r in con.execute(
            f"SELECT DISTINCT dest_asn FROM {table_relation(cfg, 'pairs', MONTH)}").fetchall())
        on_paths = {int(r[0]) for r in con.execute(f"SELECT DISTINCT unnest(path) FROM {m.paths}").fetchall()}
    finally:
        con.close()
    srcs = t.sources(MONTH, E.TRUTH_SOURCES, 1, keep=on_paths.__contains__)
    rng = random.Random(f"truth:1:{MONTH}:dests")
    asked = {s: rng.sample([d for d in pool if d != s], min(E.TRUTH_DESTS, len(pool) - (s in pool))) for s in srcs}
    true = t.paths(MONTH, srcs, sorted({d for ds in asked.values() for d in ds}))
    inferred = [(r["afi"], r["as1"], r["as2"], r["rel"])
                for r in published.read(data, "as_relationships", MONTH).to_pylist()]
    generator = []
    for afi in (4, 6):
        c2p, p2p, _pre, _present = t.net.relationships(afi, MONTH)
        generator += [(afi, t.net.asns[p], t.net.asns[c], "p2c") for c, p in c2p]
        generator += [(afi, t.net.asns[a], t.net.asns[b], "p2p") for a, b in p2p]

    def tally(rows) -> dict:
        out: dict = {}
        for kind, answered, right, exact in rows:
            k = out.setdefault(kind, {"pairs": 0, "answered": 0, "correct": 0, "families": 0, "exact": 0})
            k["pairs"] += 1
            k["answered"] += answered
            k["correct"] += right
            k["families"] += 2
            k["exact"] += exact
        return out

    out = {"rule 10 (the product)": {"seconds": round(rule10_s, 1), "kinds": tally(
        (r["kind"], r["correct"] is not None, bool(r["correct"]), bool(r["v4_exact"]) + bool(r["v6_exact"]))
        for r in rule10)}}
    # the true relationship of each link the month infers one for: wrong labels apart from missing links
    truth_of = {(f, frozenset((a, b))): (f, a, b, rel) for f, a, b, rel in generator}
    relabelled = [truth_of[(f, frozenset((a, b)))] for f, a, b, _rel in inferred if (f, frozenset((a, b))) in truth_of]
    for label, rels in (("simulated, inferred relationships", inferred),
                        ("simulated, inferred links, true labels", relabelled),
                        ("simulated, true relationships", generator)):
        t0, rows = time.perf_counter(), []
        for s in srcs:
            kind, own = E.homing(t.net, MONTH, s), E.truth_neighbours(t.net, MONTH, s)
            g = {afi: graph(rels, afi, s, own[afi]) for afi in (4, 6)}
            for d in asked[s]:
                v4, v6 = true.get((4, s, d)), true.get((6, s, d))
                if v4 is None or v6 is None:  # as against_truth: nothing to be right about
                    continue
                p4, p6 = (simulate(g[afi], s, d) for afi in (4, 6))
                answered = bool(p4 and p6)
                right = answered and rules.classify(list(p4), list(p6), s, d)[0] == rules.classify(v4, v6, s, d)[0]
                rows.append((kind, answered, right, (list(p4 or ()) == list(v4)) + (list(p6 or ()) == list(v6))))
        out[label] = {"seconds": round(time.perf_counter() - t0, 1), "kinds": tally(rows)}
    return out


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/route_simulation.py: rule 10 beside routes simulated over inferred and true relationships."""
    r = runs[-1]
    intro = [f"`{r['command']}`: an experiment, not a rule of the product. The generated month's sources that",
             "are no VP, their neighbours revealed: the product's rule 10 beside each source's route simulated by",
             "Gao-Rexford preference over the month's inferred relationships, over the links it infers with their",
             "true relationships, and over the generator's true ones (the ceiling of the preference itself;",
             "prepending not simulated); against the true paths."]
    rows = []
    for mode, m in r["modes"].items():
        for kind, k in sorted(m["kinds"].items()):
            rows.append([mode, kind, f"{k['pairs']:,}", render.pct(k["answered"] / k["pairs"] if k["pairs"] else None),
                         render.pct(k["correct"] / k["answered"] if k["answered"] else None),
                         render.pct(k["exact"] / k["families"] if k["families"] else None), render.num(m["seconds"], 1)])
    return render.section("Routes simulated over the relationships (bench/route_simulation.py)", intro,
                    ["mode", "sources", "pairs", "coverage", "accuracy", "paths exact", "seconds"], rows, "llrrrrr")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--generated", required=True, metavar="DATA:ARCHIVE",
                    help="a generated month's data dir (run and relationships published) and its archive")
    a = ap.parse_args(argv)
    data, _, archive = a.generated.partition(":")
    if not archive:
        ap.error("--generated: DATA:ARCHIVE expected")
    res = {"command": "bench/route_simulation.py --generated " + a.generated, "machine": machine_facts(),
           "month": MONTH, "modes": measure(Path(data), Path(archive))}
    write_json(res, OUT / "route_simulation.json")
    print(OUT / "route_simulation.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
