#!/usr/bin/env python3
"""The sensitivity run against one compare of the same month, side by side in this script.

The real 2026-07 route-views2 + route-views6 sample is ingested once; then, alternately,
one `compare` of the month (pipeline.job.compare_months, DuckDB engine, in process) and one
`sensitivity` run of all its variants (pipeline.sensitivity.run: the entries read once,
each distinct parameter set computed once, steps before the coverage threshold shared by
the variants that change only it). The target (issue 19): the sensitivity run under 10x
one compare. `--engine spark`: both on one local[*] session, as `congruency sensitivity
--engine spark` runs them (its start not timed).

    .venv/bin/python bench/sensitivity.py [--repeat 3] [--engine duckdb|spark] [--work DIR] [--json]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import load_now, machine_facts  # noqa: E402

MONTH = "2026-07"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, help="scratch folder (default: a temp dir)")
    ap.add_argument("--archive", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "archive")
    ap.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from bgp_congruency.common.config import load
    from bgp_congruency.ingest import run as ingest_run
    from bgp_congruency.pipeline import job, sensitivity

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-sensitivity-"))
    data = work / "data"
    shutil.rmtree(data, ignore_errors=True)
    cfg = load().with_overrides(archive_root=str(args.archive), data_dir=data, days=(30,), times=("14:00",),
                                engine=args.engine)
    cfg = replace(cfg, method=replace(cfg.method, min_coverage=0.0))
    out = ingest_run.run(cfg, MONTH)
    assert all(r.status == "ok" for r in out.rows), [r.error for r in out.rows]
    spark = None
    if args.engine == "spark":
        from bgp_congruency.pipeline import spark_session

        spark = spark_session.session(cfg.spark_master, cfg.spark_conf)
    compare_s, sens_s = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        [res] = job.compare_months(cfg, [MONTH], spark=spark)
        compare_s.append(time.perf_counter() - t0)
        assert res.error is None, res.error
        t0 = time.perf_counter()
        s = sensitivity.run(cfg, MONTH, spark=spark)
        sens_s.append(time.perf_counter() - t0)
    if spark is not None:
        spark.stop()
    result = {"month": MONTH, "engine": args.engine,
              "entries": sum((r.entries_v4 or 0) + (r.entries_v6 or 0) for r in out.rows),
              "variants": s["variants"], "computed": s["computed"], "cleanings": s.get("cleanings"),
              "paths_chosen": s.get("steps", {}).get("paths"),
              "compare_s": round(min(compare_s), 3),
              "sensitivity_s": round(min(sens_s), 3), "ratio": round(min(sens_s) / min(compare_s), 2),
              "target_ratio": 10, "load": load_now(), "machine": machine_facts()}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"real {MONTH} pair ({result['entries']:,} entries), {args.engine}: compare {result['compare_s']:.2f} s, "
              f"sensitivity ({result['variants']} variants, {result['computed']} computed, "
              f"{result['cleanings'] if result['cleanings'] is not None else '?'} cleanings, "
              f"representative paths chosen {result['paths_chosen'] if result['paths_chosen'] is not None else '?'} "
              "times) "
              f"{result['sensitivity_s']:.2f} s = {result['ratio']}x one compare (target < 10x); load {result['load']}")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
