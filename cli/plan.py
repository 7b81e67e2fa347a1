"""`congruency plan` command line: what a run of months would fetch and cost (runner/plan.py)."""
from __future__ import annotations

import argparse
import json
import sys

from bgp_congruency.cli.main import command_help
from bgp_congruency.cli.run import add_run_flags, add_selection
from bgp_congruency.common import console
from bgp_congruency.common.config import Config
from bgp_congruency.common.errors import BadInput


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "plan",
        parents=parents,
        help=command_help('plan'),
        description=(
            "List, per month, the collectors active then (the catalogue's lifetimes), the snapshots "
            "`congruency run` with the same flags would fetch (it takes run's flags that change "
            "what a run does: --force, --only ingest|compare|hints, --archive-root, "
            "--default-free-share, --engine, --master, --tolerate-failures), how many are already published or "
            "cached in DATA_DIR, and estimates of download bytes, added disk (the routes, the "
            "compare's tables), the most a month stages at once, and time. Offline: no remote "
            "archive is asked; a local --archive-root (or config archive_roots) is listed as the run "
            "lists it, and its files size the month (a snapshot it lacks is counted missing). Other "
            "sizes come from DATA_DIR's own manifests for collectors ingested "
            "before, else from a stated assumption (config plan_entries_per_snapshot, by default a "
            "full 2026 route-views2 RIB); rates from the "
            "bench (see runner/plan.py). With tunnels_export on, the hints export's time and disk are "
            "counted: an upper bound until a local DATA_DIR holds an exported month of its own (then its bytes "
            "per route), with a warning when it would not fit. The routes and the compare's tables "
            "are counted in bytes per route too, DATA_DIR's own once it holds a whole compared month, "
            "and refused on like the rest. With config sensitivity on, its step is counted at a measured "
            "multiple of the compare's time and staging per route. Exit 1 "
            "when the run would not fit the disk budget (config disk_budget) or the free space, 2 for bad "
            "arguments."
        ),
    )
    add_selection(p, "a range of months: 2009-06..2014-06")
    add_run_flags(p)
    p.add_argument("--json", action="store_true", help="print the plan as JSON on stdout")
    p.set_defaults(func=main)


def main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.cli.run import disk_plan, options
    from bgp_congruency.runner import plan as planner

    cfg, months = options(args, cfg)
    plan, what = disk_plan(args, cfg, months)
    if plan is None:
        raise BadInput(f"--only {args.only}: the plan estimates a whole run, or --only "
                       f"{', '.join(('ingest', *planner.STEP_CHECKED))}")
    try:
        planner.check(plan, cfg, what)
        problem = None
    except planner.PlanError as exc:
        problem = str(exc)
    if args.json:
        json.dump({**plan.to_dict(), "fits": problem is None, "problem": problem}, sys.stdout, indent=1)
        print()
    else:
        _table(plan)
    for line in [] if problem else planner.warnings(plan):
        console.warning(f"plan: {line}")
    if problem:
        console.error(f"plan: {problem}")
        return 1
    return 0


