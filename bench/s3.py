#!/usr/bin/env python3
"""The compare with its data dir on S3 against local disk, same engine, side by side in one run
(issue 57's speed target: at most 1.5x on DuckDB; Spark's ratio reported).

One ingested month (a data dir of routes and manifest, e.g. bench/routes.py's) is copied to a
local data dir and to a bucket of a local S3 server (SeaweedFS on 127.0.0.1, as the tests
start it), each with a PostgreSQL catalog of its own (the S3 one needs it; the local one gets
one too, so only the storage differs). Then, per round, `congruency compare` of each, in turn,
in a fresh process, timed whole (wall). Both publish the same tables (checked on the last
round's month_summary and pairs).

    .venv/bin/python bench/s3.py --data-dir bench/out/routes/64f0a0451f64/data --month 2026-07 [--repeat 2]
    .venv/bin/python bench/s3.py ... --engine spark      (local mode; S3 through S3A: make s3a-jars)

Writes bench/out/s3-compare.json (s3-compare-spark.json).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import render  # noqa: E402
from bench.common import OUT, load_now, machine_facts, now_utc, write_json  # noqa: E402


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/s3.py: the compare with its data dir on a local S3 server against local disk, per engine."""
    intro = ["`bench/s3.py --data-dir D --month M [--engine spark]`: one ingested month copied to a local data dir and",
             "to a bucket of a SeaweedFS server on 127.0.0.1, each with a PostgreSQL catalog of its own; `congruency",
             "compare` (hints and publish included; Spark in local mode, reaching S3 through S3A) of each in turn, a",
             "fresh process per run, timed whole. Issue 57's target: the S3 run at most 1.5x the local one on DuckDB;",
             "Spark's ratio reported."]
    rows = [[f"`{Path(r['source']).parent.name}`", r.get("engine", "duckdb"), f"{r['entries']:,}", r["limit"],
             render.num(r["best"]["local"]),
             render.num(r["best"]["s3"]), render.ratio(r["best_ratio"]), "identical" if r["same_tables"] else "DIFFERENT",
             f"`{r['command']}` ({r['date']}, load after {r['load_after']})"] for r in runs]
    return render.section("The data dir on S3 (bench/s3.py)", intro,
                    ["month's data dir", "engine", "entries", "memory limit", "local s", "S3 s", "S3 / local",
                     "tables", "command"], rows, align="llrlrrrll")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", required=True, type=Path, help="an ingested data dir (routes/, manifest/)")
    p.add_argument("--month", required=True)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--limit", default="4GB", help="duckdb_memory_limit of both runs")
    p.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb")
    args = p.parse_args()

    from pyarrow import fs

    from tests.support import servers

    work = Path(tempfile.mkdtemp(prefix="bench-s3-", dir=OUT))
    out: dict = {"month": args.month, "source": str(args.data_dir), "limit": args.limit, "engine": args.engine,
                 "machine": machine_facts(),
                 "rounds": [], "command": "bench/s3.py " + " ".join(sys.argv[1:]),
                 "date": now_utc()}
    try:
        with servers.s3_server() as srv, servers.postgres_server() as pg:
            local = work / "local"
            for sub in ("routes", "manifest"):
                shutil.copytree(args.data_dir / sub / f"month={args.month}", local / sub / f"month={args.month}")
            f = fs.S3FileSystem(access_key=srv.key_id, secret_key=srv.secret, region="us-east-1", scheme="http",
                                endpoint_override=srv.endpoint.removeprefix("http://"))
            for sub in ("routes", "manifest"):
                fs.copy_files(str(local / sub / f"month={args.month}"), f"lake/bench/{sub}/month={args.month}",
                              destination_filesystem=f)
            env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, **srv.env()}
            dirs = {"local": str(local), "s3": "s3://lake/bench"}
            cfgs = {}
            for name in dirs:
                c = work / f"{name}.toml"
                c.write_text(f'engine = "{args.engine}"\nduckdb_memory_limit = "{args.limit}"\n'
                             f'catalog = "postgres:{pg.database(name)}"\n')
                cfgs[name] = c
            for i in range(args.repeat):
                row = {}
                for name, d in dirs.items():
                    t = time.perf_counter()
                    r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "compare", "--month",
                                        args.month, "--data-dir", d, "--config", str(cfgs[name])],
                                       capture_output=True, text=True, env=env, timeout=7200)
                    row[name] = round(time.perf_counter() - t, 2)
                    if r.returncode:
                        raise SystemExit(f"{name}: compare failed: {r.stderr[-2000:]}")
                row["ratio"] = round(row["s3"] / row["local"], 3)
                print(f"round {i + 1}: local {row['local']} s, s3 {row['s3']} s, ratio {row['ratio']}x", flush=True)
                out["rounds"].append(row)
            same = []
            for q in ("SELECT * FROM month_summary", "SELECT count(*), sum(hash(vp_asn, dest_asn, congruent)) FROM pairs"):
                got = [subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "query", "--data-dir", d,
                                       "--format", "csv", "--sql", q], capture_output=True, text=True, env=env,
                                      timeout=600).stdout for d in dirs.values()]
                same.append(got[0] == got[1] and bool(got[0]))
            out["same_tables"] = all(same)
            out["best"] = {n: min(r[n] for r in out["rounds"]) for n in dirs}
            out["best_ratio"] = round(out["best"]["s3"] / out["best"]["local"], 3)
            out["entries"] = int(subprocess.run(
                [sys.executable, "-m", "bgp_congruency.cli.main", "query", "--data-dir", dirs["local"], "--format", "csv",
                 "--sql", "SELECT sum(entries_v4 + entries_v6) FROM manifest"], capture_output=True, text=True,
                env=env, timeout=600).stdout.split()[-1])
            out["load_after"] = load_now()
            print(f"best: local {out['best']['local']} s, s3 {out['best']['s3']} s: {out['best_ratio']}x; "
                  f"same tables: {out['same_tables']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_json(out, OUT / ("s3-compare.json" if args.engine == "duckdb" else f"s3-compare-{args.engine}.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
