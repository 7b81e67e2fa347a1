#!/usr/bin/env python3
"""How much memory the DuckDB engine's compare needs: the whole job (pipeline/steps.py, as
`congruency compare` runs it) on one published month, once per memory limit, each in a
fresh process, spilling to a throwaway folder. Reports per limit: finished or the error's
first line, seconds, peak spill (temp files and the work database: pipeline/engines/duckdb.py
WORK_DB). DuckDB 2.0 does not spill all of a hash aggregate's
state, so below some limit a month fails instead of slowing down; this finds it.

    .venv/bin/python bench/memfloor.py --data-dir bench/out/endtoend-250-data --limits 1600MB,2000MB [--json]

Writes bench/out/memfloor-NAME.json (NAME: the data dir's folder name).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common, render  # noqa: E402
from bench.common import OUT  # noqa: E402

CHILD = """
import sys
sys.path.insert(0, {root!r})
from bgp_congruency.common.config import load
from bgp_congruency.pipeline.engines.duckdb import DuckDBEngine
from bgp_congruency.pipeline import job, partitions as P
cfg = load().with_overrides(data_dir={data!r}, engine="duckdb", duckdb_memory_limit={limit!r},
                            compare_partitions={k!r})  # as congruency compare runs: the VP groups too
eng = DuckDBEngine({limit!r}, {spill!r}, None)
store = eng.store({data!r})
src = store.month("routes", {month!r})
eng.open(store, src, {staged!r})
k = job.partitions(eng, cfg, src)
print("PARTITIONS", len(k) - 1, max(P.sizes(eng.vp_entries(), k)), flush=True)
eng.run(cfg.method, {staged!r}, None, lambda name: print("STEP", name, flush=True), partitions=k)
"""


def one(data: Path, month: str, limit: str, k: int | None = None) -> dict:
    """One run at `limit` in `k` VP partitions (None: as the rule chooses)."""
    work = tempfile.mkdtemp(prefix="memfloor-", dir=str(OUT))
    spill, staged = os.path.join(work, "spill"), os.path.join(work, "staged")
    os.makedirs(spill)
    code = CHILD.format(root=str(Path(__file__).resolve().parents[1]), data=str(data.resolve()), limit=limit,
                        spill=spill, staged=staged, month=month, k=k)
    peak, done = [0], threading.Event()

    rss = [0]
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def watch():
        while not done.wait(0.5):
            # spill files, and the partitions' aggregates in the staging folder's work database
            peak[0] = max(peak[0], common.du(spill) + common.du(os.path.join(staged, "_work")))
            rss[0] = max(rss[0], common.tree_rss(proc.pid, include_root=True))

    threading.Thread(target=watch, daemon=True).start()
    out, err = proc.communicate()
    proc.stdout, proc.stderr = out, err
    seconds = time.perf_counter() - t
    done.set()
    shutil.rmtree(work, ignore_errors=True)
    steps = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("STEP ")]
    error = next((line for line in reversed(proc.stderr.splitlines()) if "Error" in line), None)
    parts = next((line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("PARTITIONS ")), None)
    return {"limit": limit, "ok": proc.returncode == 0, "seconds": round(seconds, 1),
            "partitions": int(parts[0]) if parts else None, "largest_partition": int(parts[1]) if parts else None,
            "peak_rss_mib": rss[0] >> 20,
            "peak_spill_mib": peak[0] >> 20, "last_step": steps[-1] if steps else None,
            "error": None if proc.returncode == 0 else (error or proc.stderr.strip()[-300:])}


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/memfloor.py: the DuckDB compare at several memory limits, each in a fresh process."""
    intro = ["`bench/memfloor.py --data-dir D --limits ... [--partitions K,auto]`: the whole DuckDB compare job",
             "on one month, once per memory limit and number of VP partitions, each in a fresh process. DuckDB",
             "does not spill all of a hash aggregate's state, so one partition of a large month fails instead of",
             "spilling; the rule of pipeline/partitions.py (auto) splits the month into partitions of about",
             "200 bytes of the limit per entry, where they barely spill (until 2026-11-26: until one fit, 20 bytes).",
             "Peak RSS: the process tree, DuckDB's cap plus Python, Arrow and the Parquet writer."]
    rows = [[f"{r['rows']:,}", x["limit"], str(x.get("partitions") or "-"),
             f"{x['largest_partition']:,}" if x.get("largest_partition") else "-",
             "yes" if x["ok"] else f"**no** (in {x['last_step']})", render.num(x["seconds"]),
             f"{x['peak_rss_mib']:,} MiB" if x.get("peak_rss_mib") else "-", f"{x['peak_spill_mib']:,} MiB",
             f"`{r['command']}`" if i == 0 else ""]
            for r in runs for i, x in enumerate(r["runs"])]
    return render.section("DuckDB engine: the memory the compare needs", intro,
                    ["entries", "memory_limit", "partitions", "largest partition", "finished", "seconds", "peak RSS",
                     "peak spill", "command"], rows, "rrrrlrrrl")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="a data dir with the month ingested (its routes)")
    ap.add_argument("--month", default="2026-07", help="YYYY-MM (default 2026-07)")
    ap.add_argument("--limits", required=True, help="memory limits to try, comma-separated (e.g. 1600MB,2000MB)")
    ap.add_argument("--partitions", default="auto",
                    help="VP partitions to try at each limit, comma-separated: a number, or auto (the rule of "
                         "pipeline/partitions.py); default auto")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    from bench.compare import month_rows

    rows = month_rows(args.data_dir).get(args.month)
    if not rows:
        print(f"error: --data-dir {args.data_dir}: no ingested entries for {args.month}", file=sys.stderr)
        return 2
    runs = []
    for limit in args.limits.split(","):
        for k in args.partitions.split(","):
            r = one(args.data_dir, args.month, limit.strip(), None if k.strip() == "auto" else int(k))
            runs.append(r)
            if not args.json:
                print(f"{r['limit']:>8} K={r['partitions']}: {'ok' if r['ok'] else 'FAILED in ' + str(r['last_step'])} "
                      f"in {r['seconds']} s, peak RSS {r['peak_rss_mib']} MiB, peak spill {r['peak_spill_mib']} MiB"
                      + (f"; {r['error'][:160]}" if r["error"] else ""), flush=True)
    res = {"data_dir": str(args.data_dir), "month": args.month, "rows": rows, "runs": runs,
           "command": " ".join(["bench/memfloor.py", *(argv if argv is not None else sys.argv[1:])])}
    (OUT / f"memfloor-{args.data_dir.resolve().name}.json").write_text(json.dumps(res, indent=1) + "\n")
    if args.json:
        json.dump(res, sys.stdout, indent=1)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
