#!/usr/bin/env python3
"""The compare job on both engines, each next to its own scan floor, on the same data in the
same run: the Spark engine (local[*]) and the DuckDB engine (in-process), interleaved.

A floor reads the month's routes (common/routes.py) exactly as its engine's job does and
aggregates them while touching every column the job uses (so Parquet's footer counts can't
answer it); its rows are the entries the routes stand for (the bits of `seen`). Each variant runs in a fresh child process (python driver + its JVM for
Spark); a job's figure is the time from a ready engine (SparkSession up; DuckDB has no
start-up) to the month published (the session start is reported apart), rows/s is
entries per second, and the ratio is job time / its engine's floor time. The
DuckDB engine publishes into a data dir of its own (DIR-duckdb, the month's routes linked), and
its six tables are compared row for row with the Spark engine's (`check`). Peak RSS: the largest single process of the tree
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
from bgp_congruency.common.routes import ENTRIES_SQL  # noqa: E402  the entries a route stands for

REAL_MONTH = "2026-07"
ENTRIES_SPARK = "bit_count(seen) + coalesce(aggregate(seen_more, 0, (a, w) -> a + bit_count(w)), 0)"

#: The DuckDB floor over `{src}` (a read_parquet of the routes): DuckDB answers count(col) and
#: len(list) from validity masks and offsets alone, so it sums the path elements and measures
#: the strings: every value is decoded. First column: entries; second: ASNs.
DUCKDB_FLOOR = (f"SELECT sum({ENTRIES_SQL}), sum(len(as_path)), sum(list_sum(as_path)), max(length(peer_ip)), "
                "max(length(prefix)), max(copy), sum(vp_bucket), sum(peer_asn), sum(afi), count_if(has_as_set) FROM {src}")


def route_files(data_dir: Path, month: str) -> list[str]:
    from bgp_congruency.common import routes

    return [f for fs in routes.month_files(data_dir.resolve(), month).values() for f in fs]


def spark_routes(spark, data_dir: Path, month: str):
    """The month's routes as one DataFrame with each collector's name (a folder key, as the
    Spark engine reads them: pipeline/engines/spark.py)."""
    from functools import reduce

    from pyspark.sql import functions as F

    from bgp_congruency.common import routes

    parts = [spark.read.parquet(*fs).withColumn("collector", F.lit(c))
             for c, fs in sorted(routes.month_files(data_dir.resolve(), month).items())]
    return reduce(lambda x, y: x.unionByName(y), parts)


def spark_floor(spark, data_dir: Path, month: str):
    """The Spark floor: the month's routes read as the job reads them, every job column
    aggregated; a Row with `rows` (entries) and `asns`."""
    from pyspark.sql import functions as F

    routes = spark_routes(spark, data_dir, month)
    return routes.agg(
        F.sum(F.expr(ENTRIES_SPARK)).alias("rows"),
        F.sum(F.size("as_path")).alias("asns"),
        F.count("peer_ip"), F.count("prefix"), F.max("copy"), F.sum("vp_bucket"),
        F.sum("peer_asn"), F.sum("afi"), F.count_if("has_as_set"),
    ).collect()[0]


def _cfg(data_dir: Path, min_coverage: float | None, conf: dict | None = None, engine: str = "spark"):
    from dataclasses import replace

    from bgp_congruency.common.config import load

    cfg = load().with_overrides(data_dir=data_dir, spark_conf={**(conf or {})} or None, engine=engine)
    if min_coverage is not None:
        cfg = replace(cfg, method=replace(cfg.method, min_coverage=min_coverage))
    return cfg


def duckdb_data(data_dir: Path, month: str) -> Path:
    """DIR-duckdb with DIR's routes and manifest of the month linked in: where the DuckDB
    engine publishes."""
    d = data_dir.resolve().parent / f"{data_dir.resolve().name}-duckdb"
    for sub in ("routes", "manifest"):
        link = d / sub / f"month={month}"
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists() and (data_dir.resolve() / sub / f"month={month}").exists():
            link.symlink_to(data_dir.resolve() / sub / f"month={month}")
    return d


def child(kind: str, data_dir: Path, month: str, min_coverage: float | None, result: str | None) -> int:
    """Child mode: start the engine, run the job or the floor, report, stop."""
    if kind.startswith("duckdb"):
        return child_duckdb(kind, data_dir, month, min_coverage, result)
    t0 = time.perf_counter()
    from bgp_congruency.pipeline import job
    from bgp_congruency.pipeline import spark_session as sparkmod

    cfg = _cfg(data_dir, min_coverage)
    spark = sparkmod.session(cfg.spark_master, cfg.spark_conf)
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    t1 = time.perf_counter()
    out: dict = {"kind": kind, "session_s": t1 - t0, "jvm_pid": jvm_pid,
                 "parallelism": spark.sparkContext.defaultParallelism}
    try:
        if kind == "job":
            res = job.compare_month(cfg, month, spark=spark)
            out["error"] = res.error
            out["summary"] = res.summary
            t2 = time.perf_counter()
            from pyspark.sql import functions as F

            from bgp_congruency.lake import published

            cs = spark.read.parquet(*published.files(data_dir.resolve(), ["cleaning_stats"], month)["cleaning_stats"])
            out["rows"] = cs.agg(F.sum("entries")).collect()[0][0]
        else:
            row = spark_floor(spark, data_dir, month)
            t2 = time.perf_counter()
            out["rows"], out["asns"] = row["rows"], row["asns"]
        out["work_s"] = t2 - t1
        out["jvm_hwm"] = common.hwm_bytes(jvm_pid)
        out["python_hwm"] = common.hwm_bytes()
    finally:
        spark.stop()
    common.write_result(result, out)
    return 0 if not out.get("error") else 1


def child_duckdb(kind: str, data_dir: Path, month: str, min_coverage: float | None, result: str | None) -> int:
    """The DuckDB engine's job, or its floor: the same files, the same settings (memory
    limit, threads) and the same columns, every value decoded, in one query."""
    from bgp_congruency.common.duck import read_parquet
    from bgp_congruency.pipeline import job

    out: dict = {"kind": kind, "session_s": 0.0}
    t1 = time.perf_counter()
    if kind == "duckdb-job":
        cfg = _cfg(duckdb_data(data_dir, month), min_coverage, engine="duckdb")
        [res] = job.compare_months(cfg, [month])
        out["error"], out["summary"] = res.error, res.summary
        t2 = time.perf_counter()
        from bgp_congruency.lake import published

        if not res.error:
            out["rows"] = sum(published.read(cfg.data_dir, "cleaning_stats", month)["entries"].to_pylist())
    else:
        from bgp_congruency.common import duck

        cfg = _cfg(data_dir, min_coverage, engine="duckdb")
        con = duck.connect(cfg)  # the engine's memory and thread caps
        row = con.execute(DUCKDB_FLOOR.format(src=read_parquet(route_files(data_dir, month)))).fetchone()
        t2 = time.perf_counter()
        out["rows"], out["asns"] = row[0], int(row[1])
    out["work_s"] = t2 - t1
    out["python_hwm"] = common.hwm_bytes()
    out["threads"] = cfg.duckdb_threads
    common.write_result(result, out)
    return 0 if not out.get("error") else 1


def check_engines(data_dir: Path, month: str) -> dict:
    """The six tables of the Spark run (DIR) and the DuckDB run (DIR-duckdb), row for row
    (multiset, both directions)."""
    import duckdb

    from bgp_congruency.common.duck import read_parquet
    from bgp_congruency.common.tables import TABLES, TRANSITIONS
    from bgp_congruency.lake import published
    from bgp_congruency.pipeline.steps import empty_select

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    out = {"identical": True, "tables": {}}
    for t in ("cleaning_stats", "paths", "vps", "pairs", "month_summary", "transitions"):
        a, b = (read_parquet(published.files(d, [t], month)[t]) if published.files(d, [t], month)[t] else
                f"({empty_select(TABLES[t] if t in TABLES else TRANSITIONS, 'duckdb')})"
                for d in (data_dir.resolve(), duckdb_data(data_dir, month)))
        cols = ", ".join(c for c, *_ in con.execute(f"DESCRIBE SELECT * FROM {a}").fetchall() if c != "month")
        n_a, n_b = (con.execute(f"SELECT count(*) FROM {x}").fetchone()[0] for x in (a, b))
        diff = con.execute(f"SELECT (SELECT count(*) FROM (SELECT {cols} FROM {a} EXCEPT ALL SELECT {cols} FROM {b})) + "
                           f"(SELECT count(*) FROM (SELECT {cols} FROM {b} EXCEPT ALL SELECT {cols} FROM {a}))").fetchone()[0]
        out["tables"][t] = {"spark_rows": n_a, "duckdb_rows": n_b, "differing_rows": diff}
        out["identical"] &= diff == 0 and n_a == n_b
    return out


def ingest_real(data_dir: Path, con) -> None:
    cmd = [sys.executable, "-m", "bgp_congruency.cli.main", "ingest", "--month", REAL_MONTH, "--archive-root",
           str(common.ARCHIVE), "--days", "30", "--times", "14:00", "--backend", "bgpdump",
           "--data-dir", str(data_dir)]
    con.print("ingesting the real 2026-07 pair: " + " ".join(cmd[2:]))
    r = subprocess.run(cmd, cwd=common.ROOT, env={**__import__("os").environ, "PYTHONPATH": common.pythonpath()},
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
    cmd = [sys.executable, "-m", "bgp_congruency.cli.main", "ingest", "--month", common.SYNTH_MONTH, "--archive-root",
           str(root / "archive"), "--days", f"1-{params['snapshots_per_month']}", "--times", "00:00",
           "--collectors", ",".join(sorted({f["collector"] for f in listing["files"]})),
           "--backend", "bgpdump", "--data-dir", str(data)]
    con.print("ingesting: " + " ".join(cmd[2:]))
    r = subprocess.run(cmd, cwd=common.ROOT, env={**__import__("os").environ, "PYTHONPATH": common.pythonpath()},
                       stdout=subprocess.DEVNULL, timeout=7200)
    if r.returncode != 0:
        raise SystemExit(f"ingest failed (exit {r.returncode})")
    return data


def month_rows(data_dir: Path) -> dict[str, int]:
    """Entries per ingested month (the manifest's decoded counts of the dumps ingested)."""
    import pyarrow.parquet as pq

    out = {}
    for m in sorted((data_dir / "manifest").glob("month=*")):
        rows = pq.read_table(m).to_pylist()
        out[m.name.split("=", 1)[1]] = sum((r["entries_v4"] or 0) + (r["entries_v6"] or 0)
                                           for r in rows if r["status"] == "ok")
    return out


VARIANTS = {"spark job": "job", "spark scan floor": "scan", "duckdb job": "duckdb-job",
            "duckdb scan floor": "duckdb-scan"}
FLOOR = {"spark job": "spark scan floor", "duckdb job": "duckdb scan floor"}


def measure(data_dir: Path, month: str, min_coverage: float | None, *, repeat: int, con,
            timeout_s: float = 7200, engines=("spark", "duckdb")) -> dict:
    work = common.OUT / "compare-work"
    work.mkdir(parents=True, exist_ok=True)
    kinds = {n: k for n, k in VARIANTS.items() if n.split()[0] in engines}
    runs: dict[str, list] = {n: [] for n in kinds}
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
    rows = next((v["rows"] for v in out.values() if v["rows"]), None)
    for name, v in out.items():
        floor = out.get(FLOOR.get(name, name), {}).get("work_s")
        v["rows_per_s"] = round(rows / v["work_s"]) if v["work_s"] and rows else None
        v["time_vs_floor"] = round(v["work_s"] / floor, 2) if v["work_s"] and floor else None
    res = {"data_dir": str(data_dir), "month": month, "rows": rows, "min_coverage": min_coverage,
           "repeat": repeat, "variants": out}
    if out.get("spark job", {}).get("ok") and out.get("duckdb job", {}).get("ok"):
        res["check"] = check_engines(data_dir, month)
        c = res["check"]
        con.print(("[green]" if c["identical"] else "[red]") + "Spark vs DuckDB, six tables: "
                  + ("identical" if c["identical"] else "DIFFERENT ") + " "
                  + ", ".join(f"{t} {v['spark_rows']:,}" for t, v in c["tables"].items()) + "[/]")
    return res


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
    g.add_argument("--data-dir", type=Path, help="an ingested data dir (the job publishes its tables there)")
    g.add_argument("--synth-entries", type=int, metavar="N",
                   help="a generated archive of about N entries, ingested into bench/out/synth-N/data")
    ap.add_argument("--month", help="YYYY-MM (default: the month with the most entries)")
    ap.add_argument("--min-coverage", type=float,
                    help="default-free threshold (default 0 for the real pair, else the config's 0.9)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per variant, best reported (default 2)")
    ap.add_argument("--timeout", type=float, default=7200, help="seconds per run before it is killed")
    ap.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    ap.add_argument("--engines", default="spark,duckdb", help="comma-separated: spark, duckdb (default both)")
    ap.add_argument("--child", choices=list(VARIANTS.values()), help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(a.child, a.data_dir, a.month, a.min_coverage, a.result)
    con = common.console()
    from bgp_congruency.pipeline.spark_session import java_problem

    if "spark" in a.engines and (problem := java_problem()):
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
        con.print(f"[red]{data}: no ingested month[/]")
        return 2
    month = a.month or max(counts, key=counts.get)
    con.print(f"compare bench: {data} month {month} ({counts.get(month, 0):,} entries), "
              f"min_coverage {min_cov if min_cov is not None else 'config default'}, repeat {a.repeat}")
    engines = tuple(e.strip() for e in a.engines.split(",") if e.strip())
    res = measure(data, month, min_cov, repeat=a.repeat, con=con, timeout_s=a.timeout, engines=engines)
    res["command"] = " ".join(["bench/compare.py", *(argv if argv is not None else sys.argv[1:])])
    tag = "real" if not (a.data_dir or a.synth_entries) else f"synth-{a.synth_entries}" if a.synth_entries \
        else re.sub(r"[^A-Za-z0-9_.-]+", "_", str(a.data_dir.resolve()).strip("/"))
    common.write_json(res, common.OUT / f"compare-{tag}-{month}.json", stdout=a.json)
    con.print(f"\n{res['rows']:,} rows; best of {a.repeat} (time after the SparkSession is up; peak RSS = largest over runs)")
    con.print(render(res))
    j = res["variants"].get("spark job")
    if j:
        con.print(f"peak RSS check: wait4 max-proc figure {'includes' if j['maxrss_includes_jvm'] else 'DOES NOT include'} "
                  f"the JVM (JVM VmHWM {mib(j['jvm_hwm_bytes'])}, python {mib(j['python_hwm_bytes'])})")
    shutil.rmtree(common.OUT / "compare-work", ignore_errors=True)
    return 0 if all(v["ok"] for v in res["variants"].values()) and res.get("check", {}).get("identical", True) else 1


if __name__ == "__main__":
    sys.exit(main())
