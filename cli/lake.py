"""`congruency lake` command line: the catalog of the published tables (lake/attach.py, lake/upkeep.py):
its snapshots, their expiry, and registering a data dir published before it."""
from __future__ import annotations

import argparse
import json
import sys

from bgp_congruency.cli.main import command_help
from bgp_congruency.common import console
from bgp_congruency.common.config import Config


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "lake",
        parents=parents,
        help=command_help('lake'),
        description=(
            "The published tables live in a DuckLake catalog (DATA_DIR/catalog.sqlite): every "
            "publish is one snapshot, readers see one snapshot at a time, and an old snapshot can "
            "be read again (congruency query --as-of N, or lake.connect(data_dir, snapshot=N)) "
            "until vacuum expires it. `snapshots` lists them; `vacuum` expires all but the newest "
            "--keep and deletes the files no kept snapshot needs, once they have been let go for "
            "--grace seconds (`congruency run` does this in its lake step, from the config's "
            "lake_keep_snapshots and lake_vacuum_grace_s); `migrate` registers the tables of a "
            "data dir published before the catalog, in place; `relocate` makes a copied or moved "
            "data dir's catalog name its own files, and repairs the paths an earlier version registered "
            "as a relative --data-dir was spelled (run it with nothing else using the data dir)."
        ),
    )
    p.add_argument("action", choices=("snapshots", "vacuum", "migrate", "relocate"), help="what to do")
    p.add_argument("--keep", type=int, metavar="N", help="vacuum: snapshots to keep (default: the config's lake_keep_snapshots)")
    p.add_argument("--grace", type=float, metavar="SECONDS",
                   help="vacuum: delete only files let go this long ago (default: the config's lake_vacuum_grace_s)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.set_defaults(func=main)


def main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.common import layout
    from bgp_congruency.lake import attach, upkeep

    root = layout.readable(cfg.data_dir, "congruency lake") if args.action in ("snapshots", "vacuum") else \
        layout.local(cfg.data_dir, f"congruency lake {args.action}")
    if args.action == "snapshots":
        with attach.opened(root) as con:
            out = [{"snapshot": i, "at": str(at), "author": a, "message": m} for i, at, a, m in con.execute(
                f"SELECT snapshot_id, snapshot_time, author, commit_message FROM {attach.ALIAS}.snapshots() "
                "ORDER BY 1").fetchall()]
        if args.json:
            json.dump(out, sys.stdout, indent=1)
            print()
        else:
            for s in out:
                print(f"{s['snapshot']:>6}  {s['at'][:19]}  {s['message'] or '(catalog: tables created)'}")
        return 0
    if args.action == "vacuum":
        keep = cfg.lake_keep_snapshots if args.keep is None else args.keep
        grace = cfg.lake_vacuum_grace_s if args.grace is None else args.grace
        out = upkeep.vacuum(root, keep, grace)
    elif args.action == "relocate":
        out = upkeep.relocate(root)
    else:
        done = upkeep.migrate(root)
        out = {"migrated": done}
        if not done and not args.json:
            console.err.print(f"{root}: nothing to migrate (no table published before the catalog, "
                              "or the catalog has every such month)", soft_wrap=True)
            return 0
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        print()
    elif args.action == "vacuum":
        busy = f"; being run, left for the next vacuum: {', '.join(out['months_busy'])}" if out["months_busy"] else ""
        console.err.print(f"vacuum {root}: {out['snapshots_expired']} snapshots expired, {out['snapshots_kept']} kept, "
                          f"{out['files_deleted']} files deleted, {out['folders_removed']} folders removed{busy}",
                          soft_wrap=True)
    elif args.action == "relocate":
        moved = (f"{out['paths']} file paths moved from {out['from']} to {out['to']}" if out["from"] != out["to"]
                 else f"already the catalog of {out['to']}")
        console.err.print(f"relocate {root}: {moved}; {out['repaired']} paths registered by another folder repaired",
                          soft_wrap=True)
    else:
        for m, ts in out["migrated"].items():
            console.err.print(f"migrated {m}: {', '.join(ts)}", soft_wrap=True)
    return 0
