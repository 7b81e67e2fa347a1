"""`congruency run` and `congruency status`: the monthly batch (runner/month.py) by hand."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from rich.text import Text

from bgp_congruency.cli.ingest import COLLECTORS_HELP, check_collectors
from bgp_congruency.cli.main import command_help
from bgp_congruency.common import console, s3
from bgp_congruency.common.config import ENGINES, Config
from bgp_congruency.common.errors import BadInput


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        parents=parents,
        help=command_help('run'),
        description=(
            "Run a month end to end: ingest its RIB snapshots, the congruency job, then the "
            "hints export (DATA_DIR/exports/month=M/tunnels.jsonl; config tunnels_export = false "
            "leaves it out), the catalog's upkeep (lake: expire old snapshots) and the reports. "
            "Each step's completion is recorded with its inputs in "
            "DATA_DIR/_runs/month=YYYY-MM/state.json; a re-run skips what is complete and "
            "still valid and redoes what changed. One run per month at a time (a lock); what "
            "a killed run left is cleaned up or finished by the next one. --months A..B is a "
            "backfill: each month plans only the collectors active in it (the catalogue's "
            "lifetimes; --collectors all|routeviews|ris), goes on when its coverage meets the "
            "policy (config min_snapshot_share, min_project_share). Before anything is "
            "fetched or written the run checks that the months fit the disk (congruency plan: "
            "what they add, and the most one month stages at once), as does --only ingest, "
            "--only compare (the months it would compare, from their routes) and --only hints "
            "(its export, warned about); a full disk stops the run with later months not "
            "started. Exit 1 when a step failed or the months do not fit, 2 for bad arguments."
        ),
    )
    add_selection(p, "a range of months, run in order: 2026-01..2026-06")
    add_run_flags(p)
    p.add_argument("--wait", type=float, default=0, metavar="SECONDS",
                   help="wait this long for another run of the same month to finish (default: refuse at once)")
    p.add_argument("--json", action="store_true", help="print each month's summary as JSON on stdout")
    p.set_defaults(func=main)

    s = sub.add_parser(
        "status", parents=parents,
        help=command_help('status'),
        description="Read DATA_DIR/_runs/month=YYYY-MM/state.json and the manifest of a month "
                    "(or a range) and print its status; exit 1 if a step failed or the month was never run.",
    )
    sg = s.add_mutually_exclusive_group(required=True)
    sg.add_argument("--month", help="the month, YYYY-MM")
    sg.add_argument("--months", metavar="A..B", help="a range of months")
    s.add_argument("--json", action="store_true", help="print each month's status as JSON on stdout")
    s.set_defaults(func=status_main)


def add_selection(p: argparse.ArgumentParser, months_help: str) -> None:
    """--month | --months, --days, --times, --collectors: which snapshots (run and plan)."""
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--month", help="the month, YYYY-MM")
    g.add_argument("--months", metavar="A..B", help=months_help)
    p.add_argument("--days", help="days of the month: 30, 1-5, 1,15 (default 1-5)")
    p.add_argument("--times", help="UTC times of day, HH:MM[,HH:MM...] (default 00:00)")
    p.add_argument("--collectors", help=COLLECTORS_HELP)


def add_run_flags(p: argparse.ArgumentParser) -> None:
    """The flags that change what a run does, which `congruency plan` takes too (it plans the
    run of the same flags): --force, --only, --archive-root, --default-free-share, --engine,
    --master, --tolerate-failures."""
    from bgp_congruency.runner import STEPS

    p.add_argument("--force", nargs="?", const="all", metavar="STEP",
                   help=f"redo the month even if complete, or only STEP and the steps after it "
                        f"({', '.join(STEPS)})")
    p.add_argument("--only", choices=STEPS, metavar="STEP",
                   help="run only this step (skipped when complete and valid, unless --force); "
                        "the Airflow DAG's cluster compare uses it")
    p.add_argument("--archive-root", help="one archive root (http(s):// URL or local folder) for every collector")
    p.add_argument("--default-free-share", "--min-coverage", dest="min_coverage", type=float, metavar="SHARE",
                   help="the default-free threshold per AFI: the share of the month's origin ASes a VP must have a path to, in each family, to count as default-free (METHOD.md 5) (default 0.9; config [method] min_coverage). --min-coverage is its old name")
    p.add_argument("--engine", choices=ENGINES,
                   help="compare engine: duckdb (default, no Java needed) or spark; the config file's `engine` otherwise")
    p.add_argument("--master", help="Spark master URL (default local[*]); a cluster URL implies --engine spark")
    p.add_argument("--tolerate-failures", action="store_true", default=None,
                   help="go on to compare even when some snapshots failed or are missing")


def disk_plan(args: argparse.Namespace, cfg: Config, months: list[str]):
    """(the plan, what it is of) that `run` checks the disk against before it starts and
    `plan` prints: the whole run (runner/plan.make), or the months whose --only STEP would run
    (STEP_CHECKED: runner/plan.for_step); (None, ...) for a step that adds nothing to check."""
    from bgp_congruency.runner import month as runner
    from bgp_congruency.runner import plan as planner

    forced = runner.steps_to_force(args.force)
    if args.force and args.force != "all" and args.only and args.force != args.only:
        raise BadInput(f"--force {args.force} with --only {args.only}: name the same step, or --force alone")
    if args.only in planner.STEP_CHECKED:  # the months whose step would run, from their routes
        runs = [planner.step_runs(cfg, m, args.only, force=args.only in forced) for m in months]
        # a month compared again changes the next one's input (its transitions)
        todo = months[runs.index(True):] if args.only == "compare" and any(runs) else \
            [m for m, r in zip(months, runs) if r]
        return planner.for_step(cfg, todo, args.only), f"--only {args.only}"
    if args.only in (None, "ingest"):
        return planner.make(cfg, months, only=args.only, forced=forced), "the run"
    return None, f"--only {args.only}"


def options(args: argparse.Namespace, cfg: Config) -> tuple[Config, list[str]]:
    """The config with this command's flags applied and the months; ValueError when bad."""
    from bgp_congruency.common.months import check_days, check_not_future, parse_month_range
    from bgp_congruency.ingest import catalogue, discovery

    months = parse_month_range(args.months or args.month, "--months" if args.months else "--month")
    over = {}
    if getattr(args, "days", None):
        over["days"] = discovery.parse_days(args.days)
    if getattr(args, "times", None):
        over["times"] = discovery.parse_times(args.times)
    if getattr(args, "collectors", None) is not None:
        over["collectors"] = catalogue.parse_spec(args.collectors)
    cfg = cfg.with_overrides(archive_root=getattr(args, "archive_root", None),
                             spark_master=getattr(args, "master", None), engine=getattr(args, "engine", None),
                             tolerate_failures=getattr(args, "tolerate_failures", None), **over)
    mc = getattr(args, "min_coverage", None)
    if mc is not None:
        if not 0 <= mc <= 1:
            raise BadInput(f"--default-free-share (--min-coverage): expected a number from 0 to 1, got {mc}")
        cfg = replace(cfg, method=replace(cfg.method, min_coverage=mc))
    if isinstance(cfg.data_dir, str) and not s3.is_s3(cfg.data_dir):
        raise BadInput(f"--data-dir: the monthly run needs a local folder or s3://BUCKET/PREFIX, not {cfg.data_dir}")
    flag = "--months" if args.months else "--month"
    check_not_future(months, flag)
    check_days(months, cfg.days)
    check_collectors(cfg)
    return cfg, months


