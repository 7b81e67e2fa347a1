#!/usr/bin/env python3
"""The path selector with the source's own evidence (issue 47): each evaluation mode and
fallback side by side, on the real sample (each VP AS held out) and on a generated month's
ASes that are no VP (against the generator's truth); and at scale, `evaluate --reveal
none` and `--reveal first-hop` and one `advise` with declared neighbours and one without, each a fresh process.
The real run also times today's rules one question at a time (selector/reference.proxies_held_out,
the set-based none mode's reference) beside the set-based run.

    .venv/bin/python bench/reveal.py --real DATA --generated DATA:ARCHIVE [--scale DATA --memory-limit 4GB]
    .venv/bin/python bench/reveal.py --vps 12,24,48
    .venv/bin/python bench/reveal.py --inferred-at-scale DATA --memory-limit 4GB

Rows: today's rules (none), first hops revealed (rules 8-9), neighbours revealed (9-10), and
each with the fallbacks measured (rule 11 `inferred`, on in the product since 2026-11-30 and
in the rows that name it; rule 6 `destination`, off):
coverage, accuracy, per rule, the worst calibrated bin of 30 answers or more (each row's
calibration fitted on the other sources' answers of the same mode; binned by the confidence
the calibration of all of them states for the answer's cell, and beside it by each answer's own
held-out value, the binning before: selector/calibration.py says why it changed), and the
accuracy-coverage curve. On the generated month, the `neighbours` target's own figures too (issue 47: 90% at 70%
coverage on the multi-homed stubs and transit sources together): the best coverage at 90% or
more, and the best accuracy at 70% coverage or more, on the calibrated curve of those sources.

`--vps` repeats the generated `neighbours` rows on months that differ only in their number of
VPs: the guide's commands (`congruency synth --ases 400 --vps N`, seed 1; `congruency run`;
`evaluate --truth`), to say whether more VPs (more of the links observed) close the target.
`--inferred-at-scale` times the first-hop mode's answers without and with rule 11 on a month at
scale, side by side (issue 59: rule 11 at most 1.5x the mode without it).

The result goes to bench/out/reveal.json (a --scale, --vps or --inferred-at-scale run alone:
reveal-scale.json, reveal-vps.json, reveal-inferred-at-scale.json).
"""
from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common, render  # noqa: E402
from bench.common import OUT, duckdb_config, machine_facts, measured, run_child, write_json  # noqa: E402

MONTH = "2026-07"
EXE = [sys.executable, "-m", "bgp_congruency.cli.main"]
#: (label, reveal, inferred, destination fallback)
MODES = (("none: today's rules", "none", False, False),
         ("first-hop", "first-hop", False, False),
         ("first-hop + rule 11 inferred", "first-hop", True, False),
         ("first-hop + rule 6 destination", "first-hop", False, True),
         ("neighbours", "neighbours", False, False),
         ("neighbours + rule 11 inferred", "neighbours", True, False))


def _summary(rows: list[dict]) -> dict:
    from bgp_congruency.selector import calibration
    from bgp_congruency.selector import evaluate as E

    for r, c in zip(rows, calibration.held_out(rows)):
        r["calibrated_confidence"] = c
    s = E.summary(rows)
    return {"pairs": s["pairs"], "answered": s["answered"], "coverage": s["coverage"], "accuracy": s["accuracy"],
            "rules": {k: v for k, v in s["rules"].items() if v["pairs"]},
            "kinds": s["kinds"], "worst_gap": s["calibrated"]["worst_gap"], "curve": s["calibrated"]["curve"],
            # the bins of each answer's own held-out value (the binning before 2026-11-28), beside
            "worst_gap_own_bins": calibration.worst_gap(calibration.reliability(rows))}


#: The sources of the `neighbours` target, and its bar (issue 47): accuracy at coverage.
TARGET_KINDS, TARGET = ("multihomed-stub", "transit"), (0.90, 0.70)


