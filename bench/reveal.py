#!/usr/bin/env python3
"""The path selector with the source's own evidence (issue 47): each evaluation mode and
fallback side by side, on the real sample (each VP AS held out) and on a generated month's
ASes that are no VP (against the generator's truth); and at scale, `evaluate --reveal
none` and `--reveal first-hop` and one `advise` with declared neighbours, each a fresh process.
The real run also times today's rules one question at a time (selector/evaluate.held_out, the
set-based none mode's reference) beside the set-based run.

    .venv/bin/python bench/reveal.py --real DATA --generated DATA:ARCHIVE [--scale DATA --memory-limit 4GB]

Rows: today's rules (none), first hops revealed (rules 8-9), neighbours revealed (9-10), and
each with the fallbacks the product leaves off (rule 11 `inferred`, rule 6 `destination`):
coverage, accuracy, per rule, the worst calibrated bin of 30 answers or more (each row's
calibration fitted on the other sources' answers of the same mode), and the accuracy-coverage
curve. The result goes to bench/out/reveal.json (a --scale run alone: reveal-scale.json).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import OUT, machine_facts, run_child, write_json  # noqa: E402

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
            "kinds": s["kinds"], "worst_gap": s["calibrated"]["worst_gap"], "curve": s["calibrated"]["curve"]}


def real(data: Path) -> list[dict]:
    from bgp_congruency.common.config import load
    from bgp_congruency.selector import evaluate as E
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
        out.append({"mode": label, "seconds": secs, **_summary(rows)})
        print(f"real {label}: {secs} s", file=sys.stderr)
        if reveal == "none":  # the baseline: the same answers one question at a time
            t0 = time.perf_counter()
            _m, ref = E.held_out(cfg, MONTH)
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
        out.append({"mode": label, "seconds": round(time.perf_counter() - t0, 1), **_summary(rows)})
    return out


def scale(data: Path, limit: str, work: Path) -> dict:
    """evaluate --reveal none and first-hop, and one advise of a source that is no VP, fresh processes."""
    import duckdb

    cfg = work / "scale.toml"
    cfg.write_text(f'engine = "duckdb"\nduckdb_memory_limit = "{limit}"\n')
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
    for label, args in runs.items():
        m = run_child([*EXE, *args, "--config", str(cfg), "--data-dir", str(data)], label=label, timeout_s=7200,
                      stdout=work / f"{label.split(' (')[0].replace(' --reveal ', '-')}.json")
        assert m.rc == 0, f"{label}: exit {m.rc}"
        out[label] = {"wall_s": m.wall_s, "cpu_s": round(m.user_s + m.sys_s, 1), "peak_mib": m.maxrss >> 20,
                      "tree_peak_mib": m.tree_peak >> 20}
        print(f"{label}: {m.wall_s:.1f} s, peak {m.maxrss >> 20} MiB", file=sys.stderr)
    out["evaluate"] = {}
    for r in ("none", "first-hop"):
        ev = json.loads((work / f"evaluate-{r}.json").read_text())
        out["evaluate"][r] = {k: ev[k] for k in ("pairs", "answered", "coverage", "accuracy")}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real", type=Path, help="a data dir holding the real 2026-07 sample month (make demo's)")
    ap.add_argument("--generated", help="DATA:ARCHIVE, a generated month and its archive (the guide's 400 ASes)")
    ap.add_argument("--scale", type=Path, help="a data dir holding a generated month at scale")
    ap.add_argument("--memory-limit", default="4GB")
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
    # a --scale run alone has a file of its own, so it does not replace the real and generated run's
    write_json(res, OUT / ("reveal-scale.json" if a.scale and not (a.real or a.generated) else "reveal.json"),
               stdout=False)
    for part in ("real", "generated"):
        for r in res.get(part, []):
            print(f"{part:9} {r['mode']:34} coverage {r['coverage']:.3f} accuracy {r['accuracy'] or 0:.3f} "
                  f"gap {r['worst_gap']} {({k: (v['answered'], round(v['accuracy'] or 0, 3)) for k, v in r['rules'].items()})}")
    if "scale" in res:
        print(json.dumps(res["scale"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
