#!/usr/bin/env python3
"""Would VP partitions make the Spark engine faster? The month's Spark compare as the engine
runs it (one partition), then the same job on each of K VP partitions of the month, one after
another in one SparkSession, the way a partitioned plan would run them (issue 29: "Spark
spills on its own and may keep K = 1 or use the partitions where they help its shuffles").

The K parts are data dirs of their own, each the month's rows whose peer ASN hashes to it
(common/vp_hash.py, the DuckDB engine's partitions), written by DuckDB under
bench/out/spark-partitions/. A part's month-level facts (dual-stacked destinations,
default-free denominators) are its own, not the month's, so its tables are not the month's:
this is a cost proxy, and a lower bound on a real partitioned plan, which would add the
month-level pass. Each variant is one child process (python + JVM, spark.driver.memory 4g);
seconds are from a ready SparkSession; peak RSS is the child tree's (the JVM's VmHWM too).

    .venv/bin/python bench/spark_partitions.py --data-dir bench/out/synth-10/data --partitions 2

It measures the month as it was stored before the routes (rib_entries/, every dump whole):
run it from a worktree of a commit before 2026-11-28 (bench/commits.worktree), on a data dir
that commit ingested. Its figures in RESULTS.md are that layout's.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench.common import mib  # noqa: E402

WORK = common.OUT / "spark-partitions"


def split(data: Path, month: str, k: int) -> list[Path]:
    """`data`'s month as k data dirs of its VP partitions (one Parquet file each)."""
    import duckdb

    from bgp_congruency.common import vp_hash

    src = data.resolve() / "rib_entries" / f"month={month}"
    out = []
    for i in range(k):
        d = WORK / f"part-{i}-of-{k}"
        shutil.rmtree(d, ignore_errors=True)
        (d / "rib_entries" / f"month={month}").mkdir(parents=True)
        duckdb.sql(f"COPY (SELECT * EXCLUDE (month) FROM read_parquet('{src}/**/*.parquet', hive_partitioning = true) "
                   f"WHERE {vp_hash.sql_partition('peer_asn', k)} = {i}) "
                   f"TO '{d}/rib_entries/month={month}/part.parquet' (FORMAT parquet, COMPRESSION zstd)")
        out.append(d)
    return out


def whole(data: Path, month: str) -> Path:
    """A data dir of its own with `data`'s month linked in (the job publishes there, not in `data`)."""
    d = WORK / "whole"
    shutil.rmtree(d, ignore_errors=True)
    (d / "rib_entries").mkdir(parents=True)
    (d / "rib_entries" / f"month={month}").symlink_to(data.resolve() / "rib_entries" / f"month={month}")
    return d


def child(dirs: list[str], month: str, min_coverage: float, result: str) -> int:
    """One SparkSession; the compare of each data dir in turn."""
    from dataclasses import replace

    from bgp_congruency.common.config import load
    from bgp_congruency.pipeline import job, spark_session

    cfg = load().with_overrides(engine="spark")
    spark = spark_session.session(cfg.spark_master, cfg.spark_conf)
    jvm = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    out = {"seconds": [], "errors": []}
    try:
        for d in dirs:
            c = replace(cfg.with_overrides(data_dir=d), method=replace(cfg.method, min_coverage=min_coverage))
            t = time.perf_counter()
            res = job.compare_month(c, month, spark=spark)
            out["seconds"].append(round(time.perf_counter() - t, 2))
            out["errors"].append(res.error)
        out["jvm_hwm"] = common.hwm_bytes(jvm)
    finally:
        spark.stop()
    common.write_result(result, out)
    return 0 if not any(out["errors"]) else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="a data dir with the month's rib_entries")
    ap.add_argument("--month", default=common.SYNTH_MONTH, help=f"YYYY-MM (default {common.SYNTH_MONTH})")
    ap.add_argument("--partitions", type=int, default=2, metavar="K", help="VP partitions (default 2)")
    ap.add_argument("--min-coverage", type=float, default=0.5,
                    help="default-free threshold (default 0.5, as bench/endtoend.py for synthetic months)")
    ap.add_argument("--timeout", type=float, default=3 * 3600, help="seconds per variant before it is killed")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(a.child, a.month, a.min_coverage, a.result)
    if a.partitions < 2:
        ap.error(f"--partitions: expected 2 or more, got {a.partitions}")
    if not (a.data_dir / "rib_entries" / f"month={a.month}").is_dir():
        print(f"error: --data-dir {a.data_dir}: no rib_entries for {a.month}", file=sys.stderr)
        return 2
    con = common.console()
    parts = split(a.data_dir, a.month, a.partitions)
    import pyarrow.parquet as pq

    sizes = [pq.ParquetFile(p / "rib_entries" / f"month={a.month}" / "part.parquet").metadata.num_rows for p in parts]
    variants = {"one partition (the engine today)": [whole(a.data_dir, a.month)],
                f"{a.partitions} VP partitions, one after another": parts}
    res = {"data_dir": str(a.data_dir), "month": a.month, "partitions": a.partitions, "part_entries": sizes,
           "entries": sum(sizes), "variants": {},
           "command": " ".join(["bench/spark_partitions.py", *(argv if argv is not None else sys.argv[1:])])}
    for name, dirs in variants.items():
        out = WORK / "result.json"
        cmd = common.py("spark_partitions.py", "--month", a.month, "--min-coverage", a.min_coverage,
                        "--result", out, "--data-dir", a.data_dir, "--child", *dirs)
        con.print(f"{name} (load {common.load_now()})")
        m = common.run_child(cmd, label=name, timeout_s=a.timeout, result_path=out)
        secs = m.result.get("seconds") or []
        res["variants"][name] = {"ok": m.rc == 0, "seconds": round(sum(secs), 2) if m.rc == 0 else None,
                                 "each_s": secs, "cpu_s": round(m.user_s + m.sys_s, 1), "process_s": round(m.wall_s, 1),
                                 "jvm_hwm_bytes": m.result.get("jvm_hwm"), "tree_peak_bytes": m.tree_peak,
                                 "errors": [e for e in m.result.get("errors") or [] if e]}
        v = res["variants"][name]
        con.print(f"  {v['seconds']} s {secs}, CPU {v['cpu_s']} s, JVM VmHWM {mib(v['jvm_hwm_bytes'])}, "
                  f"tree {mib(m.tree_peak)}" + ("" if m.rc == 0 else f" [red]FAILED rc={m.rc} {v['errors']}[/]"))
    one, many = (v["seconds"] for v in res["variants"].values())
    res["partitioned_vs_one"] = round(many / one, 3) if one and many else None
    (common.OUT / f"spark-partitions-{a.data_dir.resolve().name}-{a.partitions}.json").write_text(
        json.dumps(res, indent=1) + "\n")
    shutil.rmtree(WORK, ignore_errors=True)
    if a.json:
        json.dump(res, sys.stdout, indent=1)
        print()
    else:
        print(f"{res['entries']:,} entries; partitions {sizes}; partitioned / one = {res['partitioned_vs_one']}x")
    return 0 if all(v["ok"] for v in res["variants"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
