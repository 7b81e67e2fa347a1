#!/usr/bin/env python3
"""The Spark congruency job (pipeline.job.run_month, local[*]) next to a Spark scan floor
on the same data and session config, in the same run.

The floor reads the month's rib_entries Parquet exactly as the job does and counts its
rows while touching every column the job uses (so Parquet's footer counts can't answer
it). Each variant runs in a fresh child process (python driver + its JVM); the job's
figure is the time from a ready SparkSession to the month published (the session start
is reported apart, as it is the same for both), rows/s is rib_entries rows per second,
and the ratio is job time / floor time. Peak RSS: the largest single process of the tree
(the JVM, in practice: checked against the JVM's own VmHWM from /proc) and the sampled
sum over the tree (python + JVM).

Without --data-dir / --synth-entries, the real 2026-07 pair (route-views2 + route-views6,
2026-07-30 14:00) is ingested first into bench/out/data with the bgpdump backend and
min_coverage defaults to 0.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench.common import mib, rate  # noqa: E402

REAL_MONTH = "2026-07"
JOB_COLUMNS = ["collector", "snapshot_time", "peer_asn", "peer_ip", "afi", "prefix", "as_path", "has_as_set"]


def _cfg(data_dir: Path, min_coverage: float | None, conf: dict | None = None):
    from dataclasses import replace

    from common.config import load

    cfg = load().with_overrides(data_dir=data_dir, spark_conf={**(conf or {})} or None)
    if min_coverage is not None:
        cfg = replace(cfg, method=replace(cfg.method, min_coverage=min_coverage))
    return cfg


def child(kind: str, data_dir: Path, month: str, min_coverage: float | None, result: str | None) -> int:
    """Child mode: start a session, run the job or the floor, report, stop."""
    t0 = time.perf_counter()
    from pipeline import job, spark as sparkmod

    cfg = _cfg(data_dir, min_coverage)
    spark = sparkmod.session(cfg.spark_master, cfg.spark_conf)
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    t1 = time.perf_counter()
    out: dict = {"kind": kind, "session_s": t1 - t0, "jvm_pid": jvm_pid,
                 "parallelism": spark.sparkContext.defaultParallelism}
    try:
        if kind == "job":
            res = job.run_month(spark, cfg, month)
            out["error"] = res.error
            out["summary"] = res.summary
            t2 = time.perf_counter()
            from pyspark.sql import functions as F

            cs = spark.read.parquet(str(data_dir.resolve() / "cleaning_stats" / f"month={month}"))
            out["rows"] = cs.agg(F.sum("entries")).collect()[0][0]
        else:
            from pyspark.sql import functions as F

            root = str(data_dir.resolve() / "rib_entries")
            entries = spark.read.option("basePath", root).parquet(f"{root}/month={month}").select(*JOB_COLUMNS)
            row = entries.agg(
                F.count(F.lit(1)).alias("rows"),
                F.sum(F.size("as_path")).alias("asns"),
                F.count("peer_ip"), F.count("prefix"), F.count("collector"),
                F.max("snapshot_time"), F.sum("peer_asn"), F.sum("afi"), F.count_if("has_as_set"),
            ).collect()[0]
            t2 = time.perf_counter()
            out["rows"], out["asns"] = row["rows"], row["asns"]
        out["work_s"] = t2 - t1
        out["jvm_hwm"] = common.hwm_bytes(jvm_pid)
        out["python_hwm"] = common.hwm_bytes()
    finally:
        spark.stop()
    common.write_result(result, out)
    return 0 if not out.get("error") else 1


def ingest_real(data_dir: Path, con) -> None:
    cmd = [sys.executable, "-m", "cli.main", "ingest", "--month", REAL_MONTH, "--archive-root",
           str(common.ARCHIVE), "--days", "30", "--times", "14:00", "--backend", "bgpdump",
           "--data-dir", str(data_dir)]
    con.print("ingesting the real 2026-07 pair: " + " ".join(cmd[2:]))
    r = subprocess.run(cmd, cwd=common.ROOT, env={**__import__("os").environ, "PYTHONPATH": str(common.ROOT)},
                       stdout=subprocess.DEVNULL, timeout=1800)
    if r.returncode != 0:
        raise SystemExit(f"ingest failed (exit {r.returncode})")


def synth_data(entries: int, con) -> Path:
    """Generate (cached) a synthetic archive of about `entries` entries and ingest it
    (bgpdump backend, production CLI) into bench/out/synth-N/data."""
    root = common.OUT / f"synth-{entries}"
    params = common.synth_params(entries, per=common.SYNTH_ALL, snapshots=2)
    listing = common.synth_archive(root / "archive", params, con)
    data = root / "data"
    cmd = [sys.executable, "-m", "cli.main", "ingest", "--month", common.SYNTH_MONTH, "--archive-root",
           str(root / "archive"), "--days", f"1-{params['snapshots_per_month']}", "--times", "00:00",
           "--collectors", ",".join(sorted({f["collector"] for f in listing["files"]})),
           "--backend", "bgpdump", "--data-dir", str(data)]
    con.print("ingesting: " + " ".join(cmd[2:]))
    r = subprocess.run(cmd, cwd=common.ROOT, env={**__import__("os").environ, "PYTHONPATH": str(common.ROOT)},
                       stdout=subprocess.DEVNULL, timeout=7200)
    if r.returncode != 0:
        raise SystemExit(f"ingest failed (exit {r.returncode})")
    return data


def month_rows(data_dir: Path) -> dict[str, int]:
    import pyarrow.parquet as pq

    out = {}
    for m in sorted((data_dir / "rib_entries").glob("month=*")):
        out[m.name.split("=", 1)[1]] = sum(pq.ParquetFile(f).metadata.num_rows
                                           for f in m.glob("*/*.parquet"))
    return out


def measure(data_dir: Path, month: str, min_coverage: float | None, *, repeat: int, con,
            timeout_s: float = 7200) -> dict:
    work = common.OUT / "compare-work"
    work.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list] = {"spark job": [], "spark scan floor": []}
    kinds = {"spark job": "job", "spark scan floor": "scan"}
    for r in range(max(1, repeat)):
        for name, kind in kinds.items():
            if runs[name] and runs[name][-1].rc != 0:
                continue
            res = work / f"result-{kind}.json"
            cmd = common.py("compare.py", "--child", kind, "--data-dir", data_dir.resolve(), "--month", month,
                            "--result", res, *(["--min-coverage", min_coverage] if min_coverage is not None else []))
            con.print(f"[dim]run {r + 1}/{repeat}[/] {name} (load {common.load_now()})")
            m = common.run_child(cmd, label=name, timeout_s=timeout_s, result_path=res)
            w = m.result.get("work_s")
            con.print(f"  work {w and round(w, 2)}s (session {m.result.get('session_s', 0):.1f}s), process "
                      f"{m.wall_s:.1f}s, maxrss {mib(m.maxrss)} (JVM HWM {mib(m.result.get('jvm_hwm'))}), "
                      f"tree {mib(m.tree_peak)}" + ("" if m.rc == 0 else f" [red]FAILED rc={m.rc} "
                                                     f"{m.result.get('error') or ''}[/]"))
            runs[name].append(m)
    out = {}
    for name, ms in runs.items():
        b = common.best(ms, key=lambda m: m.result.get("work_s") or float("inf"))
        ok = b.rc == 0 and b.result.get("work_s")
        jvm = max((m.result.get("jvm_hwm") or 0) for m in ms)
        out[name] = {
            "ok": bool(ok), "work_s": round(b.result["work_s"], 3) if ok else None,
            "session_s": round(b.result.get("session_s", 0), 2), "process_s": b.wall_s,
            "rows": b.result.get("rows"), "maxrss_bytes": b.maxrss, "tree_peak_bytes": b.tree_peak,
            "jvm_hwm_bytes": jvm, "python_hwm_bytes": max((m.result.get("python_hwm") or 0) for m in ms),
            # the kernel's counters lag a few pages behind VmHWM, hence the 0.1% slack
            "maxrss_includes_jvm": jvm > 0 and b.maxrss >= 0.999 * jvm, "cpu_s": round(b.user_s + b.sys_s, 1),
            "runs_work_s": [round(m.result.get("work_s") or 0, 3) for m in ms],
            "parallelism": b.result.get("parallelism"), "error": b.result.get("error"),
            "summary": b.result.get("summary"),
        }
    rows = out["spark scan floor"]["rows"] or out["spark job"]["rows"]
    floor = out["spark scan floor"]["work_s"]
    for v in out.values():
        v["rows_per_s"] = round(rows / v["work_s"]) if v["work_s"] and rows else None
        v["time_vs_floor"] = round(v["work_s"] / floor, 2) if v["work_s"] and floor else None
    return {"data_dir": str(data_dir), "month": month, "rows": rows, "min_coverage": min_coverage,
            "repeat": repeat, "variants": out}


def render(res: dict) -> str:
    rows = []
    for name, v in res["variants"].items():
        rows.append([name, f"{v['work_s']:.2f}" if v["work_s"] else "failed", rate(v["rows_per_s"]),
                     f"{v['time_vs_floor']:.2f}x" if v["time_vs_floor"] else "-", f"{v['session_s']:.1f}",
                     mib(v["maxrss_bytes"]), mib(v["jvm_hwm_bytes"]), mib(v["python_hwm_bytes"]),
                     mib(v["tree_peak_bytes"])])
    return common.table(["variant", "seconds (best)", "rows/s", "time vs floor", "session start s",
                         "peak RSS (max proc)", "JVM VmHWM", "python VmHWM", "peak RSS (tree sum)"], rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--data-dir", type=Path, help="a data dir with rib_entries/ (the job publishes its tables there)")
    g.add_argument("--synth-entries", type=int, metavar="N",
                   help="a generated archive of about N entries, ingested into bench/out/synth-N/data")
    ap.add_argument("--month", help="YYYY-MM (default: the month with the most rib_entries rows)")
    ap.add_argument("--min-coverage", type=float,
                    help="default-free threshold (default 0 for the real pair, else the config's 0.9)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per variant, best reported (default 2)")
    ap.add_argument("--timeout", type=float, default=7200, help="seconds per run before it is killed")
    ap.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    ap.add_argument("--child", choices=["job", "scan"], help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(a.child, a.data_dir, a.month, a.min_coverage, a.result)
    con = common.console()
    from pipeline.spark import java_problem

    if problem := java_problem():
        con.print(f"[red]{problem}[/]")
        return 2
    min_cov = a.min_coverage
    if a.data_dir:
        data = a.data_dir
    elif a.synth_entries:
        data = synth_data(a.synth_entries, con)
    else:
        data = common.OUT / "data"
        ingest_real(data, con)
        min_cov = 0.0 if min_cov is None else min_cov
    counts = month_rows(data)
    if not counts:
        con.print(f"[red]{data}/rib_entries: no data[/]")
        return 2
    month = a.month or max(counts, key=counts.get)
    con.print(f"compare bench: {data} month {month} ({counts.get(month, 0):,} rib_entries rows), "
              f"min_coverage {min_cov if min_cov is not None else 'config default'}, repeat {a.repeat}")
    res = measure(data, month, min_cov, repeat=a.repeat, con=con, timeout_s=a.timeout)
    res["command"] = " ".join(["bench/compare.py", *(argv if argv is not None else sys.argv[1:])])
    tag = "real" if not (a.data_dir or a.synth_entries) else f"synth-{a.synth_entries}" if a.synth_entries \
        else re.sub(r"[^A-Za-z0-9_.-]+", "_", str(a.data_dir.resolve()).strip("/"))
    common.write_json(res, common.OUT / f"compare-{tag}-{month}.json", stdout=a.json)
    con.print(f"\n{res['rows']:,} rows; best of {a.repeat} (time after the SparkSession is up; peak RSS = largest over runs)")
    con.print(render(res))
    j = res["variants"]["spark job"]
    con.print(f"peak RSS check: wait4 max-proc figure {'includes' if j['maxrss_includes_jvm'] else 'DOES NOT include'} "
              f"the JVM (JVM VmHWM {mib(j['jvm_hwm_bytes'])}, python {mib(j['python_hwm_bytes'])})")
    shutil.rmtree(common.OUT / "compare-work", ignore_errors=True)
    return 0 if all(v["ok"] for v in res["variants"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
