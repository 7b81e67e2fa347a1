"""`congruency report` command line: offline HTML reports of one month or of the trend."""
from __future__ import annotations

import argparse
import json
import sys

from bgp_congruency.cli.main import command_help
from bgp_congruency.common import console
from bgp_congruency.common.config import Config


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        parents=parents,
        help=command_help('report'),
        description=(
            "Write one HTML file with plotly.js embedded (no network needed): --month YYYY-MM to "
            "DATA_DIR/reports/month=YYYY-MM/report.html (provenance, headline numbers beside the 2014 "
            "reference, the study's section III figures, the congruent share by path length, why paths "
            "diverge and the top shared ASes, the cleaning table, a sortable per-VP table); --trend to "
            "DATA_DIR/reports/trend.html (per-VP distribution and per-VP lines, non-adopter share, pairs "
            "that became congruent or non-congruent, a per-month table with a CSV download; missing "
            "months stay gaps). Reads the published Parquet; written atomically."
        ),
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--month", metavar="YYYY-MM", help="report one published month")
    what.add_argument("--trend", action="store_true", help="report every published month")
    p.add_argument("--out", metavar="FILE", help="write here instead of the default under DATA_DIR/reports/")
    p.add_argument("--min-pairs", type=int, default=None, metavar="N",
                   help="month report: VPs with fewer pairs are left out of the per-VP CDF and named under it "
                        "(default 10)")
    p.add_argument("--json", action="store_true", help="print the written path as JSON on stdout")
    p.set_defaults(func=main)


def main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.common.months import parse_month
    from bgp_congruency.lake import published
    from bgp_congruency.reports import month_report, trend_report, warehouse

    if args.min_pairs is not None and (args.trend or args.min_pairs < 0):
        console.error("--min-pairs: " + ("only for --month" if args.trend else f"expected N >= 0, got {args.min_pairs}"))
        return 2
    if args.month:
        parse_month(args.month)
        published.require(warehouse.data_root(cfg), args.month)
    with console.err.status("writing the report"):
        out = trend_report.write_trend_report(cfg, args.out) if args.trend else \
            month_report.write_month_report(cfg, args.month, args.out,
                                            month_report.MIN_PAIRS if args.min_pairs is None else args.min_pairs)
    if args.json:
        json.dump({"report": str(out)}, sys.stdout)
        print()
    else:
        console.err.print(f"report {out}", soft_wrap=True)
    return 0