def target(rows: list[dict]) -> dict:
    """The `neighbours` target's figures over `rows` (calibrated already): the multi-homed stubs
    and transit sources together, their calibrated curve (selector/calibration.curve), the best
    coverage at TARGET's accuracy or more and the best accuracy at its coverage or more."""
    from bgp_congruency.selector import calibration
    from bgp_congruency.selector.evaluate import TRUTH_DESTS

    mine = [r for r in rows if r["kind"] in TARGET_KINDS]
    answered = [r for r in mine if r["correct"] is not None]
    acc, cov = TARGET
    curve = calibration.curve(mine)
    return {"sources": {k: sum(r["kind"] == k for r in rows) // TRUTH_DESTS for k in TARGET_KINDS},
            "pairs": len(mine), "coverage": len(answered) / len(mine) if mine else None,
            "accuracy": sum(r["correct"] for r in answered) / len(answered) if answered else None,
            "coverage_at_accuracy": max((c["coverage"] for c in curve if (c["accuracy"] or 0) >= acc), default=0.0),
            "accuracy_at_coverage": max((c["accuracy"] for c in curve if (c["coverage"] or 0) >= cov), default=None),
            "curve": curve}


def by_vp(cfg, rows: list[dict]) -> list[dict]:
    """Where the real `neighbours` mode fails: per held-out VP AS, its neighbours per family (what
    the mode reveals: the second ASes of its paths) beside its pairs' coverage and accuracy."""
    import duckdb

    from bgp_congruency.selector.month import table_relation

    con = duckdb.connect()
    nbrs = {(int(v), int(a)): int(n) for v, a, n in con.execute(f"""
        SELECT vp_asn, afi, count(DISTINCT path[2]) FROM {table_relation(cfg, 'paths', MONTH)}
        WHERE len(path) >= 2 GROUP BY ALL""").fetchall()}
    out = []
    for v in sorted({r["vp_asn"] for r in rows}):
        mine = [r for r in rows if r["vp_asn"] == v]
        answered = [r for r in mine if r["correct"] is not None]
        out.append({"vp_asn": v, "neighbours_v4": nbrs.get((v, 4), 0), "neighbours_v6": nbrs.get((v, 6), 0),
                    "pairs": len(mine), "answered": len(answered), "correct": sum(r["correct"] for r in answered),
                    "rules": dict(sorted(collections.Counter(r["rule"] for r in answered).items()))})
    return out


def why_wrong(cfg) -> dict[str, int]:
    """Where the real `neighbours` mode fails, per family question (every VP AS held out in turn,
    one question at a time through selector/reference.family_route, the reference): its path
    exact, or what made it another: no path; `through` or the right neighbour with another
    route; another neighbour chosen because the true one's route is on no other VP's path,
    because the month's relationships rank the chosen one first, because its route is shorter,
    because the declared order broke a tie of class and length, or because the true one's
    route was not passed on (the export rule)."""
    from bgp_congruency.common import duck
    from bgp_congruency.selector import evaluate as E
    from bgp_congruency.selector import rules
    from bgp_congruency.selector.month import Month
    from bgp_congruency.selector.reference import family_route

    con = duck.connect(cfg)
    out: collections.Counter = collections.Counter()
    try:
        by_asn = E.pairs_by_vp_as(con, cfg, MONTH)  # the held-out run's own questions
        every = Month(con, cfg, MONTH, paths="eval_paths", pairs="eval_pairs")
        for asn, mine in sorted(by_asn.items()):
            m = every.hiding(frozenset({asn}))
            own = E.neighbours_of(con, "eval_paths", asn)
            for _g, a, d, v4, v6, *_rest in mine:
                a, d = int(a), int(d)
                ev = E.revealed_evidence("neighbours", own, v4, v6, d)
                for afi, true in ((4, tuple(map(int, v4))), (6, tuple(map(int, v6)))):
                    rels = m.relations(afi, {a} | {n.asn for n in ev.via.get(afi, ())}) or {}
                    rule, path, _s, _k, n, _why = family_route(m, a, d, afi, ev, rels)
                    hop = true[1]
                    if path is None:
                        out["no path"] += 1
                    elif tuple(path) == true:
                        out["exact"] += 1
                    elif rule == "through":
                        out["through: another route"] += 1
                    elif n == hop:
                        out["the right neighbour, another route of it"] += 1
                    else:
                        seen = ((d,),) if hop == d else m.routes({hop}, d, afi, a).get(hop)
                        is_n, is_hop = rels.get((a, n), "provider"), rels.get((a, hop), "provider")
                        rank = rules.NEIGHBOUR_CLASSES.index
                        if seen is None:
                            out["another neighbour: the true one's route on no other VP's path"] += 1
                        elif rank(is_n) < rank(is_hop):
                            out[f"another neighbour: the month's relationships rank it first ({is_n} over {is_hop})"] += 1
                        elif rank(is_n) > rank(is_hop):
                            out["another neighbour: the true one's route not passed on (export rule)"] += 1
                        elif len(path) - 1 < len(seen[0]):
                            out[f"another neighbour, both {is_n}: its route shorter"] += 1
                        else:
                            out[f"another neighbour, both {is_n} and as long: the declared order"] += 1
    finally:
        con.close()
    return dict(out.most_common())


def real(data: Path) -> list[dict]:
    from bgp_congruency.common.config import load
    from bgp_congruency.selector import proxies as P
    from bgp_congruency.selector import reveal as R

    cfg = load().with_overrides(data_dir=data)
    out = []
    for label, reveal, inferred, dest in MODES:
        t0 = time.perf_counter()
        if reveal == "none":
            rows = P.answers(cfg, MONTH).to_pylist()
        else:
            rows = R.answers(cfg, MONTH, reveal, inferred=inferred, fallback=dest).to_pylist()
        secs = round(time.perf_counter() - t0, 1)
        out.append({"mode": label, "seconds": secs, **_summary(rows),
                    **({"by_vp": by_vp(cfg, rows), "why": why_wrong(cfg)} if label == "neighbours" else {})})
        print(f"real {label}: {secs} s", file=sys.stderr)
        if reveal == "none":  # the baseline: the same answers one question at a time
            t0 = time.perf_counter()
            from bgp_congruency.selector import reference
            _m, ref = reference.proxies_held_out(cfg, MONTH)
            secs = round(time.perf_counter() - t0, 1)
            out.append({"mode": "none, one question at a time (reference)", "seconds": secs, **_summary(ref)})
            print(f"real none reference: {secs} s", file=sys.stderr)
    return out


def generated(data: Path, archive: Path) -> list[dict]:
    from bgp_congruency.common.config import load
    from bgp_congruency.selector import evaluate as E
    from bgp_congruency.synth.truth import load as load_truth

    cfg = load().with_overrides(data_dir=data)
    truth = load_truth(archive)
    out = []
    for label, reveal, inferred, dest in MODES:
        if dest:  # rule 6 is the none mode's own: no separate row for the generated sources
            continue
        t0 = time.perf_counter()
        _m, rows = E.against_truth(cfg, truth, MONTH, reveal=reveal, inferred=inferred)
        secs = round(time.perf_counter() - t0, 1)
        out.append({"mode": label, "seconds": secs, **_summary(rows),
                    **({"target": target(rows)} if reveal == "neighbours" else {})})
    return out


def vps_sweep(counts: list[int], work: Path) -> list[dict]:
    """The generated `neighbours` rows (rule 11 off and on) and the target's figures on months
    that differ only in their number of VPs, each generated and run by the guide's commands;
    with how many links of each family the month's as_relationships has against the generator's."""
    import duckdb

    from bgp_congruency.common.config import load
    from bgp_congruency.selector import evaluate as E
    from bgp_congruency.selector.month import table_relation
    from bgp_congruency.synth.truth import load as load_truth

    out = []
    for v in counts:
        arch, data = work / f"synth400-vps{v}", work / f"s400-vps{v}"
        for d in (arch, data):  # each month made afresh, as the guide makes it
            shutil.rmtree(d, ignore_errors=True)
        cfg_path = work / "duckdb.toml"
        cfg_path.write_text('engine = "duckdb"\n')
        for args in (["synth", "--out", str(arch), "--ases", "400", "--vps", str(v), "--no-ground-truth"],
                     ["run", "--month", MONTH, "--days", "2", "--archive-root", str(arch), "--collectors",
                      "route-views2,route-views6,rrc00,rrc01", "--data-dir", str(data), "--default-free-share", "0.5",
                      "--config", str(cfg_path)]):
            m = run_child([*EXE, *args], label=f"{args[0]} --vps {v}", timeout_s=3600)
            assert m.rc == 0, f"{args[0]} --vps {v}: exit {m.rc}"
        cfg = load(cfg_path).with_overrides(data_dir=data)
        truth = load_truth(arch)
        links = {}
        for afi in (4, 6):
            c2p, p2p, _pre, _present = truth.net.relationships(afi, MONTH)
            links[afi] = {"true": len(c2p) + len(p2p), "month": duckdb.sql(
                f"SELECT count(*) FROM {table_relation(cfg, 'as_relationships', MONTH)} WHERE afi = {afi}").fetchone()[0]}
        row = {"vps": v, "links": links, "modes": []}
        for label, inferred in (("neighbours", False), ("neighbours + rule 11 inferred", True)):
            t0 = time.perf_counter()
            _m, rows = E.against_truth(cfg, truth, MONTH, reveal="neighbours", inferred=inferred)
            secs = round(time.perf_counter() - t0, 1)
            s = _summary(rows)
            row["modes"].append({"mode": label, "seconds": secs, "worst_gap": s["worst_gap"],
                                 "worst_gap_own_bins": s["worst_gap_own_bins"], "target": target(rows)})
            t = row["modes"][-1]["target"]
            print(f"--vps {v} {label}: target coverage {t['coverage']:.3f} accuracy {t['accuracy']:.3f} "
                  f"coverage at 90% {t['coverage_at_accuracy']:.3f} accuracy at 70% {t['accuracy_at_coverage']}",
                  file=sys.stderr)
        out.append(row)
    return out


def scale(data: Path, limit: str, work: Path) -> dict:
    """evaluate --reveal none and first-hop, and one advise of a source that is no VP (with declared
    neighbours, and without: rules 1-7), fresh processes."""
    import duckdb

    cfg = duckdb_config(work, limit)
    con = duckdb.connect()
    # a source on the month's paths that is no VP, its two most used next ASes per family, and a destination
    vps = {r[0] for r in con.execute(
        f"SELECT DISTINCT vp_asn FROM read_parquet('{data}/paths/month={MONTH}/*/*.parquet')").fetchall()}
    src, n4, n6, dest = con.execute(f"""
        WITH p AS (SELECT afi, path FROM read_parquet('{data}/paths/month={MONTH}/*/*.parquet') WHERE len(path) >= 4),
        hop AS (SELECT afi, path[3] AS s, path[2] AS n, path[-1] AS d FROM p)
        SELECT s, arg_max(n, c) FILTER (WHERE afi = 4), arg_max(n, c) FILTER (WHERE afi = 6), any_value(d)
        FROM (SELECT afi, s, n, any_value(d) AS d, count(*) AS c FROM hop GROUP BY ALL)
        WHERE s NOT IN ({','.join(map(str, vps))})
        GROUP BY s HAVING count(DISTINCT afi) = 2 ORDER BY sum(c) DESC LIMIT 1""").fetchone()
    out = {"source": src, "via4": n4, "via6": n6, "destination": dest}
    runs = {f"evaluate --reveal {r}": ["evaluate", "--reveal", r, "--json"] for r in ("none", "first-hop")}
    runs["advise (declared neighbours)"] = ["advise", "--from", str(src), "--to", f"AS{dest}", "--via4", str(n4),
                                            "--via6", str(n6), "--json"]
    runs["advise (no evidence: rules 1-7)"] = ["advise", "--from", str(src), "--to", f"AS{dest}", "--json"]
    for label, args in runs.items():
        m = run_child([*EXE, *args, "--config", str(cfg), "--data-dir", str(data)], label=label, timeout_s=7200,
                      stdout=work / f"{label.split(' (')[0].replace(' --reveal ', '-')}.json")
        out[label] = measured(m, label)
    out["evaluate"] = {}
    for r in ("none", "first-hop"):
        ev = json.loads((work / f"evaluate-{r}.json").read_text())
        out["evaluate"][r] = {**{k: ev[k] for k in ("pairs", "answered", "coverage", "accuracy")},
                              "worst_gap": ev["calibrated"]["worst_gap"],
                              "rules": {k: v for k, v in ev["rules"].items() if v["pairs"]}}
    return out


def inferred_at_scale(data: Path, limit: str, work: Path) -> dict:
    """What rule 11 costs at scale: the first-hop mode's set-based answers
    without it and with it, side by side, each a fresh process under the same memory limit, not
    published (publish's own peak is the `evaluate` rows above)."""
    cfg = duckdb_config(work, limit)
    out: dict = {}
    for inferred in (False, True):
        result = work / f"first-hop-inferred-{inferred}.json"
        code = (
            "import json, sys\n"
            "from pathlib import Path\n"
            "from bgp_congruency.common.config import load\n"
            "from bgp_congruency.selector import evaluate as E, reveal as R\n"
            f"cfg = load({str(cfg)!r}).with_overrides(data_dir=Path({str(data)!r}))\n"
            f"t = R.answers(cfg, {MONTH!r}, 'first-hop', inferred={inferred})\n"
            "s = E.summary(t)\n"
            f"Path({str(result)!r}).write_text(json.dumps({{k: s[k] for k in ('pairs', 'answered', 'coverage', 'accuracy')}}"
            " | {'rules': {k: v for k, v in s['rules'].items() if v['pairs']}}))\n")
        label = "first-hop answers" + (" with rule 11" if inferred else "") + " (not published)"
        m = run_child([sys.executable, "-c", code], label=label, timeout_s=7200, result_path=result)
        out[label] = measured(m, label)
        if inferred:
            out["answers"] = m.result
    return out


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/reveal.py: the path selector told the source's first hops or neighbours."""
    scaled = [x for x in runs if x.get("scale")]  # `--scale` alone: a run of its own
    r = next((x for x in reversed(runs) if x.get("real") or x.get("generated")), runs[-1])
    if scaled:
        r = {**r, "scale": scaled[-1]["scale"], "scale_command": scaled[-1]["command"]}
    intro = [f"`{r['command']}`: each evaluation mode side by side; real: every VP AS of the sample held out in",
             "turn (its own pairs as the truth); generated: 40 ASes that are no VP (20 stubs, 20 transit) against",
             "the generator's true paths. Worst gap: the largest difference between calibrated confidence and",
             "accuracy over the bins of 30 answers or more (the calibration fitted on the other sources' rows), the",
             "bins those of the confidence the calibration of all rows states for each answer's cell; own-value",
             "bins: binned by each answer's own held-out value instead (the binning before 2026-11-28, which splits",
             "a cell by its sources' accuracy: selector/calibration.py)."]
    rows = []
    for part in ("real", "generated"):
        for m in r.get(part) or []:
            rules = ", ".join(f"{k} {render.pct(v['accuracy'])} of {v['answered']:,}" for k, v in m["rules"].items()
                              if v.get("answered"))
            rows.append([part, m["mode"], f"{m['pairs']:,}", render.pct(m["coverage"]), render.pct(m["accuracy"]), rules,
                         _gap(m.get("worst_gap")), _gap(m.get("worst_gap_own_bins")), render.num(m["seconds"], 1)])
    lines = render.section("Path selector with the source's evidence (bench/reveal.py)", intro,
                     ["set", "mode", "pairs", "coverage", "accuracy", "per rule", "worst gap",
                      "own-value bins", "seconds"], rows, "llrrrlrrr")
    from bgp_congruency.selector.evaluate import TRUTH_DESTS  # the questions asked of each generated source

    kinds = [[m["mode"], k, f"{v['pairs'] // TRUTH_DESTS:,}", f"{v['pairs']:,}", render.pct(v["coverage"]), render.pct(v["accuracy"])]
             for m in r.get("generated") or [] if m["mode"] != "none: today's rules"
             for k, v in sorted(m["kinds"].items())]
    if kinds:
        lines += ["The generated sources by how they are homed (evaluate's `homing`: a stub with one neighbour per",
                  "family, a multi-homed stub, a transit AS with customers; "
                  f"{TRUTH_DESTS} questions per source):", "",
                  common.table(["mode", "sources", f"how many (pairs / {TRUTH_DESTS})", "pairs", "coverage", "accuracy"], kinds, align="llrrrr"), ""]
    vps = [[f"AS{v['vp_asn']}", f"{v['neighbours_v4']:,} / {v['neighbours_v6']:,}", f"{v['pairs']:,}",
            render.pct(v["answered"] / v["pairs"] if v["pairs"] else None),
            render.pct(v["correct"] / v["answered"] if v["answered"] else None),
            ", ".join(f"{k} {n:,}" for k, n in v["rules"].items())]
           for m in r.get("real") or [] for v in sorted(m.get("by_vp") or [], key=lambda v: -v["pairs"])]
    if vps:
        lines += ["Where the real `neighbours` mode fails: each held-out VP AS, its neighbours (what the mode reveals:",
                  "the second ASes of its paths, IPv4 / IPv6) beside its pairs, most pairs first:", "",
                  common.table(["VP AS", "neighbours", "pairs", "coverage", "accuracy", "answers per rule"], vps,
                               align="lrrrrl"), ""]
    why = next((m["why"] for m in r.get("real") or [] if m.get("why")), None)
    if why:
        total = sum(why.values())
        lines += ["The same, per family question (`bench/reveal.py` why_wrong: one question at a time through",
                  "selector/reference.family_route, the reference), by what made its path:", "",
                  common.table(["family questions", "how many", "share"],
                               [[k, f"{n:,}", render.pct(n / total)] for k, n in why.items()], align="lrr"), ""]
    lines += _neighbours_target(r, next((x for x in reversed(runs) if x.get("vps")), None))
    if r.get("scale"):
        sc = r["scale"]
        lines += [f"At scale (`{r.get('scale_command', r['command'])}`: source AS{sc['source']}, --via4 {sc['via4']} "
                  f"--via6 {sc['via6']}, to AS{sc['destination']}), each a fresh process:", "",
                  common.table(["command", "wall s", "CPU s", "peak RSS MiB", "tree peak MiB"], render.scale_rows(sc),
                               align="lrrrr"), ""]
        ev = sc.get("evaluate") or {}
        if any("worst_gap" in e for e in ev.values()):
            lines += ["Their answers: " + "; ".join(
                f"{mode} {e['coverage']:.1%} answered, {e['accuracy']:.1%} right, worst calibrated bin "
                f"{_gap(e.get('worst_gap'))} ("
                + ", ".join(f"{k} {render.pct(v['accuracy'])} of {v['answered']:,}" for k, v in e["rules"].items()
                            if v.get("answered")) + ")" for mode, e in ev.items()) + ".", ""]
    inf = next((x for x in reversed(runs) if x.get("inferred_at_scale")), None)
    if inf:
        got = inf["inferred_at_scale"]
        a = got.get("answers") or {}
        lines += [f"Rule 11 at scale, `{inf['command']}`: the first-hop mode's answers (with it",
                  "only where the run measured both, without it too), each a fresh process, not published:", "",
                  common.table(["command", "wall s", "CPU s", "peak RSS MiB", "tree peak MiB"], render.scale_rows(got),
                               align="lrrrr"), "",
                  f"{a.get('coverage', 0):.1%} answered, {a.get('accuracy') or 0:.1%} right ("
                  + ", ".join(f"{k} {render.pct(v['accuracy'])} of {v['answered']:,}" for k, v in (a.get("rules") or {}).items()
                              if v.get("answered")) + ").", ""]
    return lines


def _neighbours_target(r: dict, swept: dict | None) -> list[str]:
    """The `neighbours` target of issue 47 (90% at 70% coverage, multi-homed stubs and transit
    sources together) on the generated month, and on months of more VPs (`--vps`)."""
    acc, cov = TARGET
    rows = [["12 (the run above)", m["mode"], m["target"], m.get("worst_gap"), m.get("worst_gap_own_bins")]
            for m in r.get("generated") or [] if m.get("target")]
    rows += [[str(v["vps"]), m["mode"], m["target"], m.get("worst_gap"), m.get("worst_gap_own_bins")]
             for v in (swept or {}).get("vps", []) for m in v["modes"]]
    if not rows:
        return []
    links = {v["vps"]: v["links"] for v in (swept or {}).get("vps", [])}
    body = [[vps, mode, ", ".join(f"{n} {k}" for k, n in t["sources"].items()), f"{t['pairs']:,}", render.pct(t["coverage"]),
             render.pct(t["accuracy"]), render.pct(t["coverage_at_accuracy"]), render.pct(t["accuracy_at_coverage"]), _gap(gap),
             _gap(own),
             " / ".join(f"{links[int(vps)][a]['month']:,} of {links[int(vps)][a]['true']:,}" for a in ("4", "6"))
             if vps.isdigit() and int(vps) in links else "-"] for vps, mode, t, gap, own in rows]
    intro = [f"The `neighbours` target (issue 47: at least {acc:.0%} right at at least {cov:.0%} coverage, the",
             "generated month's multi-homed stubs and transit sources together; on their calibrated curve, the best",
             f"coverage at {acc:.0%} or more and the best accuracy at {cov:.0%} coverage or more). More VPs:",
             f"`{swept['command']}`, each month made by the guide's commands with only `--vps` changed (seed 1,"
             if swept else "", "400 ASes); links: the month's as_relationships against the generator's, IPv4 / IPv6:"
             if swept else ""]
    return [line for line in intro if line] + ["", common.table(
        ["--vps", "mode", "sources", "pairs", "coverage", "accuracy", f"coverage at {acc:.0%}", f"accuracy at {cov:.0%}",
         "worst gap (all sources)", "own-value bins", "links in the month"], body, align="llrrrrrrrrr"), ""]


def _gap(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real", type=Path, help="a data dir holding the real 2026-07 sample month (make demo's)")
    ap.add_argument("--generated", help="DATA:ARCHIVE, a generated month and its archive (the guide's 400 ASes)")
    ap.add_argument("--scale", type=Path, help="a data dir holding a generated month at scale")
    ap.add_argument("--memory-limit", default="4GB")
    ap.add_argument("--vps", help="N,N,...: the neighbours target on generated 400-AS months of N VPs each")
    ap.add_argument("--inferred-at-scale", type=Path, metavar="DATA",
                    help="the first-hop mode's answers without and with rule 11, side by side, on a month at scale")
    ap.add_argument("--work", type=Path, default=OUT / "reveal")
    a = ap.parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    res: dict = {"command": "bench/reveal.py " + " ".join(argv or sys.argv[1:]), "machine": machine_facts()}
    if a.real:
        res["real"] = real(a.real)
    if a.generated:
        d, arch = a.generated.split(":")
        res["generated"] = generated(Path(d), Path(arch))
    if a.scale:
        res["scale"] = scale(a.scale, a.memory_limit, a.work)
    if a.vps:
        res["vps"] = vps_sweep([int(x) for x in a.vps.split(",")], a.work)
    if a.inferred_at_scale:
        res["inferred_at_scale"] = inferred_at_scale(a.inferred_at_scale, a.memory_limit, a.work)
    # a --scale, --vps or --inferred-at-scale run alone has a file of its own: the real and generated run's stays
    only = [k for k in ("scale", "vps", "inferred_at_scale") if getattr(a, k)]
    alone = None if a.real or a.generated or len(only) != 1 else only[0].replace("_", "-")
    write_json(res, OUT / (f"reveal-{alone}.json" if alone else "reveal.json"), stdout=False)
    for part in ("real", "generated"):
        for r in res.get(part, []):
            print(f"{part:9} {r['mode']:34} coverage {r['coverage']:.3f} accuracy {r['accuracy'] or 0:.3f} "
                  f"gap {r['worst_gap']} {({k: (v['answered'], round(v['accuracy'] or 0, 3)) for k, v in r['rules'].items()})}")
    if "scale" in res:
        print(json.dumps(res["scale"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
