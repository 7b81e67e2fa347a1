"""`congruency advise` command line: path-selector advice for one source and destination."""
from __future__ import annotations

import argparse
import json
import sys

from bgp_congruency.cli.main import command_help
from bgp_congruency.common import console
from bgp_congruency.common.config import Config


def add_question(p: argparse.ArgumentParser) -> None:
    """The question's flags, shared by advise and export."""
    p.add_argument("--from", dest="source", metavar="ASN",
                   help="source AS (a VP, or any AS: then, in order, the VPs whose paths cross it; for a stub its "
                        "neighbours' routes, else its one neighbour's class; for any other AS the class most pairs to "
                        "the destination show; last, the VPs it hands traffic to; see docs/guide.md); "
                        "GROUP:ASN picks one VP. With declared neighbours or traces, any AS (a private ASN, one "
                        "no collector sees). Default: the --endpoints file's [source] asn")
    p.add_argument("--to", action="append", metavar="ADDR|PREFIX|ASN",
                   help="destination: an ASN, a prefix or an IP address; give --to twice for one host's "
                        "IPv4 and IPv6 addresses")
    p.add_argument("--month", metavar="YYYY-MM", help="month of published results (default: the latest)")
    p.add_argument("--endpoints", metavar="FILE",
                   help="TOML of candidate tunnel endpoints ([[endpoint]] name, ipv4, ipv6, and for mpt tunnel): rank their "
                        "underlay paths and choose --k of them")
    p.add_argument("--k", type=int, metavar="N", help="paths to choose among the endpoints' (default 2)")
    g = p.add_argument_group("the source's own evidence (a source that is no VP; docs/guide.md)")
    for afi in (4, 6):
        g.add_argument(f"--via{afi}", metavar="AS[:REL][,AS...]",
                       help=f"the ASes the source hands IPv{afi} traffic to, the primary first; REL is what each "
                            "is to it: provider (the default), peer or customer")
    g.add_argument("--atlas", metavar="FILE", help="RIPE Atlas traceroute results from the source host: each "
                   "destination's first hop in another AS is its neighbour toward it")
    g.add_argument("--warts", metavar="FILE", help="scamper warts traceroutes from the source host, read as --atlas")
    g.add_argument("--stored-traces", action="store_true",
                   help="the month's traces of the source stored by `congruency trace --store`, read as --atlas")


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "advise",
        parents=parents,
        help=command_help('advise'),
        description=(
            "Read the month's published paths (DATA_DIR/paths, vps, pairs; prefix_origins for address "
            "lookups) and print one hint per (source, destination): the IPv4 and IPv6 AS paths, a "
            "class (disjoint, shared-edge, shared-core, congruent, unknown with its reason), the "
            "shared ASes, a confidence, and advice (mode aggregate|backup|single-path, path manager, "
            "congestion control, transport). Addresses map to their origin AS by longest-prefix "
            "match over the month's prefixes, per family. AS-level disjointness is a lower bound. "
            "Exit 2 on bad input (ASN, prefix, address, month, endpoints file)."
        ),
    )
    add_question(p)
    p.add_argument("--json", action="store_true", help="print the answer as JSON on stdout")
    p.set_defaults(func=main)


def source_evidence(args: argparse.Namespace, cfg: Config, month: str):
    """The source's evidence from the flags, the endpoints file's [source] table and the
    config's [source] (when it names the --from AS); traces last (their first hops win for
    the destinations they reach). Bad input fails here, before any answer."""
    from bgp_congruency.selector.question import Evidence, evidence_of, load_source, parse_source

    src = parse_source(args.source).asn
    ev = evidence_of(args.via4, args.via6)
    if args.endpoints:
        ev = ev.merged(load_source(args.endpoints)[1])
    if cfg.source.asn == src:
        ev = ev.merged(evidence_of(cfg.source.via4, cfg.source.via6, what="[source] "))
    traced = Evidence(how="traces")
    if args.atlas or args.warts or args.stored_traces:  # the trace readers load only for traces
        from bgp_congruency.dataplane import first_hops
        from bgp_congruency.dataplane.traces import read_atlas, read_warts
    if args.atlas:
        traced = traced.merged(first_hops.evidence(cfg, month, read_atlas(args.atlas), src, "traces"))
    if args.warts:
        traced = traced.merged(first_hops.evidence(cfg, month, read_warts(args.warts), src, "traces"))
    if args.stored_traces:
        traced = traced.merged(first_hops.stored_evidence(cfg, month, src))
    return ev.merged(traced) if traced else ev


