"""`congruency warehouse` command line: create or refresh DATA_DIR/warehouse.duckdb."""
from __future__ import annotations

import argparse
import json
import sys

from bgp_congruency.common import console
from bgp_congruency.common.config import Config


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "warehouse",
        parents=parents,
        help="create or refresh DATA_DIR/warehouse.duckdb (views over the published Parquet)",
        description=(
            "Write DATA_DIR/warehouse.duckdb: one DuckDB view per published table (manifest, "
            "rib_entries, cleaning_stats, paths, vps, pairs, month_summary, transitions, and any "
            "other table of common/tables.py with data), reading the Parquet in place; month is a "
            "'YYYY-MM' string. Months being written or staged are never visible. The new file is "
            "built beside the old one and swapped in by rename. Columns are documented in "
            "docs/SCHEMA.md and as DuckDB comments (duckdb_columns())."
        ),
    )
    p.add_argument("--json", action="store_true", help="print the file and its views as JSON on stdout")
    p.set_defaults(func=main)


def main(args: argparse.Namespace, cfg: Config) -> int:
    import duckdb

    from bgp_congruency.reports import warehouse

    try:
        target = warehouse.refresh(cfg)
        con = warehouse.connect(cfg)
        views = {v: warehouse.months(con, v) for v in warehouse.published(warehouse.data_root(cfg))}
        con.close()
    except duckdb.Error as exc:  # e.g. a table folder that is a link out of the data dir
        console.error(f"{warehouse.path(cfg)}: {' '.join(str(exc).split())}")
        return 1
    if args.json:
        json.dump({"warehouse": str(target), "views": views}, sys.stdout, indent=1)
        print()
        return 0
    console.err.print(f"warehouse {target}: {len(views)} views", soft_wrap=True)
    for v, ms in views.items():
        span = f"{ms[0]}..{ms[-1]} ({len(ms)} months)" if ms else "no months"
        console.err.print(f"  {v}: {span}", soft_wrap=True)
    return 0
