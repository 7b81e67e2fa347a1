"""`congruency trace` command line: router-level congruency of one destination from traceroutes."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bgp_congruency.cli.main import command_help
from bgp_congruency.common.config import Config
from bgp_congruency.dataplane.traces import METHODS, TraceError


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "trace",
        parents=parents,
        help=command_help('trace'),
        description=(
            "Read traceroutes toward one dual-stacked destination (RIPE Atlas results, scamper warts "
            "files, or a live scamper run from this host), take each family's stable path (the hop "
            "sequence of at least 70% of the traces; an unanswered hop agrees with any address, "
            "several addresses at one TTL are a load-balanced hop), map every hop to its AS by "
            "longest-prefix match over the month's RIB prefixes (private and unmapped hops shown "
            "as such), check the AS path against the BGP paths `advise` gives for the source and "
            "destination, and compare the two families at AS level and at router level (shared "
            "routers need --aliases; without it the router-level answer is a lower bound). "
            "Exit 2 on a bad file or argument."
        ),
    )
    src = p.add_argument_group("traceroutes (one or more)")
    src.add_argument("--atlas", action="append", default=[], metavar="FILE",
                     help="RIPE Atlas traceroute results (JSON array or one object per line)")
    src.add_argument("--warts", action="append", default=[], metavar="FILE", help="scamper warts file")
    src.add_argument("--live", action="append", default=[], metavar="ADDR",
                     help="run scamper from this host to ADDR (give one IPv4 and one IPv6 address; needs root)")
    p.add_argument("--method", default="icmp-paris", choices=METHODS, help="live probing method (default icmp-paris)")
    p.add_argument("--count", type=int, default=5, metavar="N", help="live traceroutes per address (default 5)")
    p.add_argument("--keep", metavar="FILE", help="keep the live run's warts file here")
    p.add_argument("--from", dest="source", metavar="ASN",
                   help="the traces' source AS (default: the AS of their source address in the month)")
    p.add_argument("--to", action="append", metavar="ADDR",
                   help="the destination's address in a family (give it twice for both); only the families "
                        "named are compared (default: every family whose traces go to one destination)")
    p.add_argument("--source", dest="source_addr", action="append", metavar="ADDR",
                   help="the traces' source address in a family, where they come from several (one stable path "
                        "is one source's)")
    p.add_argument("--month", metavar="YYYY-MM", help="month of published results (default: the latest)")
    p.add_argument("--aliases", metavar="FILE",
                   help="router aliases: one router per line, its addresses separated by spaces")
    p.add_argument("--store", action="store_true",
                   help="keep the answer with the month: one row per family in DATA_DIR/traces (docs/SCHEMA.md)")
    p.add_argument("--json", action="store_true", help="print the answer as JSON on stdout")
    p.set_defaults(func=main)


def read_aliases(path: str) -> list[list[str]]:
    from bgp_congruency.dataplane.traces import address

    out = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise TraceError(f"--aliases {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise TraceError(f"--aliases {path}: not text (one router a line, its addresses separated by spaces)") from None
    for n, line in enumerate(lines, 1):
        words = [address(w, f"--aliases {path} line {n}")[0] for w in line.split("#")[0].split()]
        if words:
            out.append(words)
    return out


def main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.dataplane import traces as T
    from bgp_congruency.dataplane.analysis import analyse

    if not (args.atlas or args.warts or args.live):
        raise TraceError("give traceroutes: --atlas FILE, --warts FILE or --live ADDR")
    got = [t for f in args.atlas for t in T.read_atlas(f)] + [t for f in args.warts for t in T.read_warts(f)]
    if args.live:
        got += T.run_scamper(args.live, args.method, args.count, Path(args.keep) if args.keep else None)
    answer = analyse(cfg, got, source=args.source, to=args.to, month=args.month, sources=args.source_addr,
                     aliases=read_aliases(args.aliases) if args.aliases else None)
    if args.store:
        from bgp_congruency.common import console
        from bgp_congruency.dataplane.table import store

        console.note(f"stored in {store(cfg.data_dir, answer)}")
    if args.json:
        json.dump(answer, sys.stdout, indent=1)
        print()
        return 0
    print(f"{answer['month']}: AS{answer['source_asn']} -> "
          + ", ".join(f["destination"] for f in answer["families"].values()))
    for fam, f in answer["families"].items():
        held = f"{f['stable_support']} of them ({f['stable_share']:.0%})"
        print(f"IPv{fam}: {f['traces']} trace(s) to {f['destination']}; " +
              (f"stable path: {held}" if f["stable"] else
               f"no stable path: the most common hop sequence, below, holds {held}, under 70%"))
        for h in f["hops"]:
            where = (f"AS{h['asn']} {h['prefix']}" if h["asn"] is not None else
                     "/".join(f"AS{a}" for a in h["asns"]) if h["asns"] else h["kind"])
            lb = " (load-balanced)" if h["load_balanced"] else ""
            print(f"  {h['ttl']:>3}  {', '.join(h['addresses']) or '*'}{lb}  {where}")
        print(f"  AS path {' '.join(map(str, f['as_path'])) or '-'}; BGP {' '.join(map(str, f['bgp_path'] or [])) or '-'}"
              f": {f['agreement']}")
    c = answer["comparison"]
    if c["as_level"]:
        shared = f" (shared: {' '.join(map(str, c['shared_asns']))})" if c["shared_asns"] else ""
        r = c["router_level"]
        print(f"IPv4 vs IPv6: AS level {c['as_level']}{shared}; router level "
              f"{len(r['shared_routers'])} shared router(s): {r['note']}")
    for line in answer["missing"]:
        print(line)
    a = answer["advise"]
    print(f"advise: {a['hint_class']}, {a['mode']}" + (f" ({a['reason']})" if a.get("reason") else ""))
    return 0
