#!/usr/bin/env python3
"""A month stored once per snapshot (a baseline commit: rib_entries) against stored once as
routes (a later commit: common/routes.py), side by side in one run on one generated archive.

Each commit is a git worktree (bench/commits.py); per round, for each commit in turn, in a
fresh data dir of its own under bench/out/routes/:
- ingest: `congruency ingest` of the archive's month (decode, and for the routes the merge),
  a fresh process, its wall time and peak RSS;
- the stored month: bytes of what ingest left for the compare (rib_entries/month=M, or
  routes/month=M);
- its scan floor: the same files read with every column the job reads, one DuckDB query;
- the DuckDB compare as `congruency compare` runs it (`pipeline/job.compare_months` with the
  runner's stagers: the relationships, prefixes and hints staged in the month's commit, and
  the publish), timed inside a fresh process (imports not counted);
- with --spark, the Spark compare (local[*]), timed inside its process from a ready session.
Then each published table of the two commits' last runs is compared row for row (the DuckDB
ones; with --spark also each commit's Spark tables against its DuckDB ones). Best of --repeat.
With --ingest-only, only the ingest and the stored month: the two commits' routes are
compared row for row instead (a change of the merge).

    .venv/bin/python bench/routes.py --archive bench/out/archive-50-d5 --days 1-5 --times 00:00 \\
        --commits e1cb168,HEAD [--spark] [--repeat 1] [--limit 4GB]

The archive: `congruency synth --out DIR --ases A --vps V --snapshots-per-month 5
[--every-hours 2] --no-ground-truth` (bench/common.synth_params gives A and V of a scale).
Writes bench/out/routes-ARCHIVE[-N-a-day][-LIMIT].json.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common, render  # noqa: E402
from bench.commits import TABLES, differing, worktree  # noqa: E402
from bench.common import OUT  # noqa: E402

COLLECTORS = "route-views2,route-views6,rrc00,rrc01"

#: A commit's DuckDB compare as `congruency compare` runs it (the engine's steps, then the
#: relationships, prefixes and hints in the month's commit), timed inside (argv: data dir,
#: month, memory limit or "").
DUCKDB = """
import json, sys, time
from bgp_congruency.common.config import load
from bgp_congruency.pipeline import job
from bgp_congruency.runner.steps import STAGERS
cfg = load().with_overrides(data_dir=sys.argv[1], engine="duckdb", duckdb_memory_limit=sys.argv[3] or None)
t = time.perf_counter()
[res] = job.compare_months(cfg, [sys.argv[2]], stagers=STAGERS)
print(json.dumps({"work_s": time.perf_counter() - t, "error": res.error}))
"""

#: A commit's Spark compare as the runner runs it (its stagers too), timed from a ready
#: session (argv: data dir, month).
SPARK = """
import json, sys, time
from bgp_congruency.common.config import load
from bgp_congruency.pipeline import job, spark_session
from bgp_congruency.runner.steps import STAGERS
cfg = load().with_overrides(data_dir=sys.argv[1], engine="spark")
spark = spark_session.session(cfg.spark_master, cfg.spark_conf)
t = time.perf_counter()
[res] = job.compare_months(cfg, [sys.argv[2]], spark=spark, stagers=STAGERS)
print(json.dumps({"work_s": time.perf_counter() - t, "error": res.error}))
spark.stop()
"""

#: The scan floor of what a commit's compare reads (argv: data dir, month): every column the
#: job reads, decoded, one query; a month's rib_entries (before) or its routes (after).
FLOOR = """
import json, os, sys, time
import duckdb
d, month = sys.argv[1], sys.argv[2]
old = os.path.join(d, "rib_entries", "month=" + month)
con = duckdb.connect()
if os.path.isdir(old):
    src = f"read_parquet('{old}/*/*.parquet', hive_partitioning = true)"
    q = ("SELECT count(*), sum(len(as_path)), sum(list_sum(as_path)), max(length(peer_ip)), max(length(prefix)), "
         f"count(collector), max(epoch(snapshot_time)), sum(peer_asn), sum(afi), count_if(has_as_set) FROM {src}")
