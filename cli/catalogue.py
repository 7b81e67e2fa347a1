"""`congruency catalogue list|refresh`: the collectors, when they ran, and where that comes from."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bgp_congruency.cli.main import command_help
from bgp_congruency.common import console
from bgp_congruency.common.config import Config


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    from bgp_congruency.ingest.catalogue_sources import RIPESTAT_URL, ROUTEVIEWS_URL

    p = sub.add_parser(
        "catalogue", parents=parents,
        help=command_help('catalogue'),
        description="The collector catalogue: every RouteViews and RIS collector with an MRT archive, "
                    "its archive folders, the families its RIBs carry and its active period, each with "
                    "its source. The shipped ingest/catalogue.toml is used unless the config's "
                    "`catalogue` names another file.",
    )
    cs = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = cs.add_parser("list", parents=parents, help="the collectors (active in --month), one line each",
                       description="List the catalogue's collectors: project, families, active period, "
                                   "source; with --month only those active in it (and 'partial' where one "
                                   "starts or stops inside it). Families no source gives are shown as "
                                   "observed in DATA_DIR's ingested snapshots, if any.")
    ls.add_argument("--month", metavar="YYYY-MM", help="only the collectors active in this month")
    ls.add_argument("--collectors", help="all (default), routeviews, ris, or names")
    ls.add_argument("--json", action="store_true", help="print the list as JSON on stdout")
    ls.set_defaults(func=list_main)
    rf = cs.add_parser("refresh", parents=parents, help="rebuild the catalogue from the projects' metadata",
                       description="Fetch RIPEstat rrc-info and the RouteViews collector list (every page) "
                                   "and write a catalogue updated with their lifetimes and multihop flags; "
                                   "archive paths, families and collectors the sources don't list are kept "
                                   "from the current catalogue, and families no source gives are filled in "
                                   "from DATA_DIR's ingested snapshots. Written atomically; nothing is "
                                   "written when a source fails. Use the result with `catalogue = FILE` in "
                                   "the config.")
    rf.add_argument("--ripestat", default=RIPESTAT_URL, metavar="URL", help=f"rrc-info URL or file (default {RIPESTAT_URL})")
    rf.add_argument("--routeviews", default=ROUTEVIEWS_URL, metavar="URL",
                    help=f"RouteViews collector list URL or file (default {ROUTEVIEWS_URL})")
    rf.add_argument("--out", metavar="FILE", help="where to write (default DATA_DIR/catalogue.toml)")
    rf.add_argument("--json", action="store_true", help="print what changed as JSON on stdout")
    rf.set_defaults(func=refresh_main)


def _observed(cfg: Config) -> dict:
    from bgp_congruency.ingest.catalogue_sources import observed_afis

    d = cfg.data_dir
    return observed_afis(Path(d)) if not isinstance(d, str) and Path(d).is_dir() else {}


def list_main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.common.months import listed, parse_month
    from bgp_congruency.ingest import catalogue

    try:
        spec = catalogue.parse_spec(args.collectors) if args.collectors else ("all",)
        if args.month:
            parse_month(args.month)
        cat = catalogue.load(cfg.catalogue)
        names = catalogue.expand(spec, cfg.catalogue)
    except KeyError as exc:
        console.error(f"--collectors: {exc.args[0]}")
        return 2
    seen = _observed(cfg)
    rows = []
    for n in names:
        c = cat[n]
        state = c.month_state(args.month) if args.month else None
        if state == "inactive":
            continue
        state = catalogue.PROBE if state == "unknown" else state
        afis, afis_source = list(c.afis), c.afis_source
        if not afis and n in seen:
            afis, months = list(seen[n][0]), seen[n][1]
            afis_source = f"observed in {cfg.data_dir} ({listed(months)})"
        rows.append({"name": n, "project": c.project.name, "state": state, "afis": afis,
                     "afis_source": afis_source or "unknown", "active_from": c.active_from,
                     "active_until": c.active_until, "evidence_from": c.evidence_from,
                     "multihop": c.multihop, "path": c.path, "legacy_paths": list(c.legacy_paths),
                     "source": c.source, "note": c.note})
    if args.json:
        json.dump({"month": args.month, "catalogue": str(cfg.catalogue or catalogue.CATALOGUE),
                   "collectors": rows}, sys.stdout, indent=1)
        print()
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"collectors active in {args.month}" if args.month else "collectors", title_justify="left")
    for col in ("name", "project", "families", "active", "source") + (("state",) if args.month else ()):
        t.add_column(col)
    for r in rows:
        life = f"{r['active_from'] or ('? (seen ' + r['evidence_from'] + ')' if r['evidence_from'] else '?')}" \
               f" .. {r['active_until'] or 'now'}"
        fam = "+".join(f"v{a}" for a in r["afis"]) or "unknown"
        if r["afis"] and r["afis_source"].startswith("observed"):
            fam += " (observed)"
        cells = [r["name"], r["project"], fam, life, r["source"]] + ([r["state"]] if args.month else [])
        t.add_row(*cells)
    Console(file=sys.stdout, width=160).print(t)
    if args.month:  # the words of `congruency plan`: active (or partly), and to probe
        probe = sum(r["state"] == catalogue.PROBE for r in rows)
        partial = sum(r["state"] == "partial" for r in rows)
        print(f"{len(rows) - probe} collector(s) active in {args.month}"
              + (f" ({partial} of them for part of the month)" if partial else "")
              + (f", {probe} to probe (no source gives their start; a run lists their month folder, "
                 "none = inactive)" if probe else ""))
    else:
        print(f"{len(rows)} collector(s)")
    return 0


def refresh_main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.common import atomic
    from bgp_congruency.ingest import catalogue, download
    from bgp_congruency.ingest import catalogue_sources as cs

    if isinstance(cfg.data_dir, str) and not args.out:
        console.error(f"--out: required when the data dir is not a local folder ({cfg.data_dir})")
        return 2
    out = Path(args.out) if args.out else Path(cfg.data_dir) / "catalogue.toml"
    if out.is_dir():
        console.error(f"--out: {out} is a folder; name a file")
        return 2
    try:
        res = cs.refresh(cfg.catalogue, ripestat=args.ripestat, routeviews=args.routeviews,
                         data_dir=None if isinstance(cfg.data_dir, str) else Path(cfg.data_dir), timeout=cfg.timeout_s)
    except (download.DownloadError, cs.SourceError, catalogue.CatalogueError) as exc:
        console.error(f"catalogue refresh: {exc}; nothing written")
        return 1
    atomic.write_text(out, cs.to_toml(res.collectors, res.projects))
    catalogue.load(out)  # what was written loads
    summary = {"catalogue": str(out), "collectors": len(res.collectors), "added": res.added,
               "changed": res.changed, "families_learned": res.learned}
    if args.json:
        json.dump(summary, sys.stdout, indent=1)
        print()
    else:
        console.err.print(f"catalogue: {len(res.collectors)} collectors written to {out}: "
                          f"{len(res.added)} added, {len(res.changed)} changed, families learned for "
                          f"{len(res.learned)}; use it with catalogue = \"{out}\" in the config")
    return 0
