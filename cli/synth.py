"""`congruency synth` command line: write a synthetic archive with its ground truth."""
from __future__ import annotations

import argparse
import json
import sys

from bgp_congruency.cli.main import command_help
from bgp_congruency.common.errors import BadInput

#: synth writes an archive (--out), not a data dir: no --data-dir (cli/main.py).
USES_DATA_DIR = False


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser] | None = None) -> None:
    p = sub.add_parser(
        "synth",
        parents=parents or [],
        help=command_help('synth'),
        description=(
            "Build a synthetic Internet (tiered AS graph, IPv4 and IPv6 relationships, "
            "Gao-Rexford routing, growing IPv6 adoption) and write what its collectors would "
            "dump: OUT/route-views2|route-views6/bgpdata/YYYY.MM/RIBS/rib.*.bz2 and "
            "OUT/rrcNN/YYYY.MM/bview.*.gz for the first N days of each month at 00:00 UTC (and every "
            "--every-hours hours after it). Routes change between snapshots as real collectors' do (a "
            "churn model fitted to real update files: synth/churn.py; --no-churn for the months of before). "
            "OUT/ground_truth/ holds the reference results per month and files.json with "
            "every file's entry count; OUT/SYNTH.json the parameters. Deterministic per seed."
        ),
    )
    p.add_argument("--out", metavar="DIR", help="archive root to write (required)")
    p.add_argument("--seed", metavar="N", help="random seed (default 1)")
    p.add_argument("--ases", metavar="N", help="number of ASes (default 300)")
    p.add_argument("--vps", metavar="N", help="number of vantage points (default 12)")
    p.add_argument("--months", metavar="YYYY-MM[..YYYY-MM]", help="a month or a range (default 2026-07)")
    p.add_argument("--snapshots-per-month", metavar="N", help="days of each month with RIB snapshots, 1..N (default 2)")
    p.add_argument("--every-hours", metavar="H", help="a snapshot every H hours of those days from 00:00 (default 24: "
                   "one a day; 2: RouteViews' schedule, 12 a day)")
    p.add_argument("--no-churn", action="store_true", help="every snapshot of a month holds the same routes but for "
                   "the generator's flapping ones (the months written before the churn model)")
    p.add_argument("--default-free-share", "--min-coverage", dest="min_coverage", metavar="F",
                   help="default-free threshold of the ground truth (default: config, 0.9; --min-coverage is its old name)")
    p.add_argument("--no-ground-truth", action="store_true", help="skip the reference (very large archives)")
    p.add_argument("--workers", metavar="N",
                   help="processes writing files side by side with --no-ground-truth (default: one per CPU; "
                        "the ground truth reads the rows in order, so with it one process writes)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.set_defaults(func=main)


def _int(name: str, text: str | None, default: int, lo: int, hi: int) -> int:
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadInput(f"{name}: expected an integer, got {text!r}") from None
    if not lo <= value <= hi:
        raise BadInput(f"{name}: expected {lo}..{hi}, got {value}")
    return value


def parse_months(text: str) -> list[str]:
    """'2026-07' or '2026-01..2026-06' -> the months, in order (at most 240)."""
    from bgp_congruency.common.months import parse_month_range

    months = parse_month_range(text)
    if len(months) > 240:
        raise BadInput(f"--months: at most 240 months, got {len(months)}")
    return months


def main(args: argparse.Namespace, cfg=None) -> int:
    from dataclasses import replace
    from pathlib import Path

    from bgp_congruency.common import console
    from bgp_congruency.synth.generate import default_workers, generate

    if not args.out:
        raise BadInput("--out: required, the archive root to write")
    seed = _int("--seed", args.seed, 1, 0, 2**63 - 1)
    ases = _int("--ases", args.ases, 300, 20, 200_000)
    vps = _int("--vps", args.vps, 12, 1, min(ases, 1000))
    months = parse_months(args.months or "2026-07")
    snaps = _int("--snapshots-per-month", args.snapshots_per_month, 2, 1, 28)
    every = _int("--every-hours", args.every_hours, 24, 1, 24)
    if 24 % every:
        raise BadInput(f"--every-hours: expected a divisor of 24 (1, 2, 3, 4, 6, 8, 12 or 24), got {every}")
    workers = _int("--workers", args.workers, default_workers(), 1, 256)
    params = cfg.method if cfg is not None else None
    min_cov = params.min_coverage if params is not None else 0.9
    if args.min_coverage is not None:
        try:
            min_cov = float(args.min_coverage)
        except ValueError:
            raise BadInput(f"--default-free-share (--min-coverage): expected a number from 0 to 1, got {args.min_coverage!r}") from None
        if not 0 <= min_cov <= 1:
            raise BadInput(f"--default-free-share (--min-coverage): expected a number from 0 to 1, got {min_cov}")
    if params is not None:
        params = replace(params, min_coverage=min_cov)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out: not a directory: {out}")

    with console.progress() as prog:
        task = prog.add_task("synth", total=None)

        def report(done, total, desc):
            prog.update(task, completed=done, total=total, description=desc)

        summary = generate(
            out, seed=seed, ases=ases, vps=vps, months=months, snapshots_per_month=snaps,
            progress=report, min_coverage=min_cov, ground_truth=not args.no_ground_truth,
            method_params=params, workers=workers, every_hours=every, churn=not args.no_churn,
        )
    if args.json:
        json.dump(summary, sys.stdout, indent=1)
        print()
        return 0
    gt = summary["ground_truth"] or {}
    console.err.print(
        f"synth: {summary['files']} files, {summary['entries']:,} entries "
        f"(IPv4 {summary['entries_by_afi']['4']:,}, IPv6 {summary['entries_by_afi']['6']:,}) in "
        f"{summary['seconds']:.1f}s ({summary['entries_per_second'] or 0:,}/s) -> {out}",
        soft_wrap=True,
    )
    for month, s in gt.items():
        frac = s["noncongruent_fraction"] if s else None
        console.err.print(
            f"  {month}: {s['pairs'] if s else 0:,} pairs from {s['vps_with_pairs'] if s else 0} VPs, "
            f"non-congruent {'n/a' if frac is None else f'{frac:.1%}'}"
        )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="synth")
    register(parser.add_subparsers(dest="command", required=True))
    ns = parser.parse_args(["synth", *sys.argv[1:]])
    sys.exit(ns.func(ns))
