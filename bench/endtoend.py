#!/usr/bin/env python3
"""A real month's size on this machine: `congruency run` end to end on a synthetic archive of
about N million RIB entries (--scale N), DuckDB engine, the config's default memory limit.

The archive is generated (or reused) under bench/out/synth-N, as bench/run.py does. The run
is one child process (`congruency run --json`); while it runs, every 0.5 s this script reads
the resident memory of the child's process tree (/proc; its peak per step too), the bytes under the month's
staging folder (where DuckDB spills) and the bytes under the data dir. It reports per step
the wall time the run itself records, the peak RSS, the peak spill and staging volume, and
the data dir's size at the end, into bench/out/endtoend-N.json (bench/run.py renders it into
RESULTS.md). The run uses --min-coverage 0.5: a synthetic VP sees fewer origins than a real
default-free one, and at 0.9 too few VPs would give pairs to exercise the later steps.

    .venv/bin/python bench/endtoend.py --scale 250 [--json]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bgp_congruency.common import duck  # noqa: E402
from bgp_congruency.common.config import Config  # noqa: E402


def _step_peaks(samples: list[tuple[float, int]], steps: dict, wall: float) -> dict:
    """Peak tree RSS (MiB) per step. The steps run one after another in the order the run
    reports them; each is placed by its recorded seconds, ending where the next begins, and the
    start-up before the first step (the time the steps do not account for) is left out."""
    out, end = {}, wall
    for name, secs in reversed([(k, v) for k, v in steps.items() if v is not None]):
        start = end - secs
        out[name] = round(max((r for t, r in samples if start <= t <= end), default=0) / 2**20)
        end = start
    return dict(reversed(list(out.items())))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=int, required=True, metavar="N", help="about N million RIB entries")
    ap.add_argument("--snapshots", type=int, default=5, metavar="K",
                    help="daily snapshots of the month, days 1..K at 00:00 (default 5, the default selection)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    entries = args.scale * 1_000_000
    # Five daily snapshots, as the default selection (days 1-5 at 00:00): the generator routes
    # once per month, so entries come from snapshots at no routing cost (its routing grows
    # with the square of the ASes: 2 snapshots of 54,554 ASes did not finish routing in 11 min).
    params = common.synth_params(entries, per=common.SYNTH_ALL, snapshots=args.snapshots)
    base = common.OUT / f"synth-{args.scale}"
    listing = common.synth_archive(base / "archive", params, con=common.console())
    generate_s = listing.get("generate_s")  # when reused: the time of the run that generated it
    collectors = ",".join(c["name"] for c in json.loads((base / "archive" / "SYNTH.json").read_text())["collectors"])
    data = common.OUT / f"endtoend-{args.scale}-data"
    shutil.rmtree(data, ignore_errors=True)
    cmd = [sys.executable, "-m", "bgp_congruency.cli.main", "run", "--month", common.SYNTH_MONTH, "--days", f"1-{args.snapshots}", "--times", "00:00",
           "--archive-root", str(base / "archive"), "--collectors", collectors, "--data-dir", str(data),
           "--engine", "duckdb", "--min-coverage", "0.5", "--json"]
    staging = data / "_staging"
    peak = {"rss": 0, "staging": 0, "data": 0}
    samples: list[tuple[float, int]] = []  # (seconds since start, tree RSS)
    t1 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    tick = 0
    while proc.poll() is None:
        rss = common.tree_rss(proc.pid, include_root=True)
        samples.append((time.perf_counter() - t1, rss))
        peak["rss"] = max(peak["rss"], rss)
        if staging.is_dir():
            peak["staging"] = max(peak["staging"], common.du(staging))
        if tick % 20 == 0 and data.is_dir():
            peak["data"] = max(peak["data"], common.du(data))
        tick += 1
        time.sleep(0.5)
    out, err = proc.communicate()
    wall = time.perf_counter() - t1
    try:
        res = json.loads(out)
    except json.JSONDecodeError:
        print(err[-3000:], file=sys.stderr)
        return 1
    steps = {k: v.get("seconds") for k, v in res.get("steps", {}).items()}
    result = {"scale": args.scale, "entries": listing.get("entries"), "synth": params, "generate_s": generate_s,
              "run_wall_s": round(wall, 1), "ok": res.get("ok"),
              "steps": steps, "step_peak_rss_mib": _step_peaks(samples, steps, wall),
              "peak_rss_mib": round(peak["rss"] / 2**20), "peak_staging_mib": round(peak["staging"] / 2**20),
              "data_dir_mib": round(common.du(data) / 2**20), "peak_data_dir_mib": round(max(peak["data"], common.du(data)) / 2**20),
              "archive_mib": round(common.du(base / "archive") / 2**20), "pairs": res.get("pairs"),
              "noncongruent_fraction": res.get("noncongruent_fraction"), "memory_limit": f"config default ({Config().duckdb_memory_limit}: {duck.memory_limit(Config().duckdb_memory_limit)})",
              "machine": common.machine_facts() if hasattr(common, "machine_facts") else None,
              "command": " ".join(["bench/endtoend.py", *(argv if argv is not None else sys.argv[1:])])}
    result["errors"] = {k: v["error"] for k, v in res.get("steps", {}).items() if v.get("error")}
    for name, error in result["errors"].items():
        print(f"{name}: {error}", file=sys.stderr)
    (common.OUT / f"endtoend-{args.scale}.json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
    else:
        print(f"scale {args.scale}: {result['entries']:,} entries; generate {result['generate_s']} s; run "
              f"{result['run_wall_s']} s ({', '.join(f'{k} {v} s' for k, v in result['steps'].items())}); peak RSS "
              f"{result['peak_rss_mib']} MiB; peak staging/spill {result['peak_staging_mib']} MiB; data dir "
              f"{result['data_dir_mib']} MiB (archive {result['archive_mib']} MiB); ok {result['ok']}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