else:
    from pathlib import Path
    from bench.compare import DUCKDB_FLOOR, route_files
    from bgp_congruency.common.duck import read_parquet
    q = DUCKDB_FLOOR.format(src=read_parquet(route_files(Path(d), month)))
t = time.perf_counter()
con.execute(q).fetchone()
print(json.dumps({"work_s": time.perf_counter() - t}))
"""


def child(script_or_cmd, args: list[str], pythonpath: str, label: str, timeout_s: float) -> dict:
    out = OUT / f"routes-child-{os.getpid()}.out"
    cmd = [sys.executable, "-c", script_or_cmd, *args] if isinstance(script_or_cmd, str) else script_or_cmd
    m = common.run_child(cmd, label=label, timeout_s=timeout_s, stdout=out, env={"PYTHONPATH": pythonpath})
    text = out.read_text() if out.exists() else ""
    out.unlink(missing_ok=True)
    lines = [ln for ln in text.splitlines() if ln.startswith("{")]
    if m.rc != 0:
        raise SystemExit(f"error: {label} exited {m.rc}: {text.strip()[-500:]}")
    got = json.loads(lines[-1]) if lines else {}
    if got.get("error"):
        raise SystemExit(f"error: {label}: {got['error']}")
    return {"work_s": got.get("work_s", m.wall_s), "wall_s": m.wall_s, "peak_rss": m.tree_peak}


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/routes.py: a month stored as routes against a commit that stored every snapshot."""
    intro = ["`bench/routes.py --archive A --commits BASE,HEAD`: each commit, in a git worktree and a data dir of",
             "its own, ingests the same generated archive (`congruency ingest`) and compares it (`congruency",
             "compare`, DuckDB, then Spark local[*]; hints and publish included), in fresh processes; the floor is",
             "a DuckDB scan of what the commit stored. The published tables are compared row for row between the",
             "commits (DuckDB) and between the engines of each commit. Ratios are the baseline's seconds over",
             "HEAD's (above 1: HEAD faster or smaller). With `--ingest-only`, only the ingest: the routes the two",
             "commits stored are compared row for row instead of the tables."]
    rows = []
    for r in runs:
        bad = sorted({t for pair in r["tables"].values() for t, v in pair.items()
                      if v.get("differing_rows", 0) or len(set(v["rows"])) != 1 or not v.get("same_snapshots", True)})
        same = ("routes identical" if r.get("ingest_only") else "identical") if not bad else \
            "DIFFERENT: " + ", ".join(bad)
        if not r.get("tables_checked", True):  # its timings were written, its check did not finish
            same = "not compared" + (f" ({r['tables_error']})" if r.get("tables_error") else "")
        sy = r["synth"]
        name = (f"{sy['ases']:,} ASes, {sy['vps']} VPs, days {r['days']} at {r['times']}"
                f"{', churn' if sy.get('churn') else ''}")
        for i, c in enumerate(r["commits"]):
            rows.append([name if not i else "", f"`{c['commit'][:9]}` {c['subject'][:50]}", f"{c['entries']:,}",
                         common.mib(c["stored_bytes"]), render.num(c["ingest_s"]), render.num(c.get("floor_s")), render.num(c.get("duckdb_s")),
                         render.num(c.get("spark_s")), common.mib(c.get("duckdb_peak_rss")),
                         same if i else "",
                         f"`{r['command']}` ({r['date']}, load after {r['load_after']})" if not i else ""])
        q = r["ratios"]
        rows.append(["", "ratios (baseline / HEAD)", "", render.ratio(q.get("stored_smaller")),
                     render.ratio(1 / q["ingest"]) if q.get("ingest") else "-", "", render.ratio(q.get("duckdb_compare_faster")),
                     render.ratio(q.get("spark_compare_faster")), "", "", ""])
    return render.section("A month stored as routes (bench/routes.py)", intro,
                    ["month", "commit", "entries", "stored", "ingest s", "floor s", "DuckDB compare s",
                     "Spark compare s", "DuckDB peak RSS", "tables", "command"], rows, align="llrrrrrrrll")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--archive", type=Path, required=True, help="a generated archive (congruency synth)")
    ap.add_argument("--month", default="2026-07", help="YYYY-MM (default 2026-07)")
    ap.add_argument("--days", default="1-5", help="the ingest's --days (default 1-5)")
    ap.add_argument("--times", default="00:00", help="the ingest's --times (default 00:00)")
    ap.add_argument("--commits", default="e1cb168,HEAD", help="before, after (default e1cb168,HEAD)")
    ap.add_argument("--limit", help="duckdb_memory_limit for both (default: the config's)")
    ap.add_argument("--spark", action="store_true", help="also the Spark compare (local[*])")
    ap.add_argument("--ingest-only", action="store_true",
                    help="only the ingest and the stored month (no floor, no compare, no tables compared)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds; the best counts (default 1)")
    ap.add_argument("--timeout", type=float, default=7200, help="seconds a step may take (default 7200)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    a = ap.parse_args(argv)
    con = common.console()
    commits = [c.strip() for c in a.commits.split(",") if c.strip()]
    trees = [worktree(c) for c in commits]
    cfg = OUT / "routes-bench.toml"
    cfg.write_text(f'duckdb_memory_limit = "{a.limit}"\n' if a.limit else "")
    runs: dict[str, dict[str, list]] = {sha: {} for sha, _ in trees}
    for i in range(a.repeat):
        for sha, tree in trees:
            path = f"{tree}{os.pathsep}{tree.parent / (sha[:12] + '-pythonpath')}"
            d = OUT / "routes" / sha[:12] / "data"
            shutil.rmtree(d.parent, ignore_errors=True)
            d.mkdir(parents=True)
            r = runs[sha]
            con.print(f"round {i + 1}: {sha[:12]} ingest")
            r.setdefault("ingest", []).append(child(
                [sys.executable, "-m", "bgp_congruency.cli.main", "ingest", "--month", a.month, "--days", a.days,
                 "--times", a.times, "--collectors", COLLECTORS, "--archive-root", str(a.archive.resolve()),
                 "--data-dir", str(d), "--config", str(cfg)], [], path, f"{sha[:12]} ingest", a.timeout))
            stored = d / "routes" / f"month={a.month}"
            stored = stored if stored.is_dir() else d / "rib_entries" / f"month={a.month}"
            r.setdefault("stored_bytes", []).append(common.du(stored))
            r.setdefault("entries", []).append(sum(
                (x["entries_v4"] or 0) + (x["entries_v6"] or 0)
                for x in __import__("pyarrow.parquet", fromlist=["x"]).read_table(
                    d / "manifest" / f"month={a.month}").to_pylist() if x["status"] == "ok"))  # its files, any version
            if a.ingest_only:
                continue
            con.print(f"round {i + 1}: {sha[:12]} floor")
            r.setdefault("floor", []).append(child(FLOOR, [str(d), a.month], common.pythonpath(), "floor", a.timeout))
            con.print(f"round {i + 1}: {sha[:12]} duckdb compare")
            r.setdefault("duckdb", []).append(child(DUCKDB, [str(d), a.month, a.limit or ""], path,
                                                    f"{sha[:12]} duckdb", a.timeout))
            if a.spark:
                sd = d.parent / "spark"
                shutil.rmtree(sd, ignore_errors=True)
                sd.mkdir()
                for sub in ("rib_entries", "routes", "manifest"):
                    if (d / sub).is_dir():
                        (sd / sub).symlink_to(d / sub, target_is_directory=True)
                con.print(f"round {i + 1}: {sha[:12]} spark compare")
                r.setdefault("spark", []).append(child(SPARK, [str(sd), a.month], path, f"{sha[:12]} spark",
                                                       a.timeout))
    rows = []
    for (sha, _), name in zip(trees, commits):
        r = runs[sha]
        best = {k: min(v, key=lambda x: x["work_s"]) for k, v in r.items() if k in ("ingest", "floor", "duckdb", "spark")}
        subj = subprocess.run(["git", "log", "-1", "--format=%s", sha], cwd=common.ROOT, capture_output=True,
                              text=True).stdout.strip()
        row = {"commit": sha[:12], "asked": name, "subject": subj[:100], "entries": r["entries"][-1],
               "stored_bytes": min(r["stored_bytes"]),
               **{f"{k}_s": round(v["work_s"], 2) for k, v in best.items()},
               **{f"{k}_peak_rss": v["peak_rss"] for k, v in best.items()},
               "runs": {k: [round(x["work_s"], 2) for x in v] for k, v in r.items() if k in best}}
        if not a.ingest_only:
            row["duckdb_vs_floor"] = round(row["duckdb_s"] / row["floor_s"], 2)
        if "spark_s" in row:
            row["spark_vs_floor"] = round(row["spark_s"] / row["floor_s"], 2)
        rows.append(row)
    before, after = rows
    ratios = {"ingest": round(after["ingest_s"] / before["ingest_s"], 3),
              "stored_smaller": round(before["stored_bytes"] / after["stored_bytes"], 2)}
    if not a.ingest_only:
        ratios |= {"duckdb_compare_faster": round(before["duckdb_s"] / after["duckdb_s"], 2),
                   "ingest_plus_duckdb_faster": round((before["ingest_s"] + before["duckdb_s"]) /
                                                      (after["ingest_s"] + after["duckdb_s"]), 2)}
    if a.spark:
        ratios["spark_compare_faster"] = round(before["spark_s"] / after["spark_s"], 2)
    synth = json.loads((a.archive / "SYNTH.json").read_text())
    doc = {"archive": str(a.archive), "synth": {k: synth.get(k) for k in ("seed", "ases", "vps", "snapshots_per_month",
                                                                          "every_hours", "churn")},
           "month": a.month, "days": a.days, "times": a.times, "limit": a.limit, "repeat": a.repeat,
           "ingest_only": a.ingest_only,
           "commits": rows, "ratios": ratios, "tables": {}, "tables_checked": False,
           "command": "bench/routes.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "date": common.now_utc(), "load_after": common.load_now(),
           "machine": common.machine_facts().get("cpu")}
    n_times = len([t for t in a.times.split(",") if t.strip()])
    name = (f"{a.archive.resolve().name}{f'-{n_times}-a-day' if n_times > 1 else ''}{'-' + a.limit if a.limit else ''}"
            f"{'-ingest' if a.ingest_only else ''}")
    # The timings first, so that a check that fails (or crashes) loses none of them.
    out = OUT / f"routes-{name}.json"
    common.write_json(doc, out)
    checks = doc["tables"]  # filled as each check finishes: a later one that crashes keeps them
    try:
        if not a.ingest_only:
            checks["duckdb"] = common_tables(OUT / "routes" / trees[0][0][:12] / "data",
                                             OUT / "routes" / trees[1][0][:12] / "data", a.month)
        dirs = [OUT / "routes" / sha[:12] / "data" for sha, _ in trees]
        if a.ingest_only and all((d / "routes" / f"month={a.month}").is_dir() for d in dirs):
            # the routes themselves, row for row, shaped as common_tables' tables (a baseline that
            # stores rib_entries has none: its ingest is timed, not compared)
            checks["ingest"] = {"routes": same_routes(*dirs, a.month)}
        if a.spark:
            for sha, _ in trees:
                checks[f"spark-{sha[:12]}"] = common_tables(OUT / "routes" / sha[:12] / "data",
                                                            OUT / "routes" / sha[:12] / "spark", a.month)
    except Exception as e:  # the timings stay written; the table says what was not compared
        # one line, no table separator: it is shown in a cell of RESULTS.md
        doc["tables_error"] = " ".join(f"{type(e).__name__}: {e}".split()).replace("|", "/")[:300]
        common.write_json(doc, out)
        raise
    doc["tables_checked"] = True
    common.write_json(doc, out)
    if a.json:
        common.write_json(doc, stdout=True)
    elif a.ingest_only:
        con.print(common.table(["commit", "entries", "stored MiB", "ingest s", "peak RSS"],
                               [[r["commit"], f"{r['entries']:,}", f"{r['stored_bytes'] / 2**20:,.0f}",
                                 f"{r['ingest_s']:.1f}", common.mib(r["ingest_peak_rss"])] for r in rows]))
        con.print(json.dumps(ratios))
        con.print("routes: " + json.dumps(checks))
    else:
        cols = ["commit", "entries", "stored MiB", "ingest s", "floor s", "duckdb s", "vs floor"]
        cols += ["spark s", "vs floor"] if a.spark else []
        con.print(common.table(cols, [[r["commit"], f"{r['entries']:,}", f"{r['stored_bytes'] / 2**20:,.0f}",
                                       f"{r['ingest_s']:.1f}", f"{r['floor_s']:.2f}", f"{r['duckdb_s']:.1f}",
                                       f"{r['duckdb_vs_floor']:.1f}x"]
                                      + ([f"{r['spark_s']:.1f}", f"{r['spark_vs_floor']:.1f}x"] if a.spark else [])
                                      for r in rows]))
        con.print(json.dumps(ratios))
        con.print("tables: " + json.dumps(checks))
    ok = all(v.get("differing_rows", 0) == 0 and v.get("same_snapshots", True)
             for c in checks.values() for v in c.values())
    return 0 if ok else 1


def same_routes(a: Path, b: Path, month: str) -> dict:
    """The month's routes of a and b, row for row, and each collector's snapshots."""
    import duckdb

    from bgp_congruency.common import routes

    con = duckdb.connect()
    ga, gb = (routes.month_generations(d, month) for d in (a, b))
    rel = [f"read_parquet([{', '.join(repr(f) for c in sorted(g) for f in routes.files(g[c]))}], filename = true)"
           for g in (ga, gb)]
    cols = f"regexp_extract(filename, 'collector=([^/]+)', 1) AS c, * EXCLUDE (filename) REPLACE ({routes.origin_sql()} AS origin_asn)"
    n = [con.execute(f"SELECT count(*) FROM {r}").fetchone()[0] for r in rel]
    diff = sum(con.execute(f"SELECT count(*) FROM (SELECT {cols} FROM {x} EXCEPT ALL SELECT {cols} FROM {y})").fetchone()[0]
               for x, y in ((rel[0], rel[1]), (rel[1], rel[0])))
    snaps = {c: routes.snapshots(g) for c, g in ga.items()} == {c: routes.snapshots(g) for c, g in gb.items()}
    return {"rows": n, "differing_rows": diff, "same_snapshots": snaps}


def common_tables(a: Path, b: Path, month: str) -> dict:
    """Each published table of a and b, row for row (the catalog's files of the month)."""
    import duckdb

    from bgp_congruency.lake import published

    con = duckdb.connect()
    out = {}
    for t in TABLES:
        fa, fb = (published.files(d, [t], month)[t] for d in (a, b))
        if not fa and not fb:
            continue
        out[t] = differing(con, *(f"read_parquet([{', '.join(repr(f) for f in fs)}], hive_partitioning = false)"
                                  for fs in (fa, fb)))
    return out


if __name__ == "__main__":
    sys.exit(main())
