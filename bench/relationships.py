#!/usr/bin/env python3
"""AS relationships (issue 48): the inference scored against the generator's truth, per family
and per step; the input choice measured (representative paths against every observation's
distinct cleaned path); the real sample against CAIDA's 2016 file; and at scale, the
relationships step's time and memory beside the compare's on the same month.

    .venv/bin/python bench/relationships.py --generated 400,1000 [--vps 12,24,48] [--real DATA] [--scale DATA --memory-limit 4GB]

--generated: a synthetic month per size (seed 1, 12 VPs, the guide's command), run in
bench/out/relationships/; --real: a data dir holding the real 2026-07 sample month (make demo's);
--scale: a data dir holding a generated month at scale (bench/endtoend.py's), compared again
(`congruency compare`, which infers the relationships inside it) and then `congruency
relationships --infer` alone, each a fresh process. The result goes to bench/out/relationships.json.

    .venv/bin/python bench/relationships.py --step DATA [--commits A,B] [--repeat 3]

--step: instead, the relationships stager of two commits (each a git worktree, as
bench/commits.py makes them) on DATA's published month, in fresh processes, rounds
alternating, best of --repeat; the staged tables compared row for row. The result goes to
bench/out/relationships-step.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common, render  # noqa: E402
from bench.common import OUT, SHARED, duckdb_config, machine_facts, measured, run_child, write_json  # noqa: E402

MONTH = "2026-07"
CAIDA_2016 = SHARED / "relationships" / "20161101.as-rel.txt.bz2"
EXE = [sys.executable, "-m", "bgp_congruency.cli.main"]


def generated(ases: int, work: Path, vps: int = 12) -> dict:
    """A generated month of `ases` ASes (seed 1, `vps` VPs), run, then scored against its truth."""
    from bgp_congruency.common.config import load
    from bgp_congruency.relationships import score, summary
    from bgp_congruency.synth.truth import load as load_truth

    tag = f"{ases}" if vps == 12 else f"{ases}-{vps}vps"
    arch, data = work / f"synth-{tag}", work / f"data-{tag}"
    if not (data / "as_relationships").is_dir():
        r = run_child([*EXE, "synth", "--out", str(arch), "--ases", str(ases), "--vps", str(vps), "--no-ground-truth"],
                      label="synth")
        assert r.rc == 0
        cfg = work / "cfg.toml"
        cfg.write_text('engine = "duckdb"\nduckdb_threads = 2\n')
        r = run_child([*EXE, "run", "--config", str(cfg), "--month", MONTH, "--days", "1-2", "--archive-root",
                       str(arch), "--data-dir", str(data), "--collectors", "route-views2,route-views6,rrc00,rrc01",
                       "--default-free-share", "0.5"], label="run")
        assert r.rc == 0
    else:  # a month of an earlier run: its relationships inferred again by the code measured
        r = run_child([*EXE, "relationships", "--data-dir", str(data), "--month", MONTH, "--infer", "--json"],
                      label="relationships --infer")
        assert r.rc == 0
    cfg = load().with_overrides(data_dir=data)
    rs = summary.rows(cfg, MONTH)
    net = load_truth(arch).net
    got = summary.compare_truth(rs, net, MONTH)
    by_step = {afi: summary.confusion_by_step([r for r in rs if r["afi"] == afi], score.truth_of(net, afi, MONTH))
               for afi in (4, 6)}
    tier1 = sorted(a for i, a in enumerate(net.asns) if net.tier[i] == 1)
    s = summary.summary(MONTH, rs)
    out = {"ases": ases, "vps": vps, "tier1": tier1,
           "decided": {afi: got[afi]["decided"] for afi in (4, 6)}, "hub": net.asns[net.hub],
           "clique": {afi: s["families"][afi]["clique"] for afi in (4, 6)},
           "scores": {afi: {k: got[afi][k] for k in ("links", "both", "p2c", "p2p", "confusion", "steps")}
                      for afi in (4, 6)},
           "hybrid": got["hybrid"], "confusion_by_step": by_step,
           "input": _input_choice(cfg, data, net)}
    return out


def _distinct_paths(data: Path, afi: int) -> list:
    """Every observation's cleaned path (the month's routes: AS_SET, first AS not the peer, empty
    paths and default routes out; prepending collapsed), distinct per (peer AS, path)."""
    import duckdb

    from bench.compare import route_files

    files = ", ".join(repr(f) for f in route_files(data, MONTH))
    con = duckdb.connect()
    return con.execute(f"""
        WITH e AS (SELECT peer_asn, list_filter(as_path, (a, i) -> i = 1 OR a != as_path[i - 1]) AS path
                   FROM read_parquet([{files}], hive_partitioning = false)
                   WHERE afi = {afi} AND NOT has_as_set AND as_path IS NOT NULL AND len(as_path) > 0
                     AND as_path[1] = peer_asn AND prefix NOT IN ('0.0.0.0/0', '::/0'))
        SELECT DISTINCT peer_asn, path FROM e""").fetchall()


def _input_choice(cfg, data: Path, net=None) -> dict:
    """The inference on the representative paths (the product's input) against every
    observation's distinct cleaned path: links seen, and with a truth, the scores."""
    import duckdb

    from bgp_congruency.relationships import infer as I
    from bgp_congruency.relationships import score as S

    out = {}
    con = duckdb.connect()
    for afi in (4, 6):
        rep = con.execute(f"SELECT DISTINCT vp_asn, path FROM read_parquet('{data}/paths/month={MONTH}/*/*.parquet') "
                          f"WHERE afi = {afi}").fetchall()
        row = {}
        for name, items in (("representative", rep), ("distinct", _distinct_paths(data, afi))):
            t0 = time.perf_counter()
            _c, rels = I.infer_paths(items, cfg.relationships, afi, cfg.method.is_reserved)
            ours = S.canon((r.as1, r.as2, r.rel) for r in rels)
            row[name] = {"items": len(items), "links": len(ours), "seconds": round(time.perf_counter() - t0, 2)}
            if net is not None:
                sc = S.compare(ours, S.truth_of(net, afi, MONTH))
                row[name].update({k: {"ppv": sc[k]["ppv"], "tpr": sc[k]["tpr"]} for k in ("p2c", "p2p")})
        out[afi] = row
    return out


def real(data: Path) -> dict:
    """The real sample: clique, hybrid share, AS6939 per family; against CAIDA's 2016 file per step."""
    from bgp_congruency.common.config import load
    from bgp_congruency.relationships import formats, summary

    cfg = load().with_overrides(data_dir=data)
    rs = summary.rows(cfg, MONTH)
    s = summary.summary(MONTH, rs, (6939,))
    c = summary.compare_file(rs, formats.read(CAIDA_2016))
    return {"clique": s["clique"], "families": s["families"], "hybrid": s["hybrid"], "as6939": s["ases"][6939],
            "caida_2016": {k: c[k] for k in ("both", "agree", "agreement", "p2c", "p2p", "steps", "clique", "decided")},
            "input": _input_choice(cfg, data)}


def scale(data: Path, limit: str, work: Path) -> dict:
    """The compare (with the relationships inside) and `relationships --infer` alone, each a
    fresh process on the same month, at duckdb_memory_limit = `limit`."""
    cfg = duckdb_config(work, limit)
    out = {}
    for label, args in (("compare (relationships and hints inside)", ["compare", "--month", MONTH]),
                        ("relationships --infer", ["relationships", "--month", MONTH, "--infer", "--json"])):
        m = run_child([*EXE, *args, "--config", str(cfg), "--data-dir", str(data)], label=label, timeout_s=7200)
        out[label] = measured(m, label)
    import duckdb

    con = duckdb.connect()
    out["paths"] = con.execute(f"SELECT count(*) FROM read_parquet('{data}/paths/month={MONTH}/*/*.parquet')")\
        .fetchone()[0]
    return out


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/relationships.py: the inference against the generator's truth, the real sample
    against CAIDA's 2016 file, and its time and memory at scale beside the compare's."""
    r = next((x for x in reversed(runs) if x.get("real")), runs[-1])
    intro = [f"`{r['command']}`: each generated month (`congruency synth --ases N --vps 12`, seed 1, 2 snapshots)",
             "run, its `as_relationships` scored per family against the generator's relationships (PPV and TPR;",
             "hybrid links: a relationship differing between the families, against the true ones), and the input",
             "choice (representative paths, the product's, against every observation's distinct cleaned path)."]
    rows = []
    for g in r.get("generated") or []:
        for afi in ("4", "6"):
            sc = g["scores"][afi] if afi in g["scores"] else g["scores"][int(afi)]
            inp = (g.get("input") or {}).get(afi) or (g.get("input") or {}).get(int(afi)) or {}
            dist = inp.get("distinct") or {}
            rows.append([f"{g['ases']:,} ASes", f"IPv{afi}", f"{sc['links']:,}", render.pct(sc["p2c"]["ppv"]),
                         render.pct(sc["p2c"]["tpr"]), render.pct(sc["p2p"]["ppv"]), render.pct(sc["p2p"]["tpr"]),
                         f"{render.pct((dist.get('p2c') or {}).get('ppv'))} / {render.pct((dist.get('p2c') or {}).get('tpr'))}"])
    lines = render.section("AS relationships per family (bench/relationships.py)", intro,
                     ["month", "family", "links", "p2c PPV", "p2c TPR", "p2p PPV", "p2p TPR",
                      "p2c PPV / TPR, every observation's path"], rows, "llrrrrrr")
    hyb = [[f"{g['ases']:,} ASes", f"{g['hybrid'].get('found', '-')}", f"{g['hybrid'].get('true', '-')}",
            render.pct(g["hybrid"].get("precision")), render.pct(g["hybrid"].get("recall"))]
           for g in r.get("generated") or [] if isinstance(g.get("hybrid"), dict)]
    if hyb:
        lines += ["Hybrid links:", "", common.table(["month", "found", "true", "precision", "recall"], hyb,
                                                     align="lrrrr"), ""]
    if r.get("real"):
        c = r["real"]["caida_2016"]
        cl = r["real"]["clique"]
        lines += [f"Real 2026-07 sample against CAIDA's 2016-11 IPv4 file (not the same month: the lasting links): "
                  f"{c['both']:,} links in both, {render.pct(c['agreement'])} agree. Clique in both families: "
                  f"{', '.join(map(str, cl['both']))}; IPv4 only: {', '.join(map(str, cl['v4_only']))}; IPv6 only: "
                  f"{', '.join(map(str, cl['v6_only']))}. Hybrid links: {r['real']['hybrid']['hybrid']:,} of the "
                  f"{r['real']['hybrid']['both_families']:,} links seen in both families "
                  f"({render.pct(r['real']['hybrid']['share'])})."
                  + (f" Decided links: {render.pct(c['decided']['share_decided'])} of those in both; p2c "
                     f"{c['decided']['p2c']['decided']:,} ({render.pct(c['decided']['p2c']['ppv'])} agree), p2p "
                     f"{c['decided']['p2p']['decided']:,} ({render.pct(c['decided']['p2p']['ppv'])}); undecided "
                     f"{c['decided']['undecided']['links']:,} ({c['decided']['undecided']['agree']:,} agree with p2p)."
                     if c.get("decided") else ""), ""]
    swept = sorted({(g["ases"], g["vps"]): (x["command"], g) for x in runs for g in x.get("generated") or []
                    if g.get("decided")}.items())  # a month in both runs: the later run's
    swept = [v for _k, v in swept]
    if swept:
        lines += [f"Decided links (the table's `decided`: valley-free evidence decided them; the rest, p2p by "
                  f"default, are `rest-p2p` and the provider-less step's assumed peerings: relationships/METHOD.md): "
                  f"their PPV, the share of the true links decided, and how many undecided links the default gets "
                  f"right, per number of VPs ({'; '.join(f'`{c}`' for c in dict.fromkeys(c for c, _g in swept))}):",
                  "",
                  common.table(["month", "VPs", "family", "decided p2c", "p2c PPV", "decided p2p", "p2p PPV",
                                "share decided", "undecided, right", "p2p PPV, all links"],
                               [[f"{g['ases']:,} ASes", str(g["vps"]), f"IPv{afi}", f"{d['p2c']['decided']:,}",
                                 render.pct(d["p2c"]["ppv"]), f"{d['p2p']['decided']:,}", render.pct(d["p2p"]["ppv"]),
                                 render.pct(d["share_decided"]),
                                 f"{d['undecided']['agree']:,} of {d['undecided']['links']:,}" if d.get("undecided")
                                 else "-", render.pct(g["scores"][afi]["p2p"]["ppv"])]
                                for _c, g in swept for afi, d in g["decided"].items()], align="lrlrrrrrrr"), ""]
    if r.get("scale"):
        lines += [f"At scale ({r['scale'].get('paths', 0):,} representative paths), each a fresh process:", "",
                  common.table(["command", "wall s", "CPU s", "peak RSS MiB", "tree peak MiB"],
                               render.scale_rows(r["scale"]), align="lrrrr"), ""]
    return lines


#: The child of --step: one commit's relationships stager on a data dir's published paths,
#: timed inside the process (argv: data dir, month, the folder it stages into).
STEP = """
import json, shutil, sys, time
from bgp_congruency.common import console, layout
from bgp_congruency.common.config import load
from bgp_congruency.lake import published
from bgp_congruency.lake.attach import pinned
from bgp_congruency.relationships import table
cfg = load().with_overrides(data_dir=sys.argv[1])
root = layout.local(cfg.data_dir, "bench")
with pinned(root):
    files = published.files(root, ["paths"], sys.argv[2])["paths"]
shutil.rmtree(sys.argv[3], ignore_errors=True)
t = time.perf_counter()
with console.progress() as prog:
    table.stage(cfg, sys.argv[2], sys.argv[3], files, prog)
print(json.dumps({"work_s": time.perf_counter() - t, "error": None}))
"""


def step(data: Path, commits: list[str], repeat: int) -> dict:
    """The relationships stager (relationships/table.stage, as the compare runs it) of each
    commit on `data`'s published paths, each a fresh process, rounds alternating, best of
    `repeat`; then the staged tables of the commits compared row for row."""
    import duckdb

    from bench.commits import child, worktree

    trees = [worktree(c) for c in commits]
    runs: dict[str, list[float]] = {sha: [] for sha, _ in trees}
    for i in range(repeat):
        for sha, tree in (trees if i % 2 == 0 else trees[::-1]):
            out = OUT / "relationships-step" / sha[:12]
            r = child(STEP, [str(data), MONTH, str(out)], f"{tree}:{tree.parent / (sha[:12] + '-pythonpath')}",
                      f"{sha[:12]} relationships", 3600)
            runs[sha].append(round(r["work_s"], 2))
            print(f"round {i + 1}: {sha[:12]} {r['work_s']:.2f} s", file=sys.stderr)
    con = duckdb.connect()
    rows = []
    for sha, _ in trees:
        rel = f"read_parquet('{OUT / 'relationships-step' / sha[:12] / 'as_relationships'}/*.parquet')"
        rows.append(con.execute(f"SELECT * FROM {rel} ORDER BY ALL").fetchall())
    return {"data": str(data), "commits": [{"commit": sha[:12], "runs": runs[sha], "best_s": min(runs[sha])}
                                           for sha, _ in trees],
            "rows": len(rows[0]), "identical": all(r == rows[0] for r in rows)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--generated", default="400,1000", help="sizes of the generated months (ASes), comma-separated")
    ap.add_argument("--vps", default="12", help="VPs of each generated month, comma-separated (each size at each)")
    ap.add_argument("--real", type=Path, help="a data dir holding the real 2026-07 sample month")
    ap.add_argument("--scale", type=Path, help="a data dir holding a generated month at scale")
    ap.add_argument("--memory-limit", default="4GB", help="duckdb_memory_limit of the --scale runs")
    ap.add_argument("--work", type=Path, default=OUT / "relationships")
    ap.add_argument("--step", type=Path, metavar="DATA",
                    help="instead: the relationships stager of --commits on DATA's published month, side by side")
    ap.add_argument("--commits", default="HEAD~1,HEAD", help="with --step: two commits (default HEAD~1,HEAD)")
    ap.add_argument("--repeat", type=int, default=3, help="with --step: rounds, alternating; the best counts")
    a = ap.parse_args(argv)
    if a.step:
        res = {"command": "bench/relationships.py " + " ".join(argv or sys.argv[1:]), "date": common.now_utc(),
               **step(a.step, [c for c in a.commits.split(",") if c], a.repeat)}
        write_json(res, OUT / "relationships-step.json", stdout=True)
        return 0 if res["identical"] else 1
    a.work.mkdir(parents=True, exist_ok=True)
    res: dict = {"command": "bench/relationships.py " + " ".join(argv or sys.argv[1:]), "machine": machine_facts()}
    res["generated"] = [generated(int(n), a.work, int(v)) for n in a.generated.split(",") if n
                        for v in a.vps.split(",") if v]
    if a.real:
        res["real"] = real(a.real)
    if a.scale:
        res["scale"] = scale(a.scale, a.memory_limit, a.work)
    # a sweep of VPs is a run of its own beside the 12-VP one (bench/run.py shows both)
    write_json(res, OUT / ("relationships.json" if a.vps == "12" else "relationships-vps.json"), stdout=False)
    print(json.dumps({k: v for k, v in res.items() if k != "machine"}, indent=1, default=str)[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
