"""`congruency ingest` command line."""
from __future__ import annotations

import argparse
import json
import sys

from bgp_congruency.cli.main import command_help
from bgp_congruency.common import console, months, s3
from bgp_congruency.common.config import BACKENDS, Config
from bgp_congruency.common.errors import BadInput
from bgp_congruency.ingest import backends, catalogue, discovery

COLLECTORS_HELP = ("all, routeviews, ris, or comma-separated collector names (default route-views2,route-views6); "
                   "only those active in the month are fetched, the others are 'inactive' in the manifest "
                   "(see congruency catalogue list)")


def check_collectors(cfg: Config) -> None:
    """ValueError naming --collectors (or the catalogue file) when the selection is bad."""
    try:
        catalogue.expand(cfg.collectors, cfg.catalogue)
    except KeyError as exc:
        raise BadInput(f"--collectors: {exc.args[0]}") from None
    known = catalogue.projects(cfg.catalogue)
    for name in cfg.archive_roots:  # a misspelt project would silently fall back to the public archive
        if name not in known:
            raise BadInput(f"archive_roots: unknown project {name!r} (the catalogue's: {', '.join(sorted(known))})")


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ingest",
        parents=parents,
        help=command_help('ingest'),
        description=(
            "Discover the RIB snapshots of a month window in the RouteViews / RIPE RIS "
            "archives, download them (cached, resumable), check every MRT record, decode "
            "them, then merge each collector's dumps into its routes "
            "(DATA_DIR/routes/month=YYYY-MM/collector=NAME/: each route once, with the snapshots that "
            "saw it; the rib_entries view gives every entry back). A manifest records what "
            "happened to each snapshot (ok, missing, failed, or inactive: the collector was not "
            "running then, per the catalogue's lifetimes); a re-run retries only what failed. "
            "Exit 1 when the month's coverage is below the policy (config min_snapshot_share, "
            "min_project_share; default: every planned snapshot ok) unless --tolerate-failures, "
            "2 for bad arguments."
        ),
    )
    p.add_argument("--month", required=True, help="the month, YYYY-MM")
    p.add_argument("--days", help="days of the month: 30, 1-5, 1,15 (default 1-5)")
    p.add_argument("--times", help="UTC times of day, HH:MM[,HH:MM...] (default 00:00)")
    p.add_argument("--collectors", help=COLLECTORS_HELP)
    p.add_argument("--archive-root", help="one archive root (http(s):// URL or local folder) "
                   "for every collector, instead of the public archives")
    p.add_argument("--source", nargs=2, metavar=("KIND", "FILE"),
                   help="where the RIB dumps are listed instead of the archives: bgpstream-csv FILE, a "
                        "BGPStream csvfile listing (path,project,type,collector,file time,span,written)")
    p.add_argument("--backend", choices=BACKENDS, help="MRT decoder (default native: the built-in one-pass decoder)")
    p.add_argument("--concurrency", type=int, help="snapshots processed at once (default 2)")
    p.add_argument("--tolerance-minutes", type=int,
                   help="a missing snapshot may be replaced by the nearest dump this close (default 120)")
    p.add_argument("--tolerate-failures", action="store_true", default=None,
                   help="exit 0 even when some snapshots failed or are missing")
    p.add_argument("--json", action="store_true", help="print the run's manifest rows as JSON on stdout")
    p.set_defaults(func=main)


def main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.ingest import run as ingest_run

    overrides = dict(
        archive_root=args.archive_root, backend=args.backend, concurrency=args.concurrency,
        tolerance_minutes=args.tolerance_minutes, tolerate_failures=args.tolerate_failures,
        days=discovery.parse_days(args.days) if args.days else None,
        times=discovery.parse_times(args.times) if args.times else None,
        collectors=catalogue.parse_spec(args.collectors) if args.collectors is not None else None,
    )
    if args.source:
        kind, listing = args.source
        if kind != "bgpstream-csv":
            raise BadInput(f"--source: unknown kind {kind!r} (bgpstream-csv)")
        from bgp_congruency.ingest import bgpstream_csv

        try:
            bgpstream_csv.read(listing)
        except bgpstream_csv.ListingError as exc:
            raise BadInput(f"--source: {exc}") from None
        overrides["bgpstream_csv"] = listing
    months.parse_month(args.month)
    months.check_not_future([args.month])
    if args.concurrency is not None and args.concurrency < 1:
        raise BadInput(f"--concurrency: expected 1 or more snapshots at once, got {args.concurrency}")
    cfg = cfg.with_overrides(**overrides)
    if isinstance(cfg.data_dir, str) and not s3.is_s3(cfg.data_dir):
        raise BadInput(f"--data-dir: ingest writes to a local folder or s3://, not {cfg.data_dir}")
    check_collectors(cfg)
    months.check_days([args.month], cfg.days)
    backends.get(cfg.backend)

    from bgp_congruency.ingest import manifest, policy

    def report(row):
        if row.status not in ("ok", "inactive"):
            console.error(f"{row.collector} {row.target_time:%Y-%m-%d %H:%M}: {row.error}")

    with console.progress(transfer=True) as prog:
        outcome = ingest_run.run(cfg, args.month, progress=prog, on_row=report)

    ok = [r for r in outcome.rows if r.status == "ok"]
    inactive = sum(r.status == "inactive" for r in outcome.rows)
    cov = policy.for_config([r for k, r in manifest.read(cfg.data_dir, args.month).items() if k in outcome.keys], cfg)
    if args.json:
        json.dump(
            {
                "month": args.month,
                "manifest": str(outcome.manifest_path),
                "already_done": outcome.skipped_done,
                "coverage": cov.to_dict(),
                "snapshots": [r.to_dict() for r in outcome.rows],
            },
            sys.stdout, default=str, indent=1,
        )
        print()
    else:
        console.err.print(
            f"ingest {args.month}: {len(ok)} published, {len(outcome.failed)} failed or missing, "
            f"{outcome.skipped_done} already done, {inactive} inactive; "
            f"{sum((r.entries_v4 or 0) + (r.entries_v6 or 0) for r in ok):,} entries; "
            f"manifest {outcome.manifest_path}; coverage: {cov.reason}"
            + ("" if cov.go_on else " (below the policy: exit 1)")
        )
    return 0 if cov.go_on else 1
