#!/usr/bin/env python3
"""The DuckDB compare on two DuckDB versions, side by side on the same month: the project
venv's (1.5.5, the one DuckLake's extension wheels serve) and another (2.0.1, which the
project used before the catalog; DuckDB 2.0 downloads the ducklake extension, which this
machine cannot, so it could not publish). Each version runs the compare's steps through the
DuckDB engine (bench/steps.py: pipeline/steps.py, the month pass, the VP partitions; not the
publish, which 2.0.1 cannot do here) in a fresh process, the versions interleaved
round-robin, best of --repeat; same memory limit and threads. Untimed, the tables the two
versions computed are compared row for row, and the best run's step profile says where the
time differs.

    .venv/bin/python bench/duckdb_versions.py --data-dir bench/out/synth-10/data --month 2026-07 \\
        --versions 2.0.1,1.5.5 --limit 4GB --repeat 3 [--json]

A version other than the project venv's gets its own venv under bench/out/venv-duckdb-VER
(pip: duckdb==VER and the project venv's pyarrow, numpy, rich and plotly versions); the
project's code is the same checkout for both. Writes bench/out/duckdb-versions-NAME.json
(NAME: the data dir's folder name, or its parent's for a folder named data), which bench/run.py renders into RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common, render  # noqa: E402
from bench.common import OUT  # noqa: E402

TABLES = ("cleaning_stats", "paths", "vps", "pairs", "divergence", "month_summary")
SAME_AS_PROJECT = ("pyarrow", "numpy", "rich", "plotly")


def interpreter(ver: str, con) -> str:
    """A Python whose duckdb is `ver`: this one, or a venv made for it once."""
    if version("duckdb") == ver:
        return sys.executable
    venv = OUT / f"venv-duckdb-{ver}"
    py = venv / "bin" / "python"
    if not py.exists():
        con.print(f"making {venv} (duckdb=={ver})")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pins = [f"{p}=={version(p)}" for p in SAME_AS_PROJECT]
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", f"duckdb=={ver}", *pins], check=True)
    got = subprocess.run([str(py), "-c", "import duckdb; print(duckdb.__version__)"], capture_output=True,
                         text=True, check=True).stdout.strip()
    if got != ver:
        raise SystemExit(f"error: {py} has duckdb {got}, not {ver}")
    return str(py)


def rows(d: Path, table: str) -> list[str]:
    import pyarrow.parquet as pq

    t = pq.read_table(d / table)
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in t.to_pylist())


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/duckdb_versions.py: the DuckDB compare on two DuckDB versions, side by side."""
    intro = ["`bench/duckdb_versions.py --data-dir D --versions A,B --limit L`: the compare's steps (DuckDB",
             "engine, `bench/steps.py`: everything but the publish, which DuckDB 2.0.1 cannot do here) on one month,",
             "each DuckDB version in a fresh process, interleaved, best of --repeat; the same checkout, memory limit",
             "and threads; the tables compared row for row. 1.5.5 is the newest DuckDB whose DuckLake extension",
             "wheels exist (issue 28), and the project's pin since the catalog. Runs before 2026-11-26 timed the whole",
             "`congruency compare` instead."]
    rows = []
    for r in runs:
        vs = list(r["versions"])
        for v in vs:
            x = r["versions"][v]
            ratio = x.get("vs_" + vs[0])
            rows.append([r["name"] + (f" ({r['cpu']})" if r.get("cpu") else ""), r["month"], r["limit"], v,
                         render.num(x["seconds"], 1),
                         ", ".join(f"{t:.1f}" for t in x["all_seconds"]), render.ratio(ratio) if ratio else "-",
                         common.mib(x["maxrss_bytes"]),
                         ("identical" if r.get("identical") and all(r["identical"].values()) else "DIFFERENT")
                         if v != vs[0] else "", f"`{r['command']}` ({r['date']}, load after {r['load_after']})"
                         if v == vs[0] else ""])
    out = render.section("DuckDB engine on two DuckDB versions", intro,
                   ["data", "month", "limit", "duckdb", "best s", "runs s", "vs first", "peak RSS", "tables",
                    "command"], rows, align="lllrrlrrll")
    for r in runs:  # where the versions differ, step by step (the best run's profile of each)
        st = r.get("steps") or {}
        if len(st) < 2:
            continue
        (a, pa), (b, pb) = list(st.items())[:2]
        diff = sorted(((pa.get(k, 0) - pb.get(k, 0), k) for k in pb if k != "total_s"), reverse=True)
        out += [f"Step by step ({r['name']}): duckdb {a} {pa['total_s']:.1f} s, duckdb {b} "
                f"{pb['total_s']:.1f} s; the steps that differ most: "
                + ", ".join(f"{k} {pa.get(k, 0):.1f} vs {pb.get(k, 0):.1f} s" for _d, k in diff[:3]) + ".", ""]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True, help="an ingested data dir (routes, manifest)")
    ap.add_argument("--month", default="2026-07")
    ap.add_argument("--versions", default=f"{version('duckdb')},1.5.5", help="comma-separated DuckDB versions")
    ap.add_argument("--limit", default="4GB", help="duckdb_memory_limit for every run (default 4GB)")
    ap.add_argument("--threads", type=int, default=None, help="duckdb_threads (default: all cores)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    a = ap.parse_args()
    con = common.console()
    src = a.data_dir.resolve()
    name = common.data_name(src)
    from bgp_congruency.common import routes

    if not routes.month_files(src, a.month):
        con.print(f"[red]error: {src}: no ingested routes for {a.month}; nothing measured[/]")
        return 2
    versions = [v.strip() for v in a.versions.split(",") if v.strip()]
    pys = {v: interpreter(v, con) for v in versions}
    runs: dict[str, list] = {v: [] for v in versions}
    profiles: dict[str, list] = {v: [] for v in versions}
    # steps.py records its profile for RESULTS.md's step table; these runs are not that one.
    kept = OUT / f"steps-{name}-duckdb.json"
    before = kept.read_bytes() if kept.is_file() else None
    dirs = {v: OUT / f"duckdb-versions-{name}-{v}" for v in versions}
    for i in range(a.repeat):
        for v in versions:
            prof = OUT / f"duckdb-versions-{name}-{v}.profile.json"
            m = common.run_child([pys[v], str(Path(__file__).with_name("steps.py")), "--data-dir", src, "--month", a.month,
                                  "--engine", "duckdb", "--limit", a.limit, "--keep", dirs[v], "--json",
                                  *(["--threads", a.threads] if a.threads else [])],
                                 label=f"duckdb {v}", stdout=prof)
            con.print(f"  run {i + 1}/{a.repeat} duckdb {v}: {m.wall_s:.1f} s, peak RSS {common.mib(m.maxrss)}"
                      + ("" if m.rc == 0 else f" [red]exit {m.rc}[/]"))
            runs[v].append(m)
            profiles[v].append(json.loads(prof.read_text()) if m.rc == 0 else None)
            prof.unlink(missing_ok=True)
    out = {"data_dir": str(src), "name": name, "month": a.month, "limit": a.limit, "threads": a.threads,
           "repeat": a.repeat, "command": " ".join(sys.argv), "date": common.now_utc(),
           "load_after": common.load_now(), "cpu": common.machine_facts().get("cpu"), "versions": {}}
    for v in versions:
        b = common.best(runs[v])
        out["versions"][v] = {"seconds": b.wall_s, "all_seconds": [m.wall_s for m in runs[v]],
                              "maxrss_bytes": b.maxrss, "ok": all(m.rc == 0 for m in runs[v])}
    base = versions[0]
    for v in versions[1:]:
        out["versions"][v]["vs_" + base] = round(out["versions"][v]["seconds"] / out["versions"][base]["seconds"], 3)
    if all(r["ok"] for r in out["versions"].values()):
        out["identical"] = {t: all(rows(dirs[v], t) == rows(dirs[base], t) for v in versions[1:]) for t in TABLES}
        out["steps"] = {}
        for v in versions:  # the best run's profile: where the versions differ
            best = min(range(a.repeat), key=lambda i: runs[v][i].wall_s)
            prof = profiles[v][best]
            out["steps"][v] = {"total_s": prof["total_s"], **{x["step"]: x["seconds"] for x in prof["steps"]}}
    for d in dirs.values():
        shutil.rmtree(d, ignore_errors=True)
    if before is None:
        kept.unlink(missing_ok=True)
    else:
        kept.write_bytes(before)
    common.write_json(out, OUT / f"duckdb-versions-{name}.json", stdout=a.json)
    for v, r in out["versions"].items():
        con.print(f"duckdb {v}: best {r['seconds']:.1f} s of {r['all_seconds']}, peak RSS {common.mib(r['maxrss_bytes'])}"
                  + (f", {r['vs_' + base]:.2f}x duckdb {base}" if "vs_" + base in r else ""))
    same = "identical" in out and all(out["identical"].values())  # not compared (a run failed) is no pass
    if "identical" in out:
        con.print("tables " + ("identical" if same else f"DIFFER: {out['identical']}"))
    return 0 if all(r["ok"] for r in out["versions"].values()) and same else 1


if __name__ == "__main__":
    sys.exit(main())
