"""`congruency sensitivity` command line: the month's headline figures under each open choice."""
from __future__ import annotations

import argparse
import json
import sys

from bgp_congruency.cli.main import command_help
from bgp_congruency.common import console
from bgp_congruency.common.config import ENGINES, Config


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    from bgp_congruency.pipeline.sensitivity import names

    p = sub.add_parser(
        "sensitivity", parents=parents,
        help=command_help('sensitivity'),
        description=(
            "One factor at a time against the month's own parameters (its provenance): "
            + "; ".join(names()) + ". The month's entries are read once; each distinct "
            "parameter set is computed once on the compare engine (--engine), and the sets that clean "
            "the routes alike run one after another, sharing one cleaning (on Spark the cleaning also "
            "chooses the representative paths, so the representative variants clean again). Each variant's month_summary "
            "figures are a row of the `sensitivity` table (DATA_DIR/sensitivity/month=M/), and the "
            "offline page DATA_DIR/reports/month=M/sensitivity.html shows per headline figure the "
            "range over each choice's variants (tornado charts) with the table under them."
        ),
    )
    p.add_argument("--month", required=True, metavar="YYYY-MM", help="a published month")
    p.add_argument("--variants", metavar="NAME,...",
                   help="choice=variant names or whole choices (default: all), e.g. min_coverage,first_as_rule=off")
    p.add_argument("--engine", choices=ENGINES, help="compare engine (default: the config's)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.set_defaults(func=main)


def main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.common.months import parse_month
    from bgp_congruency.pipeline import sensitivity
    from bgp_congruency.reports import sensitivity as page

    parse_month(args.month)
    wanted = [v.strip() for v in args.variants.split(",") if v.strip()] if args.variants else None
    cfg = cfg.with_overrides(engine=args.engine)
    sensitivity.variants(cfg.method, wanted)  # names checked before any work
    with console.progress() as prog:
        out = sensitivity.run(cfg, args.month, wanted, progress=prog)
    report = page.write(cfg, args.month)
    out["report"] = str(report)
    if args.json:
        json.dump(out, sys.stdout, default=str)
        print()
        return 0
    default, eff = page.effects(out["rows"], "noncongruent", out["published"])
    console.err.print(f"sensitivity {args.month}: {out['variants']} variants ({out['computed']} computed, "
                      f"{out['cleanings']} cleanings, {out['steps'].get('paths', 0)} choices of representative paths) in "
                      f"{out['seconds']:.1f} s; non-congruent "
                      f"{'n/a' if default is None else f'{100 * default:.1f}%'} as published")
    for e in eff:  # as the page says it: a variant with no pairs is undefined, not +0.0
        own = [v for v, _x in e["values"] if v != "default"]
        span = (f"{e['low']:+6.1f} .. {e['high']:+6.1f} points ({e['low_variant']} .. {e['high_variant']})"
                if own or not e["undefined"] else "undefined")
        console.err.print(f"  {e['choice']:14} {span}"
                          + (f" (undefined: {', '.join(e['undefined'])}: no pairs)" if e["undefined"] else ""),
                          soft_wrap=True, markup=False)
    console.err.print(f"  table  {out['path']}\n  report {report}", soft_wrap=True)
    return 0