def source_of(args: argparse.Namespace) -> None:
    """--from, or the endpoints file's [source] asn (they must agree when both are given)."""
    from bgp_congruency.selector.question import HintError, load_source, parse_source

    asn = load_source(args.endpoints)[0] if args.endpoints else None
    if args.source is None and asn is None:
        raise HintError("--from: the source AS is required (or the --endpoints file's [source] asn)")
    if asn is not None and args.source is not None and parse_source(args.source).asn != asn:
        raise HintError(f"--from: AS{parse_source(args.source).asn}, but {args.endpoints}'s [source] asn is AS{asn}")
    if args.source is None:
        args.source = str(asn)


def ask(args: argparse.Namespace, cfg: Config) -> dict:
    from bgp_congruency.selector.advice import advise
    from bgp_congruency.selector.month import resolve_month

    source_of(args)
    month = resolve_month(cfg, args.month)
    ev = source_evidence(args, cfg, month)
    return advise(cfg, args.source, args.to, month=month, endpoints=args.endpoints, k=args.k, evidence=ev or None)


def main(args: argparse.Namespace, cfg: Config) -> int:
    answer = ask(args, cfg)
    sel = answer["selection"]
    if sel and sel["note"]:
        console.note(sel["note"])
    if args.json:
        json.dump(answer, sys.stdout, indent=1)
        print()
        return 0
    for h in answer["hints"]:
        print(text(h))
    if sel:
        print("ranked underlay paths (best first): " + "; ".join(
            f"{r['endpoint']} IPv{r['afi']} {path(r['path'])} (stability {r['stability']:.2f})" for r in sel["ranking"]))
        print(f"chosen k={sel['k']}: " + ", ".join(f"{r['endpoint']} IPv{r['afi']}" for r in sel["chosen"])
              + f"; shared ASes: {', '.join(f'AS{a}' for a in sel['shared_asns']) or 'none'}")
    return 0


def path(p) -> str:
    return " ".join(str(a) for a in p) if p else "-"


def text(h: dict) -> str:
    """A hint for people: a few lines."""
    who = f"AS{h['source_asn']}" + (f" (via VP {h['vp_group']}:AS{h['vp_asn']})" if h["vp_asn"] else "")
    to = (f"{h['endpoint']} " if h["endpoint"] else "") + f"{h['query'] or h['dest_asn']}"
    lines = [f"{who} -> {to} [{h['month']}]: {h['hint_class']}"
             + (f" ({h['reason']})" if h["reason"] else "")
             + f", confidence {h['confidence']:.2f}"
             + (f", rule {h['rule']}" if h.get("rule") and h["rule"] != "vp" else "")
             + (f" (right {h['rule_accuracy']:.0%} of the time in the month's evaluation)"
                if h.get("rule_accuracy") is not None and h["hint_class"] != "unknown" else ""),
             f"  IPv4 path: {path(h['v4_path'])}" + (f"  ({h['prefix_v4']})" if h["prefix_v4"] else "")
             + (f"  via AS{h['via_v4']}" if h.get("via_v4") else ""),
             f"  IPv6 path: {path(h['v6_path'])}" + (f"  ({h['prefix_v6']})" if h["prefix_v6"] else "")
             + (f"  via AS{h['via_v6']}" if h.get("via_v6") else ""),
             f"  shared ASes: {', '.join(f'AS{a}' for a in h['shared_asns']) or 'none'}",
             f"  mode: {h['mode']}. {h['rationale']}",
             f"  path manager: {h['path_manager']}",
             f"  congestion control: {h['congestion_control']}",
             f"  transport: {h['transport']}"]
    lines += [f"  note: {n}" for n in h["notes"]]
    lines.append(f"  {h['caveat']}")
    return "\n".join(lines)
