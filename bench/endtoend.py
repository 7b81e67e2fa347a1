#!/usr/bin/env python3
"""A real month's size on this machine: `congruency run` end to end on a synthetic archive of
about N million RIB entries (--scale N), with the DuckDB engine at the config's default memory
limit or --memory-limit, or with --engine spark (local[*], spark.driver.memory 4g, its spill in
bench/out/endtoend-N-spark-local, sampled with the staging folder). Several scales in one run
(--scale 250,1000) are run one after the other and their compare rates (entries per second)
set side by side, the issue's "linear" check.

The archive is generated (or reused) under bench/out/synth-N, as bench/run.py does. The run
is one child process (`congruency run --json`, its progress log in bench/out/endtoend-N.log);
while it runs, every 0.5 s this script reads the resident memory of the child's process tree (/proc; its peak per step too), the bytes under the month's
staging folder (where DuckDB spills) and the bytes under the data dir. It reports per step
the wall time the run itself records, the peak RSS, the peak spill and staging volume, and
the data dir's size at the end, into bench/out/endtoend-N.json (bench/run.py renders it into
RESULTS.md). The run uses --min-coverage 0.5: a synthetic VP sees fewer origins than a real
default-free one, and at 0.9 too few VPs would give pairs to exercise the later steps.

    .venv/bin/python bench/endtoend.py --scale 250 [--memory-limit 4GB] [--json]
    .venv/bin/python bench/endtoend.py --scale 250,1000 --memory-limit 4GB
    .venv/bin/python bench/endtoend.py --scale 250 --memory-limit 4GB --engine spark
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common, render  # noqa: E402
from bgp_congruency.common import duck  # noqa: E402
from bgp_congruency.common.config import Config  # noqa: E402
from bgp_congruency.common.tables import MONTH_TABLES  # noqa: E402


def _step_peaks(samples: list[tuple[float, int]], steps: dict, wall: float) -> dict:
    """Peak of a sampled quantity (tree RSS, staging bytes) per step, in MiB. The steps run one
    after another in the order the run reports them; each is placed by its recorded seconds,
    ending where the next begins, and the start-up before the first step (the time the steps
    do not account for) is left out."""
    out, end = {}, wall
    for name, secs in reversed([(k, v) for k, v in steps.items() if v is not None]):
        start = end - secs
        out[name] = round(max((r for t, r in samples if start <= t <= end), default=0) / 2**20)
        end = start
    return dict(reversed(list(out.items())))


def _kinds(data: Path) -> dict[str, int]:
    """The data dir's bytes by what holds them: the month's routes, the compare's published
    tables (common/tables.MONTH_TABLES), the hints export, and the rest (runner/plan.py's
    disk figures are per route from these)."""
    out = {"routes": 0, "published": 0, "exports": 0, "other": 0}
    for d in data.iterdir() if data.is_dir() else ():
        kind = d.name if d.name in ("routes", "exports") else "published" if d.name in MONTH_TABLES else "other"
        out[kind] += common.du(d)
    return out


def snapshots_for(scale: int) -> int:
    """Five daily snapshots (the default selection's days 1-5) up to scale 250; past it, more
    snapshots of the scale-250 shape's 34,503 ASes (5 per 250M entries): the generator routes
    once per month, so entries come from snapshots at no routing cost (its routing grows with
    the square of the ASes: 2 snapshots of 54,554 ASes did not finish routing in 11 min), and a
    real month has 60-150 snapshots per collector, not more ASes."""
    return max(5, round(5 * scale / 250))


def tag(scale: int, engine: str) -> str:
    """The name of a run's files under bench/out (the DuckDB runs keep their old names)."""
    return f"endtoend-{scale}" + ("" if engine == "duckdb" else f"-{engine}")


def one(scale: int, snapshots: int, memory_limit: str | None, argv_text: str, engine: str = "duckdb") -> dict:
    """Generate (or reuse) the archive, run `congruency run` on it in a child, sample it."""
    entries = scale * 1_000_000
    params = common.synth_params(entries, per=common.SYNTH_ALL, snapshots=snapshots)
    base = common.OUT / f"synth-{scale}"
    listing = common.synth_archive(base / "archive", params, con=common.console())
    generate_s = listing.get("generate_s")  # when reused: the time of the run that generated it
    collectors = ",".join(c["name"] for c in json.loads((base / "archive" / "SYNTH.json").read_text())["collectors"])
    name = tag(scale, engine)
    data = common.OUT / f"{name}-data"
    shutil.rmtree(data, ignore_errors=True)
    cmd = [sys.executable, "-m", "bgp_congruency.cli.main", "run", "--month", common.SYNTH_MONTH, "--days", f"1-{snapshots}", "--times", "00:00",
           "--archive-root", str(base / "archive"), "--collectors", collectors, "--data-dir", str(data),
           "--engine", engine, "--min-coverage", "0.5", "--json"]
    limit = memory_limit or Config().duckdb_memory_limit
    if memory_limit:
        conf = common.OUT / f"{name}.toml"
        conf.write_text(f"duckdb_memory_limit = {json.dumps(memory_limit)}\n")
        cmd += ["--config", str(conf)]
    staging = data / "_staging"
    env, spill = dict(os.environ), [staging]
    if engine == "spark":  # Spark spills to its local dirs, not the staging folder: sampled too
        local = common.OUT / f"{name}-local"
        shutil.rmtree(local, ignore_errors=True)
        local.mkdir(parents=True)
        env["SPARK_LOCAL_DIRS"] = str(local)
        spill.append(local)
    peak = {"rss": 0, "staging": 0, "data": 0}
    samples: list[tuple[float, int]] = []  # (seconds since start, tree RSS)
    staged: list[tuple[float, int]] = []  # (seconds since start, staging and spill bytes)
    common.console().print(f"scale {scale}: {listing.get('entries'):,} entries, congruency run at {limit} ...")
    # The child's output goes to files, not pipes: a pipe nobody reads until the end fills
    # (64 KiB) and blocks the run mid-compare once its progress lines outgrow it.
    out_path, log_path = common.OUT / f"{name}.out.json", common.OUT / f"{name}.log"
    t1 = time.perf_counter()
    with open(out_path, "wb") as out_fh, open(log_path, "wb") as log_fh:
        proc = subprocess.Popen(cmd, stdout=out_fh, stderr=log_fh, cwd=Path(__file__).resolve().parents[1], env=env)
    tick = 0
    while proc.poll() is None:
        rss = common.tree_rss(proc.pid, include_root=True)
        samples.append((time.perf_counter() - t1, rss))
        peak["rss"] = max(peak["rss"], rss)
        staged.append((samples[-1][0], sum(common.du(d) for d in spill if d.is_dir())))
        peak["staging"] = max(peak["staging"], staged[-1][1])
        if tick % 20 == 0 and data.is_dir():
            peak["data"] = max(peak["data"], common.du(data))
        tick += 1
        time.sleep(0.5)
    proc.wait()
    wall = time.perf_counter() - t1
    out, err = out_path.read_text(), log_path.read_text(errors="replace")
    if engine == "spark":  # Spark's spill, whatever the run's end
        shutil.rmtree(local, ignore_errors=True)
    try:
        res = json.loads(out)
    except json.JSONDecodeError:
        print(err[-3000:], file=sys.stderr)
        return {"scale": scale, "engine": engine, "entries": listing.get("entries"), "ok": False,
                "error": err.strip().splitlines()[-1:]}
    steps = {k: v.get("seconds") for k, v in res.get("steps", {}).items()}
    result = {"scale": scale, "engine": engine, "entries": listing.get("entries"), "synth": params, "generate_s": generate_s,
              "run_wall_s": round(wall, 1), "ok": res.get("ok"),
              "steps": steps, "step_peak_rss_mib": _step_peaks(samples, steps, wall),
              "peak_rss_mib": round(peak["rss"] / 2**20), "peak_staging_mib": round(peak["staging"] / 2**20),
              "step_peak_staging_mib": _step_peaks(staged, steps, wall), "data_dir_bytes": _kinds(data),
              "data_dir_mib": round(common.du(data) / 2**20), "peak_data_dir_mib": round(max(peak["data"], common.du(data)) / 2**20),
              "archive_mib": round(common.du(base / "archive") / 2**20), "pairs": res.get("pairs"),
              "noncongruent_fraction": res.get("noncongruent_fraction"),
              "memory_limit": (memory_limit if memory_limit else f"config default ({limit}: {duck.memory_limit(limit)})"),
              "machine": common.machine_facts() if hasattr(common, "machine_facts") else None,
              "command": argv_text}
    result["errors"] = {k: v["error"] for k, v in res.get("steps", {}).items() if v.get("error")}
    for step, error in result["errors"].items():
        print(f"{step}: {error}", file=sys.stderr)
    (common.OUT / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/endtoend.py: `congruency run` on a generated archive of a real month's size."""
    intro = ["`bench/endtoend.py --scale N[,N] [--memory-limit L] [--engine spark]`: the synthetic archive",
             "generated (or reused), then one `congruency run` (ingest, compare with the engine shown: DuckDB at",
             "the memory limit shown, or Spark local[*] with spark.driver.memory 4g; warehouse, reports, hints)",
             "as a child process; its tree's RSS, the month's staging folder (where DuckDB spills; with Spark,",
             "also Spark's local dirs) and the data dir sampled every 0.5 s (the data dir every 10 s). In",
             "brackets, a step's peak RSS and staging (each step placed by the seconds the run records for it;",
             "runner/plan.py's staging figures). Compare",
             "rate: entries per second of the compare step; where scales ran in one invocation, the smallest",
             "scale's rate over this one's (1.0x: linear)."]
    rows = []
    for r in sorted(runs, key=lambda r: (r["scale"], r.get("engine", "duckdb"))):
        peaks, staged = r.get("step_peak_rss_mib") or {}, r.get("step_peak_staging_mib") or {}

        def brackets(k: str) -> str:
            got = [f"{peaks[k] / 1024:.1f} GiB"] if peaks.get(k) else []
            got += [f"{staged[k] / 1024:.1f} GiB staged"] if staged.get(k) else []
            return f" ({', '.join(got)})" if got else ""
        steps = ", ".join(f"{k} {v:,.0f} s{brackets(k)}" for k, v in (r.get("steps") or {}).items() if v is not None)
        compare = (r.get("steps") or {}).get("compare")
        rate = f"{r['entries'] / compare / 1e3:,.0f} k/s" if compare and r.get("entries") else "-"
        if r.get("compare_rate_vs_scale"):
            rate += f" ({r['compare_rate_vs_scale']['ratio']}x vs {r['compare_rate_vs_scale']['scale']})"
        rows.append([r["scale"], r.get("engine", "duckdb"), f"{r.get('entries') or 0:,}",
                     (r.get("synth") or {}).get("snapshots_per_month", "-"), r.get("memory_limit") or "-", render.num(r.get("generate_s"), 0), render.num(r.get("run_wall_s"), 0),
                     steps, rate, f"{r.get('peak_rss_mib', 0):,} MiB", f"{r.get('peak_staging_mib', 0):,} MiB",
                     f"{r.get('data_dir_mib', 0):,} MiB", f"{r.get('peak_data_dir_mib', 0):,} MiB",
                     f"{r.get('archive_mib', 0):,} MiB",
                     "yes" if r.get("ok") else "**no**"])
    return render.section("A real month's size end to end", intro,
                    ["scale", "engine", "entries", "snapshots", "memory limit", "generate s", "run s", "run steps",
                     "compare rate", "peak RSS (tree)", "peak spill + staging", "data dir after", "data dir peak",
                     "archive", "ok"],
                    rows, "rlrrlrrlrrrrrrl")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", required=True, metavar="N[,N...]",
                    help="about N million RIB entries; several, comma-separated, run one after the other")
    ap.add_argument("--snapshots", type=int, default=None, metavar="K",
                    help="daily snapshots of the month, days 1..K at 00:00 (default: 5 up to scale 250, "
                         "5 per 250M entries past it)")
    ap.add_argument("--memory-limit", default=None, metavar="LIMIT",
                    help="duckdb_memory_limit for the run (e.g. 4GB; default: the config's default)")
    ap.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb",
                    help="the compare's engine (default duckdb; spark: local[*], spark.driver.memory 4g)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    try:
        scales = [int(x) for x in args.scale.split(",")]
    except ValueError:
        ap.error(f"--scale: expected numbers separated by commas, got {args.scale!r}")
    argv_text = " ".join(["bench/endtoend.py", *(argv if argv is not None else sys.argv[1:])])
    results = [one(n, args.snapshots or snapshots_for(n), args.memory_limit, argv_text, args.engine) for n in scales]
    rates = {r["scale"]: r["entries"] / r["steps"]["compare"] for r in results
             if r.get("ok") and (r.get("steps") or {}).get("compare")}
    if len(rates) > 1:  # the "linear" check: the compare's rate at each scale against the smallest's
        first = min(rates)
        for r in results:
            if r["scale"] in rates:
                r["compare_rate_vs_scale"] = {"scale": first, "ratio": round(rates[first] / rates[r["scale"]], 3)}
                (common.OUT / f"{tag(r['scale'], args.engine)}.json").write_text(json.dumps(r, indent=1) + "\n")
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        print()
    else:
        for r in results:
            if "steps" not in r:
                print(f"scale {r['scale']}: the run failed: {' '.join(r.get('error') or [])}")
                continue
            print(f"scale {r['scale']}: {r['entries']:,} entries; generate {r['generate_s']} s; run "
                  f"{r['run_wall_s']} s ({', '.join(f'{k} {v} s' for k, v in r['steps'].items())}); peak RSS "
                  f"{r['peak_rss_mib']} MiB; peak staging/spill {r['peak_staging_mib']} MiB; data dir "
                  f"{r['data_dir_mib']} MiB (archive {r['archive_mib']} MiB); ok {r['ok']}; engine {r['engine']}; "
                  f"memory limit {r['memory_limit']}"
                  + (f"; compare {rates[r['scale']] / 1e3:,.0f} k entries/s, scale {r['compare_rate_vs_scale']['scale']}'s "
                     f"rate / this = {r['compare_rate_vs_scale']['ratio']}x" if r.get("compare_rate_vs_scale") else ""))
    return 0 if all(r.get("ok") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