def _table(plan) -> None:
    from rich.table import Table

    from bgp_congruency.runner.plan import duration, human

    t = Table(title="plan", title_justify="left")
    for c in ("month", "active", "probe", "snapshots", "published", "cached", "to fetch", "download", "disk", "staging",
              "time", "entries", "partitions", "memory"):
        t.add_column(c, justify="left" if c == "month" else "right")
    for m in plan.months:
        t.add_row(m.month, str(len(m.collectors)), str(len(m.probes)), str(m.snapshots), str(m.published), str(m.cached),
                  str(m.to_fetch), human(m.download_bytes), human(m.disk_bytes), human(m.staging_bytes), duration(m.seconds),
                  f"{m.entries / 1e6:,.0f}M", str(m.partitions), human(m.compare_peak_bytes))
    from rich.console import Console

    Console(file=sys.stdout, width=150).print(t)
    budget = human(plan.budget_bytes) if plan.budget_bytes is not None else "none"
    in_place = sum(m.in_place for m in plan.months)
    print(f"total: {sum(m.to_fetch for m in plan.months):,} snapshots to fetch"
          + (f", {in_place:,} read in place (a local archive)" if in_place else "") + f", download {human(plan.download_bytes)}, "
          f"disk +{human(plan.disk_bytes)} and up to {human(plan.staging_bytes)} staged at once (DATA_DIR holds {human(plan.used_bytes)}, free {human(plan.free_bytes)}, "
          f"budget {budget}), about {duration(plan.seconds)} on one 2-core machine")
    if any(m.probes for m in plan.months):
        print("probe: collectors no source gives a start for; the run lists their month folder (none = inactive); "
              "not in the estimates")
    if missing := sum(m.missing for m in plan.months):
        print(f"missing: {missing:,} snapshot(s) of active collectors the run will not read (not in the local archive, "
              "or missing when the month was ingested); not in the estimates")
    if plan.sized_by_files:
        print(f"sized by their files in the local archive: {len(plan.sized_by_files)} collector(s)")
    if plan.assumed:
        cut = [c for c in plan.rates.get("partial_samples", []) if c in plan.assumed]
        print(f"sized by assumption ({plan.rates['default_entries_per_snapshot']:,} entries per RIB; no full "
              f"snapshot of theirs in DATA_DIR yet): {len(plan.assumed)} collector(s)"
              + (f"; {', '.join(cut)}: the ingested snapshots cover only the low end of the address space "
                 "(cut samples), so they do not size it" if cut else ""))
    print("time by step: " + (", ".join(f"{k} {duration(v)}" for k, v in plan.step_seconds.items() if v) or "nothing to run")
          + ("" if plan.rates["export_routes_per_s"] else " (the hints export is off: tunnels_export = false)"))
    if "sensitivity_per_compare" in plan.rates:
        print(f"sensitivity (config sensitivity = true): every variant of the method, {plan.rates['sensitivity_per_compare']:g}x "
              f"the compare's time, staging up to {plan.rates['sensitivity_staging_bytes_per_route']:g} bytes a route "
              "(a generated month measured at 4GB: runner/plan.py)")
    r = plan.rates

    def per_route(kind: str, default: str) -> str:
        months = r[f"{kind}_from_data_dir"]
        return f"{r[f'{kind}_bytes_per_route']:g} bytes a route " + (
            f"(DATA_DIR's own {', '.join(months)})" if months else f"({default})")
    print("disk: what the month adds under DATA_DIR: the routes its new snapshots add, "
          f"{per_route('routes', 'an upper bound from generated months')}; the compare's tables, "
          f"{per_route('published', 'an upper bound from generated months where half the paths pair')}; with "
          "cache_policy keep, its MRT files. staging: the most the month's run holds on top, freed when it ends "
          f"(ingest's decoded dumps, {r['staging_rates']['ingest_bytes_per_entry']:g} bytes an entry; the compare's staged "
          f"tables and spill, {r['staging_rates']['compare_bytes_per_route']:g} bytes a route"
          + (f", as DATA_DIR's own compares of {', '.join(r['staging_from_data_dir'])} peaked" if r["staging_from_data_dir"]
             else ", the generated 4GB months' peak") + "); with cache_policy delete "
          "the total's staging adds the MRT files decoded at once (concurrency x the largest)")
    if plan.export_bytes and plan.rates["export_from_data_dir"]:
        print(f"hints export (tunnels_export): about {human(plan.export_bytes)} more, "
              f"{plan.rates['export_bytes_per_route']:g} bytes a route, as DATA_DIR's own exports of "
              f"{', '.join(plan.rates['export_from_data_dir'])}")
    elif plan.export_bytes:
        print(f"hints export (tunnels_export): up to {human(plan.export_bytes)} more, "
              f"{plan.rates['export_bytes_per_route']:g} bytes a route, an upper bound from generated months where "
              "half the paths pair, until DATA_DIR has a month of its own exported (runner/plan.py)")
    print("entries: the month's estimated RIB entries; partitions and memory: the DuckDB compare's VP partitions "
          "of the month's estimated routes at duckdb_memory_limit and its estimated peak memory (pipeline/partitions.py)")
    export = f", export {r['export_routes_per_s']:,} routes/s" if r["export_routes_per_s"] else ""
    print(f"rates: ingest {r['ingest_entries_per_s']:,} entries/s, compare {r['compare_routes_per_s']:,} routes/s{export}, "
          f"reports {r['reports_seconds_per_month']:g} s a month (bench/RESULTS.md), download "
          f"{r['download_mbit_s']:g} Mbit/s (config plan_download_mbit_s)")
