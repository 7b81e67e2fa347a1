#!/usr/bin/env python3
"""Where the compare job's time goes: one engine over one ingested month, timed step by step.

Runs the job's own steps (pipeline/steps.py) through the engine's own `run`, as `congruency
compare` does, into a throwaway staging folder (no publish; `--keep DIR` keeps the tables), and reports the wall time from each step's
start to the next step's start (also into bench/out/steps-NAME-ENGINE[-LIMIT].json, which
bench/run.py renders into RESULTS.md). A view costs nothing where it is defined: its work is timed
in the first step that materializes it (the next "work" or "table" step that reads it), so
views are listed with the step that pays for them. The same month, the same engine settings
as the job (DuckDB: the config's memory limit; Spark: local[*]).

    .venv/bin/python bench/steps.py --data-dir bench/out/synth-10/data --engine duckdb [--json]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common, render  # noqa: E402
from bench.common import OUT  # noqa: E402
from bgp_congruency.common.config import load  # noqa: E402
from bgp_congruency.pipeline import steps as S  # noqa: E402


def profile(data_dir: Path, month: str, engine_name: str, limit: str | None = None,
            partitions: int | None = None, keep: Path | None = None, threads: int | None = None) -> dict:
    """Per step, summed over the VP partitions; `limit` and `partitions` (DuckDB): the
    memory limit (default the config's) and the partitions (default the rule's); `keep`: a
    folder to move the staged tables to (else they are deleted)."""
    # The defaults `congruency compare` runs with (load(): the collectors' VP groups included).
    cfg = load().with_overrides(data_dir=str(data_dir), engine=engine_name, compare_partitions=partitions,
                                duckdb_threads=threads, duckdb_memory_limit=limit)
    if engine_name == "duckdb":
        from bgp_congruency.pipeline.engines.duckdb import DuckDBEngine

        engine, session_s = DuckDBEngine(cfg.duckdb_memory_limit, None, cfg.duckdb_threads), 0.0
    else:
        from bgp_congruency.pipeline.engines.spark import SparkEngine
        from bgp_congruency.pipeline.spark_session import session

        t = time.perf_counter()
        engine = SparkEngine(session(cfg.spark_master, cfg.spark_conf), own=True)
        session_s = time.perf_counter() - t
    store = engine.store(str(data_dir.resolve()))
    src = store.month("routes", month)
    staged = tempfile.mkdtemp(prefix="steps-", dir=str(data_dir))
    marks: list[tuple[str, float]] = []
    try:
        t0 = time.perf_counter()
        engine.open(store, src, staged)
        from bgp_congruency.pipeline import job

        k = job.partitions(engine, cfg, src)
        marks.append(("open (schema, counts)", t0))
        engine.run(cfg.method, staged, None, lambda name: marks.append((name.split(" (")[0], time.perf_counter())),
                   partitions=k)
        end = time.perf_counter()
        if keep is not None:
            shutil.rmtree(keep, ignore_errors=True)
            shutil.move(staged, keep)
    finally:
        engine.close()
        shutil.rmtree(staged, ignore_errors=True)
    kinds = {s.name: s.kind for s in S.MONTH_STEPS}
    rows, pending, at = [], [], {}
    for (name, t), (_, nxt) in zip(marks, marks[1:] + [("end", end)]):
        if kinds.get(name) == "view":
            pending.append(name)
            continue
        if name in at:  # the step again, in the next partition
            at[name]["seconds"] = round(at[name]["seconds"] + nxt - t, 2)
        else:
            at[name] = {"step": name, "kind": kinds.get(name, "-"), "views_paid": pending,
                        "seconds": round(nxt - t, 2)}
            rows.append(at[name])
        pending = []
    return {"engine": engine_name, "month": month, "data_dir": str(data_dir), "session_s": round(session_s, 1),
            "partitions": len(k) - 1, "memory_limit": cfg.duckdb_memory_limit if engine_name == "duckdb" else None,
            "total_s": round(end - marks[0][1], 2), "steps": rows}


def _rows(data_dir: Path, month: str) -> int:
    """The month's routes (common/routes.py: the rows the compare reads)."""
    import pyarrow.parquet as pq

    from bench.compare import route_files

    return sum(pq.ParquetFile(f).metadata.num_rows for f in route_files(data_dir, month))


