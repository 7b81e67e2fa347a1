"""`congruency compare` command line: run the compare job for a month, on DuckDB or Spark."""
from __future__ import annotations

import argparse
import json
import sys

from bgp_congruency.cli.main import command_help
from bgp_congruency.common import console
from bgp_congruency.common.config import ENGINES, Config
from bgp_congruency.common.errors import BadInput


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    from bgp_congruency.common.tables import MONTH_TABLES

    p = sub.add_parser(
        "compare",
        parents=parents,
        help=command_help('compare'),
        description=(
            "Read the month's routes (DATA_DIR/routes/month=YYYY-MM), clean paths, pick representative paths "
            "and compare IPv4 with IPv6 per dual-stacked vantage point (congruency/METHOD.md). "
            f"Publishes {', '.join(MONTH_TABLES)} (transitions against the month before, when "
            "published) together under "
            "DATA_DIR/<table>/month=YYYY-MM, replacing that month only. Two engines give the "
            "same tables: duckdb (the default: in-process, no Java, for one machine; memory capped by "
            "duckdb_memory_limit, spilling to disk, the month in as many VP partitions as the cap needs: "
            "compare_partitions) and spark (local mode, or a cluster). A cluster named "
            "by --master (spark://, k8s://, yarn) or spark-submit implies spark. A data dir on S3 "
            "(s3://BUCKET/PREFIX, its catalog in PostgreSQL: docs/operations.md) is compared on either "
            "engine, Spark through Hadoop's S3A (its jars: make s3a-jars)."
        ),
    )
    p.add_argument("--month", required=True, action="append",
                   help="the month, YYYY-MM (repeat for several; each is published on its own)")
    p.add_argument("--default-free-share", "--min-coverage", dest="min_coverage", type=float, metavar="SHARE",
                   help="the default-free threshold per AFI: the share of the month's origin ASes a VP must have a path to, in each family, to count as default-free (METHOD.md 5) (default 0.9; config [method] min_coverage). --min-coverage is its old name")
    p.add_argument("--engine", choices=ENGINES,
                   help="duckdb (default, no Java needed) or spark; the config file's `engine` otherwise")
    p.add_argument("--master", help="Spark master URL (default local[*]); a cluster URL implies --engine spark")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting")
    p.add_argument("--json", action="store_true", help="print each month's summary as JSON on stdout")
    p.set_defaults(func=main)


def main(args: argparse.Namespace, cfg: Config) -> int:
    from dataclasses import replace

    from bgp_congruency.common.months import parse_month
    from bgp_congruency.pipeline import job, spark_session

    for m in args.month:
        parse_month(m)
    if args.min_coverage is not None and not 0 <= args.min_coverage <= 1:
        raise BadInput(f"--default-free-share (--min-coverage): expected a number from 0 to 1, got {args.min_coverage}")
    conf = dict(cfg.spark_conf)
    for kv in args.conf:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            raise BadInput(f"--conf: expected KEY=VALUE, got {kv!r}")
        conf[k] = v
    if args.min_coverage is not None:
        cfg = replace(cfg, method=replace(cfg.method, min_coverage=args.min_coverage))
    cfg = cfg.with_overrides(spark_master=args.master, spark_conf=conf, engine=args.engine)
    if args.engine == "duckdb" and job.names_cluster(cfg):
        named = f"--master {args.master}" if args.master else f"the data dir {cfg.data_dir}"
        console.error(f"--engine duckdb: {named} names a Spark cluster; use --engine spark")
        return 2
    engine = job.effective_engine(cfg)
    if engine == "spark" and (problem := spark_session.java_problem()):
        console.error(problem)
        return 2
    from bgp_congruency.runner.steps import STAGERS

    results = job.compare_months(cfg, args.month, stagers=STAGERS)
    rc = 0
    for r in results:
        if r.error:
            console.error(r.error)
            rc = 1
        elif args.json:
            json.dump({"month": r.month, "engine": engine, "summary": r.summary, "published": r.published},
                      sys.stdout, default=str)
            print()
        else:
            s = r.summary
            console.err.print(
                f"compare {r.month} ({engine}): {s['pairs']:,} pairs from {s['vps_with_pairs']} VPs, "
                f"non-congruent {fmt(s['noncongruent_fraction'])}, per-VP median "
                f"{fmt(s['vp_noncongruent_median'])}; published {', '.join(r.published.values())}"
            )
    return rc


def fmt(x) -> str:
    return "n/a" if x is None else f"{x:.1%}"