def main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.runner import month as runner
    from bgp_congruency.runner import plan as planner

    cfg, months = options(args, cfg)
    try:  # before anything is fetched or written: will the months fit on the disk?
        plan, what = disk_plan(args, cfg, months)
        if plan is not None:
            planner.check(plan, cfg, what)
            for line in planner.warnings(plan):
                console.warning(f"run: {line}")
    except planner.PlanError as exc:
        console.error(f"run: {exc}")
        return 1
    rc = 0
    with console.progress(transfer=True) as prog:
        results = runner.run_months(cfg, months, force=args.force, only=args.only,
                                     progress=prog, wait_s=args.wait)
    for s in results:
        for name, st in s["steps"].items():
            if st.get("status") == "failed":
                console.error(st["error"])
            elif st.get("status") == "warning":
                console.err.print(f"warning: {st['error']}", soft_wrap=True, markup=False)
        rc = rc or (0 if s["ok"] else 1)
        print_summary(s, args.json, errors=False)  # each failed step's error is the line above
    return rc


def status_main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.runner import month as runner
    from bgp_congruency.runner import state

    cfg, months = options(args, cfg)
    from bgp_congruency.ingest import manifest

    rc = 0
    for m in months:
        if not state.has_state(cfg, m) and not state.exists(str(manifest.path(state.data_dir(cfg), m))):
            console.error(f"month {m}: never run in {state.data_dir(cfg)} (no state, no manifest there; "
                          "another --data-dir? `make demo` writes data/demo)")
            rc = 1
            continue
        s = runner.summary(cfg, m)
        rc = rc or (1 if any(st.get("status") == "failed" for st in s["steps"].values()) else 0)
        print_summary(s, args.json)
    return rc


def print_summary(s: dict, as_json: bool, errors: bool = True) -> None:
    """A month's summary: JSON, or lines for a person (`errors`: a failed step's error on its line)."""
    if as_json:
        json.dump(s, sys.stdout, default=str)
        print()
        return
    out = console.err
    frac = s["noncongruent_fraction"]
    out.print(Text.assemble((s["month"], "bold"), f": {s['files']} files, {s['entries']:,} entries, "
                            f"{'n/a' if s['pairs'] is None else format(s['pairs'], ',')} pairs, non-congruent "
                            f"{'n/a' if frac is None else format(frac, '.1%')}"))
    for name, st in s["steps"].items():
        failed = st.get("status") == "failed"
        extra = f": {st['error']}" if failed and errors and st.get("error") else \
            f" ({st['error']})" if st.get("error") and not failed else ""
        out.print(f"  {name:10} {st.get('status', '?')}{extra}", soft_wrap=True, markup=False)
        for c, r in sorted((st.get("collectors") or {}).items()):
            out.print(f"    {c:18} {r.get('status')}" + (f": {r['error']}" if r.get("error") else ""))
    if s.get("coverage"):
        out.print(f"  coverage   {s['coverage']['reason']}" +
                  (f"; {s['inactive_slots']} slot(s) of collectors not active then" if s.get("inactive_slots") else ""),
                  soft_wrap=True, markup=False)
    for f in s["failed_slots"]:
        out.print(f"  {f['status']} slot {f['slot']}: {f['error']}", soft_wrap=True, markup=False)
    width = max(map(len, s["outputs"]), default=0)
    for k, v in s["outputs"].items():  # a path on one line, however narrow the terminal
        out.print(f"  {k:{width}} {v}", soft_wrap=True, markup=False)
