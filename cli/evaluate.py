"""`congruency evaluate` command line: how often the path selector is right, each VP held out."""
from __future__ import annotations

import argparse
import json
import sys

from bgp_congruency.cli.main import command_help
from bgp_congruency.common import console
from bgp_congruency.common.config import Config


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "evaluate",
        parents=parents,
        help=command_help('evaluate'),
        description=(
            "For every VP AS of the month with pairs, hide all of its VPs from what the path selector "
            "reads, ask the selector for that AS to each destination it has a pair for (so the answer "
            "comes from proxy VPs, as for an operator's AS), and compare with the pair as observed: the "
            "class, the advice's mode and each family's path. Prints coverage (answers other than "
            "unknown), accuracy among the answered, per rule (through, provider, one-neighbour, destination, upstream, none), the confusion "
            "matrix, accuracy per confidence bin, and the ceiling of any rule that gives every source the "
            "same class toward a destination (each destination's most common observed class); publishes the "
            "rows as the month's selector_eval table (docs/SCHEMA.md). From then on advise states, for an answer of a proxy rule, the share of "
            "the month's evaluated answers of that rule and kind of class that were right "
            "(selector/calibration.py); each row's calibrated_confidence is that share fitted on the other "
            "sources' rows only, so the summary's reliability and accuracy-coverage curve show it on answers "
            "it was not fitted on. With --truth ARCHIVE (a generated archive, congruency synth), the "
            "sources are instead ASes that are no VP (half stubs, half transit), against the generator's "
            "true paths: where an edge AS's answer can be checked."
        ),
    )
    p.add_argument("--month", metavar="YYYY-MM", help="month of published results (default: the latest)")
    p.add_argument("--truth", metavar="ARCHIVE", help="the generated archive the month was ingested from "
                   "(its SYNTH.json): evaluate ASes that are no VP against its true paths")
    p.add_argument("--sources", type=int, metavar="N", default=None,
                   help="with --truth: ASes to evaluate (default 40)")
    p.add_argument("--dests", type=int, metavar="N", default=None,
                   help="with --truth: destinations per AS, among the month's pair destinations (default 30)")
    p.add_argument("--seed", type=int, metavar="N", default=None, help="with --truth: the draw's seed (default 1)")
    p.add_argument("--reveal", choices=("none", "first-hop", "neighbours"), default="none",
                   help="what the selector is told of each held-out source: none (only the month, today's rules), "
                        "first-hop (its neighbour toward each destination per family), neighbours (the set of its "
                        "neighbours per family; what each is to it from the month's as_relationships). Each mode's "
                        "rows replace only that mode's, and calibrate that mode's answers. Every mode is answered in SQL "
                        "a destination partition at a time, within duckdb_memory_limit (with --truth, the generated "
                        "sources' questions all at once for none, a source at a time for the others)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.set_defaults(func=main)


def _pct(x) -> str:
    return "-" if x is None else f"{x:.1%}"


def main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.common.errors import BadInput
    from bgp_congruency.selector import evaluate as E

    extra = [f"--{n}" for n in ("sources", "dests", "seed") if getattr(args, n) is not None]
    if extra and not args.truth:
        raise BadInput(f"{', '.join(extra)}: only with --truth ARCHIVE")
    for n in ("sources", "dests"):
        if getattr(args, n) is not None and getattr(args, n) < 1:
            raise BadInput(f"--{n}: must be at least 1, got {getattr(args, n)}")
    truth = None
    if args.truth:
        from bgp_congruency.synth.truth import TruthError, load

        try:
            truth = load(args.truth)
        except TruthError as exc:
            raise BadInput(f"--truth: {exc}") from None
    from bgp_congruency.common import layout
    from bgp_congruency.common.locks import month_lock
    from bgp_congruency.selector import proxies as P
    from bgp_congruency.selector import reveal as R
    from bgp_congruency.selector.month import resolve_month

    month = resolve_month(cfg, args.month)
    # The month is held (and its folder written) before any work: a read-only data dir or a
    # running publish of the month says so at once, not after minutes of computing.
    with month_lock(layout.local(cfg.data_dir, "congruency evaluate"), month, wait_s=0), \
            console.progress() as prog:
        what = "generated ASes" if args.truth else f"destination partitions ({args.reveal})"
        task = prog.add_task(what, total=None)
        seen = [0]

        def tick(i, n, asn=None):
            seen[0] = n
            # the step in the description: off a terminal, a log line per step (a source starts; a partition ends)
            step = f"AS{asn} ({i + 1} of {n})" if asn is not None else f"{i} of {n} done"
            prog.update(task, total=n, completed=i, description=f"{what}: {step}")

        if truth is not None:
            try:
                month, rows = E.against_truth(cfg, truth, month, sources=args.sources or E.TRUTH_SOURCES,
                                              dests=args.dests or E.TRUTH_DESTS,
                                              seed=1 if args.seed is None else args.seed, progress=tick,
                                              reveal=args.reveal)
            except TruthError as exc:
                raise BadInput(f"--truth {args.truth}: {exc}") from None
        else:  # rebound to spill()'s file: the table is gone before publish's DuckDB starts
            rows = E.spill(cfg, P.answers(cfg, month, tick) if args.reveal == "none" else
                           R.answers(cfg, month, args.reveal, tick))
        prog.update(task, total=seen[0], completed=seen[0])
        where, rows = E.publish(cfg, month, rows, E.KINDS_TRUTH if truth is not None else ("vp",), args.reveal)
    s = E.summary(rows)
    if args.json:
        json.dump({"month": month, "reveal": args.reveal, "table": str(where), **s}, sys.stdout, indent=1)
        print()
        return 0
    who = "ASes that are no VP, against the generator's true paths" if args.truth else "each VP held out"
    if args.reveal != "none":
        who += f", {args.reveal} revealed"
    print(f"{month}: {s['pairs']:,} pairs, {who}: answered {s['answered']:,} "
          f"(coverage {_pct(s['coverage'])}), class right {s['correct']:,} (accuracy {_pct(s['accuracy'])})")
    w = max(map(len, [*s["rules"], *(k + "s" for k in s["kinds"])]))  # every row's numbers in one column
    for rule, r in s["rules"].items():
        print(f"  {rule:<{w}} {r['pairs']:>6,} pairs, answered {r['answered']:>6,}, accuracy {_pct(r['accuracy'])}")
    if args.truth:
        for kind, r in s["kinds"].items():
            print(f"  {kind + 's':<{w}} {r['pairs']:>6,} pairs, answered {r['answered']:>6,} "
                  f"(coverage {_pct(r['coverage'])}), accuracy {_pct(r['accuracy'])}")
    print(f"  mode right {_pct(s['mode_accuracy'])}; paths exact: IPv4 {_pct(s['paths']['v4']['exact'])}, "
          f"IPv6 {_pct(s['paths']['v6']['exact'])}; within one AS hop: IPv4 {_pct(s['paths']['v4']['within_one_hop'])}, "
          f"IPv6 {_pct(s['paths']['v6']['within_one_hop'])}")
    for title, bins in (("stated", s["bins"]), ("calibrated (other sources' answers)", s["calibrated"]["bins"])):
        print(f"  {title} confidence -> observed accuracy (answers):")
        for b in bins:
            if b["answers"]:
                print(f"    {b['low']:.1f}-{b['high']:.1f}: mean {b['mean_confidence']:.2f} -> {_pct(b['accuracy'])} "
                      f"({b['answers']:,})")
    print("  answering only at calibrated confidence >= t: " + "; ".join(
        f"{c['threshold']:.1f}: coverage {_pct(c['coverage'])}, accuracy {_pct(c['accuracy'])}"
        for c in s["calibrated"]["curve"]))
    print(f"  a rule giving every source the same class toward a destination is right at most "
          f"{_pct(s['destination_ceiling'])} of the time here (each destination's most common observed class)")
    classes = sorted({p for c in s["confusion"].values() for p in c})
    print("  observed \\ predicted: " + ", ".join(classes))
    for obs, c in s["confusion"].items():
        print(f"    {obs:<12} " + " ".join(f"{c.get(p, 0):>6,}" for p in classes))
    console.note(f"table: {where}")
    return 0
