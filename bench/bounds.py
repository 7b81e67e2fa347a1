#!/usr/bin/env python3
"""Lower bounds of the compare job on each engine: what the parts every plan of the method
must contain cost on their own, next to the engine's scan floor, in one process, on the
same month's Parquet.

The method (congruency/METHOD.md, step 4) keeps, for each (VP, AFI, cleaned path), the
number of distinct prefixes among its observations, and publishes one `paths` row per
representative path. So any plan, whatever its order of steps, must (a) read the job's
columns (the floor), (b) group the month's rows by VP, AFI and path with a distinct count
of prefixes, and (c) write a table of about as many rows as there are path groups. This
measures (a), (b) with the cheapest key an engine offers (a 64-bit hash of the raw path, no
cleaning, so even lighter than the method's), the same without the distinct count, and (c)
as a table of the same row count and shape, and prints each as a multiple of the floor.
It says how far below the job a plan on that engine can go, not what the job costs. The rows
are the month's routes (common/routes.py), each standing for the entries of its snapshots: a
group's counts here are routes, the bound's work is the same.

Best of --repeat runs per query, queries interleaved. The floors are bench/compare.py's;
Spark is timed in one warm local[*] session, its parts written to a no-op sink (the bench's
Spark floor, in a fresh session, is slower).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench.compare import DUCKDB_FLOOR, route_files, spark_floor, spark_routes  # noqa: E402

DUCKDB = {
    "floor": DUCKDB_FLOOR,
    "group by path hash": "SELECT count(*) FROM (SELECT collector, peer_asn, afi, hash(as_path), count(*) "
                          "FROM {src} GROUP BY ALL)",
    # two plain aggregations, (group, prefix) then group: 1.2 s at scale 10 against 2.0 s for
    # count(DISTINCT prefix), DuckDB's fastest form before (per_path does the same)
    "... + distinct prefixes": "SELECT count(*) FROM (SELECT collector, peer_asn, afi, h, sum(n), count(*) FROM ("
                               "SELECT collector, peer_asn, afi, hash(as_path) AS h, prefix, count(*) AS n "
                               "FROM {src} GROUP BY ALL) GROUP BY ALL)",
}
SPARK = {  # each written to a no-op sink; the floor is bench/compare.py's
    "group by path hash": "SELECT collector, peer_asn, afi, xxhash64(as_path), count(*) FROM entries GROUP BY ALL",
    "... + distinct prefixes": "SELECT collector, peer_asn, afi, h, count(*) FROM (SELECT DISTINCT collector, "
                               "peer_asn, afi, xxhash64(as_path) AS h, prefix FROM entries) GROUP BY ALL",
}
#: (c): one row per (collector, peer, AFI, path) group, shaped like `paths`.
GROUPS = ("SELECT collector AS vp_group, peer_asn AS vp_asn, afi, as_path AS path, count(*) AS observations, "
          "count(*) AS path_observations, 1.0 AS stability, count(*) AS prefixes, count(*) AS snapshots "
          "FROM {src} GROUP BY collector, peer_asn, afi, as_path")


def duckdb_bounds(src: list[str], repeat: int, work: Path) -> dict:
    from bgp_congruency.common import duck
    from bgp_congruency.common.config import Config
    from bgp_congruency.common.duck import quote, read_parquet

    con = duck.connect(Config())  # the engine's memory and thread caps
    con.execute(f"CREATE TABLE groups AS {GROUPS.format(src=read_parquet(src, hive=True))}")
    out_file = work / "paths-like.parquet"
    queries = {k: v.format(src=read_parquet(src, hive=True)) for k, v in DUCKDB.items()}
    queries["write a paths-like table"] = f"COPY groups TO {quote(out_file)} (FORMAT parquet, COMPRESSION zstd)"
    best = {k: float("inf") for k in queries}
    for _ in range(repeat):
        for name, sql in queries.items():
            t = time.perf_counter()
            con.execute(sql).fetchall()
            best[name] = min(best[name], time.perf_counter() - t)
    n = con.execute("SELECT count(*) FROM groups").fetchone()[0]
    con.close()
    return {"seconds": best, "groups": n}


def spark_bounds(data_dir: Path, month: str, repeat: int, work: Path) -> dict:
    from bgp_congruency.pipeline import spark_session as sparkmod

    spark = sparkmod.session("local[*]")
    try:
        spark_routes(spark, data_dir, month).createOrReplaceTempView("entries")
        groups = work / "spark-groups"
        spark.sql(GROUPS.format(src="entries")).write.mode("overwrite").parquet(str(groups))
        best = {k: float("inf") for k in ["floor", *SPARK, "write a paths-like table"]}
        for _ in range(repeat):
            t = time.perf_counter()
            spark_floor(spark, data_dir, month)
            best["floor"] = min(best["floor"], time.perf_counter() - t)
            for name, sql in SPARK.items():
                t = time.perf_counter()
                spark.sql(sql).write.format("noop").mode("overwrite").save()
                best[name] = min(best[name], time.perf_counter() - t)
            t = time.perf_counter()
            spark.read.parquet(str(groups)).write.mode("overwrite").parquet(str(work / "spark-groups-copy"))
            best["write a paths-like table"] = min(best["write a paths-like table"], time.perf_counter() - t)
        n = spark.read.parquet(str(groups)).count()
    finally:
        spark.stop()
    return {"seconds": best, "groups": n, "note": "write = read + write of the staged groups"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path, default=common.OUT / "synth-10" / "data",
                   help="an ingested data dir (default: bench/run.py's scale-10 month)")
    p.add_argument("--month", default=common.SYNTH_MONTH, help=f"YYYY-MM (default {common.SYNTH_MONTH})")
    p.add_argument("--engines", default="duckdb,spark", help="comma-separated subset of duckdb,spark")
    p.add_argument("--repeat", type=int, default=3, help="runs per query, the best is reported (default 3)")
    p.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    a = p.parse_args(argv)
    src = route_files(a.data_dir, a.month)
    if not src:
        p.error(f"--data-dir: {a.data_dir} has no routes of {a.month} (run bench/run.py --scale 10 --stages ingest first)")
    con = common.console()
    work = common.OUT / "bounds-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    res: dict = {"data": str(a.data_dir), "engines": {}}
    for engine in [e.strip() for e in a.engines.split(",") if e.strip()]:
        con.print(f"[bold]{engine}[/]")
        r = (duckdb_bounds(src, a.repeat, work) if engine == "duckdb"
             else spark_bounds(a.data_dir, a.month, a.repeat, work))
        floor = r["seconds"]["floor"]
        r["vs_floor"] = {k: round(v / floor, 2) for k, v in r["seconds"].items()}
        r["seconds"] = {k: round(v, 3) for k, v in r["seconds"].items()}
        res["engines"][engine] = r
        con.print(common.table(["part", "seconds", "x floor"],
                               [[k, f"{v:.2f}", f"{r['vs_floor'][k]:.2f}x"] for k, v in r["seconds"].items()]))
        con.print(f"{r['groups']:,} path groups")
    shutil.rmtree(work, ignore_errors=True)
    common.write_json(res, common.OUT / "bounds.json", stdout=a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
