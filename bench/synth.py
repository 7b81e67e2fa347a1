#!/usr/bin/env python3
"""The synthetic generator (ingest/synth): one process writing the month's files against one
forked writer per CPU, side by side on the same parameters (those of bench/run.py's --scale
N), each into its own folder. Reports wall time, the routing part (until the last routing
pass is done, the same in both) and the writing part, and checks that both archives list
the same files with the same SHA-256 and entry counts. Writes bench/out/generate-N.json,
which bench/run.py renders into RESULTS.md.

    .venv/bin/python bench/synth.py --scale 20 [--snapshots 5] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common, render  # noqa: E402


def one(out: Path, params: dict, workers: int) -> dict:
    from bgp_congruency.synth.generate import generate

    shutil.rmtree(out, ignore_errors=True)
    marks = {}
    t0 = time.perf_counter()

    def progress(done, total, desc):
        if desc.endswith("routing IPv6 done"):
            marks["routed"] = time.perf_counter() - t0

    summary = generate(out, ground_truth=False, progress=progress, workers=workers, **params)
    wall = time.perf_counter() - t0
    listing = json.loads((out / "ground_truth" / "files.json").read_text())["files"]
    digest = sorted((f["path"], f["sha256"], json.dumps(f["entries"], sort_keys=True)) for f in listing)
    shutil.rmtree(out, ignore_errors=True)
    return {"workers": workers, "seconds": round(wall, 1), "routing_s": round(marks["routed"], 1),
            "writing_s": round(wall - marks["routed"], 1), "entries": summary["entries"],
            "files": summary["files"], "digest": digest}


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/synth.py: the generator with one writer and with one forked writer per CPU."""
    intro = ["`bench/synth.py --scale N`: the same parameters generated twice, side by side, without ground",
             "truth: one process writing the files, then one forked writer per CPU after routing. Routing is",
             "the same single-process pass in both."]
    rows = []
    for r in sorted(runs, key=lambda r: r["scale"]):
        a, b = r["one_writer"], r["forked_writers"]
        rows.append([r["scale"], f"{r['entries']:,}", r["files"], f"{r['synth']['ases']:,}", render.num(a["routing_s"]),
                     render.num(a["writing_s"]), f"{b['workers']}", render.num(b["writing_s"]), render.num(a["seconds"]), render.num(b["seconds"]),
                     f"{r['speedup']}x", "yes" if r["identical_files"] else "**no**"])
    return render.section("The synthetic generator: one writer vs forked writers", intro,
                    ["scale", "entries", "files", "ASes", "routing s", "writing s (1)", "writers",
                     "writing s (forked)", "total s (1)", "total s (forked)", "speedup", "same files"],
                    rows, "rrrrrrrrrrrl")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=20, help="about N million entries (default 20)")
    ap.add_argument("--snapshots", type=int, default=5, help="daily snapshots (default 5)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args()
    params = common.synth_params(args.scale * 1_000_000, per=common.SYNTH_ALL, snapshots=args.snapshots)
    cpus = os.cpu_count() or 1
    work = common.OUT / f"generate-{args.scale}"
    serial = one(work / "one", params, 1)
    forked = one(work / "forked", params, cpus)
    shutil.rmtree(work, ignore_errors=True)
    same = serial.pop("digest") == forked.pop("digest")
    res = {"scale": args.scale, "synth": params, "entries": serial["entries"], "files": serial["files"],
           "one_writer": serial, "forked_writers": forked,
           "speedup": round(serial["seconds"] / forked["seconds"], 2),
           "writing_speedup": round(serial["writing_s"] / forked["writing_s"], 2),
           "identical_files": same, "machine": common.machine_facts(),
           "command": f"bench/synth.py --scale {args.scale} --snapshots {args.snapshots}"}
    common.write_json(res, common.OUT / f"generate-{args.scale}.json", stdout=args.json)
    if not args.json:
        print(f"{res['entries']:,} entries in {res['files']} files: one writer {serial['seconds']} s "
              f"(routing {serial['routing_s']} s), {cpus} forked writers {forked['seconds']} s "
              f"(routing {forked['routing_s']} s): {res['speedup']}x, writing {res['writing_speedup']}x; "
              f"identical files: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
