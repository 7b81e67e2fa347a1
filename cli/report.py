"""`congruency report` command line: offline HTML reports of one month or of the trend."""
from __future__ import annotations

import argparse
import json
import sys

from common import console
from common.config import Config


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        parents=parents,
        help="write a self-contained offline HTML report of a month (--month) or of all months (--trend)",
        description=(
            "Write one HTML file with plotly.js embedded (no network needed): --month YYYY-MM to "
            "DATA_DIR/reports/month=YYYY-MM/report.html (the 2014 study's section III figures, a "
            "sortable per-VP table, headline numbers beside the 2014 reference); --trend to "
            "DATA_DIR/reports/trend.html (per-VP distribution, non-adopter share and transitions "
            "per published month). Reads the published Parquet; written atomically."
        ),
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--month", metavar="YYYY-MM", help="report one published month")
    what.add_argument("--trend", action="store_true", help="report every published month")
    p.add_argument("--out", metavar="FILE", help="write here instead of the default under DATA_DIR/reports/")
    p.add_argument("--json", action="store_true", help="print the written path as JSON on stdout")
    p.set_defaults(func=main)


def main(args: argparse.Namespace, cfg: Config) -> int:
    from common import published
    from common.months import parse_month
    from reports import html, warehouse

    try:
        if args.month:
            parse_month(args.month)
            published.require(warehouse.data_root(cfg), args.month)
    except (ValueError, warehouse.WarehouseError) as exc:
        console.error(str(exc))
        return 2
    try:
        with console.err.status("writing the report"):
            out = html.write_trend_report(cfg, args.out) if args.trend else \
                html.write_month_report(cfg, args.month, args.out)
    except html.ReportError as exc:
        console.error(str(exc))
        return 1
    if args.json:
        json.dump({"report": str(out)}, sys.stdout)
        print()
    else:
        console.err.print(f"report {out}", soft_wrap=True)
    return 0
