"""`congruency evaluate` command line: how often the path selector is right, each VP held out."""
from __future__ import annotations

import argparse
import json
import sys

from bgp_congruency.common import console
from bgp_congruency.common.config import Config


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "evaluate",
        parents=parents,
        help="how often the path selector is right: each VP held out, its answers against its own pairs",
        description=(
            "For every VP AS of the month with pairs, hide all of its VPs from what the path selector "
            "reads, ask the selector for that AS to each destination it has a pair for (so the answer "
            "comes from proxy VPs, as for an operator's AS), and compare with the pair as observed: the "
            "class, the advice's mode and each family's path. Prints coverage (answers other than "
            "unknown), accuracy among the answered, per rule (through, upstream, none), the confusion "
            "matrix and accuracy per confidence bin; publishes the rows as the month's selector_eval "
            "table (docs/SCHEMA.md)."
        ),
    )
    p.add_argument("--month", metavar="YYYY-MM", help="month of published results (default: the latest)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.set_defaults(func=main)


def _pct(x) -> str:
    return "-" if x is None else f"{x:.1%}"


def main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.selector import evaluate as E

    with console.progress() as prog:
        task = prog.add_task("held-out VP ASes", total=None)
        seen = [0]

        def tick(i, n, asn):
            seen[0] = n
            prog.update(task, total=n, completed=i)

        month, rows = E.held_out(cfg, args.month, tick)
        prog.update(task, total=seen[0], completed=seen[0])
    where = E.publish(cfg, month, rows)
    s = E.summary(rows)
    if args.json:
        json.dump({"month": month, "table": str(where), **s}, sys.stdout, indent=1)
        print()
        return 0
    print(f"{month}: {s['pairs']:,} pairs, each VP held out: answered {s['answered']:,} "
          f"(coverage {_pct(s['coverage'])}), class right {s['correct']:,} (accuracy {_pct(s['accuracy'])})")
    for rule, r in s["rules"].items():
        print(f"  {rule:<9} {r['pairs']:>6,} pairs, answered {r['answered']:>6,}, accuracy {_pct(r['accuracy'])}")
    print(f"  mode right {_pct(s['mode_accuracy'])}; paths exact: IPv4 {_pct(s['paths']['v4']['exact'])}, "
          f"IPv6 {_pct(s['paths']['v6']['exact'])}; within one AS hop: IPv4 {_pct(s['paths']['v4']['within_one_hop'])}, "
          f"IPv6 {_pct(s['paths']['v6']['within_one_hop'])}")
    print("  stated confidence -> observed accuracy (answers):")
    for b in s["bins"]:
        if b["answers"]:
            print(f"    {b['low']:.1f}-{b['high']:.1f}: mean {b['mean_confidence']:.2f} -> {_pct(b['accuracy'])} "
                  f"({b['answers']:,})")
    classes = sorted({p for c in s["confusion"].values() for p in c})
    print("  observed \\ predicted: " + ", ".join(classes))
    for obs, c in s["confusion"].items():
        print(f"    {obs:<12} " + " ".join(f"{c.get(p, 0):>6,}" for p in classes))
    console.note(f"table: {where}")
    return 0