# ------------------------------------------------------------------ its section of RESULTS.md
def section(profiles: list[dict]) -> list[str]:
    """bench/steps.py's profiles: the compare job step by step, engines side by side per month."""
    lines = ["## Compare job by step", "",
             "`bench/steps.py` (one fresh process per engine, nothing else running): wall seconds from each",
             "step's start to the next one's; a view is paid by the first step that reads it (listed in",
             "brackets). Spark's session start is not counted.", ""]
    by_data: dict[str, list[dict]] = {}
    for p in profiles:
        by_data.setdefault(p["data_dir"], []).append(p)
    for data, ps in by_data.items():
        ps = sorted(ps, key=lambda p: p["engine"], reverse=True)  # spark, duckdb
        names: list[str] = []
        for p in ps:
            names += [r["step"] for r in p["steps"] if r["step"] not in names]
        cell = {(j, r["step"]): r for j, p in enumerate(ps) for r in p["steps"]}  # a column per profile
        rows = []
        for n in names:
            paid = next((", ".join(c["views_paid"]) for j in range(len(ps))
                         if (c := cell.get((j, n))) and c["views_paid"]), "")
            rows.append([n + (f" (+ {paid})" if paid else ""),
                         *[render.num(cell[(j, n)]["seconds"]) if (j, n) in cell else "-" for j in range(len(ps))]])
        rows.append(["**total**", *[f"**{render.num(p['total_s'])}**" for p in ps]])
        heads = [p["engine"] + (f" {p['memory_limit']}, K={p.get('partitions', 1)}" if p.get("memory_limit") else "")
                 + " s" for p in ps]
        lines += [f"{data} ({ps[0].get('rows', 0):,} rows), month {ps[0]['month']}: "
                  + "; ".join(f"`{p.get('command', 'bench/steps.py')}` ({p.get('date', 'time not recorded')})"
                              for p in ps)
                  + ("; each column is its own run, at the time shown" if len(ps) > 1 and any("date" in p for p in ps)
                     else ""), "",
                  common.table(["step", *heads], rows, align="l" + "r" * len(ps)), ""]
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Time from one step's start to the next's; views are paid by "
                                        "the step that first reads them.")
    ap.add_argument("--data-dir", type=Path, required=True, help="a data dir with the month's routes (congruency ingest)")
    ap.add_argument("--month", default="2026-07", help="YYYY-MM (default 2026-07)")
    ap.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb")
    ap.add_argument("--limit", help="DuckDB: duckdb_memory_limit (default the config's)")
    ap.add_argument("--partitions", type=int, help="DuckDB: VP partitions (default pipeline/partitions.py's rule)")
    ap.add_argument("--threads", type=int, help="DuckDB: duckdb_threads (default all cores)")
    ap.add_argument("--keep", type=Path, metavar="DIR", help="keep the staged tables in DIR (<table>/*.parquet)")
    ap.add_argument("--json", action="store_true", help="print the profile as JSON")
    args = ap.parse_args(argv)
    from bgp_congruency.common import layout

    if not layout.routes_dir(args.data_dir, args.month).is_dir():
        print(f"error: --data-dir {args.data_dir}: no routes for {args.month} (congruency ingest first)", file=sys.stderr)
        return 2
    res = profile(args.data_dir, args.month, args.engine, args.limit, args.partitions, args.keep, args.threads)
    res["command"] = " ".join(["bench/steps.py", *(argv if argv is not None else sys.argv[1:])])
    res["date"] = common.now_utc()  # a table's columns may come from runs hours apart
    res["rows"] = _rows(args.data_dir, args.month)
    # bench/run.py renders every bench/out/steps-*.json into RESULTS.md.
    name = common.data_name(args.data_dir)
    # One profile per month, engine and explicit memory limit (a 2GB run keeps the 4GB one).
    limit = f"-{args.limit}" if args.limit else ""
    (OUT / f"steps-{name}-{args.engine}{limit}.json").write_text(json.dumps(res, indent=1) + "\n")
    if args.json:
        json.dump(res, sys.stdout, indent=1)
        print()
        return 0
    print(f"{res['engine']} on {res['data_dir']} {res['month']}: {res['total_s']} s"
          + (f" (session start {res['session_s']} s apart)" if res["session_s"] else ""))
    for r in res["steps"]:
        paid = f"  (+ views {', '.join(r['views_paid'])})" if r["views_paid"] else ""
        print(f"  {r['step']:<22} {r['kind']:<5} {r['seconds']:>7.2f} s{paid}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
