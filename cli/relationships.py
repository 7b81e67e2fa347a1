"""`congruency relationships` command line: a month's AS relationships per family, and how they
compare with a published relationship file or the generator's truth."""
from __future__ import annotations

import argparse
import json
import sys

from bgp_congruency.cli.main import command_help
from bgp_congruency.common import console
from bgp_congruency.common.config import Config
from bgp_congruency.common.errors import BadInput


def _asns(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(x.strip().upper().removeprefix("AS")) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ASNs separated by commas (6939,174), got {text!r}") from None
    if not out or any(not 0 <= a <= 2**32 - 1 for a in out):
        raise argparse.ArgumentTypeError(f"expected ASNs separated by commas (6939,174), got {text!r}")
    return out


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "relationships",
        parents=parents,
        help=command_help("relationships"),
        description=(
            "The month's as_relationships (inferred by the compare from each family's paths: "
            "relationships/METHOD.md): per family the links per relationship and per step and the "
            "transit-free clique, the hybrid links (a relationship that differs between the families), "
            "and with --asn each AS's role per family. --compare FILE scores one family against a "
            "relationship file an operator downloads: CAIDA serial-1 (as-rel, as-rel.v6-stable), "
            "serial-2 (as-rel2) or BGPKIT as2rel JSON (.bz2 and .gz read as they are). --truth ARCHIVE "
            "scores both families against the generator's relationships (a month of congruency synth). "
            "--infer computes and publishes the month's relationships again (a month published before "
            "the table existed, or after the [relationships] settings changed)."
        ),
    )
    p.add_argument("--month", metavar="YYYY-MM", help="month of published results (default: the latest)")
    p.add_argument("--asn", type=_asns, default=(), metavar="ASN[,ASN...]",
                   help="print these ASes' providers, customers, peers and clique membership per family")
    p.add_argument("--compare", metavar="FILE", help="a CAIDA serial-1/serial-2 or BGPKIT as2rel file to score against")
    p.add_argument("--afi", type=int, choices=(4, 6), default=None,
                   help="with --compare: the file's family (default: 6 when its name says v6, else 4)")
    p.add_argument("--truth", metavar="ARCHIVE", help="the generated archive the month was ingested from (its "
                   "SYNTH.json): PPV and TPR per family against its relationships")
    p.add_argument("--infer", action="store_true", help="infer the month's relationships again and publish them")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.set_defaults(func=main)


def _pct(x) -> str:
    return "-" if x is None else f"{x:.1%}"


def main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.relationships import formats, summary, table
    from bgp_congruency.selector.month import resolve_month

    if args.afi is not None and not args.compare:
        raise BadInput("--afi: only with --compare FILE")
    month = resolve_month(cfg, args.month)
    ref = formats.read(args.compare, args.afi) if args.compare else None  # a bad file fails before any work
    net = None
    if args.truth:
        from bgp_congruency.synth.truth import TruthError, load

        try:
            net = load(args.truth).net
        except TruthError as exc:
            raise BadInput(f"--truth: {exc}") from None
    if args.infer:
        done = table.publish(cfg, month)
        console.warning(f"relationships {month}: published {done['path']} ({done['seconds']:.1f} s)")
    rs = summary.rows(cfg, month)
    out = summary.summary(month, rs, args.asn)
    if ref is not None:
        out["compare"] = summary.compare_file(rs, ref)
    if net is not None:
        out["truth"] = summary.compare_truth(rs, net, month)
    if args.json:
        json.dump(out, sys.stdout, indent=1, default=str)
        print()
        return 0
    _print(out)
    return 0


def _print(out: dict) -> None:
    print(f"{out['month']}: AS relationships per family (relationships/METHOD.md)")
    for afi, f in out["families"].items():
        steps = ", ".join(f"{s} {n:,}" for s, n in f["steps"].items())
        print(f"  IPv{afi}: {f['links']:,} links, {f['p2c']:,} p2c, {f['p2p']:,} p2p ({steps})")
        print(f"    clique ({len(f['clique'])}): {' '.join(map(str, f['clique'])) or '-'}")
    c = out["clique"]
    print(f"  clique in both families: {len(c['both'])}; IPv4 only: {' '.join(map(str, c['v4_only'])) or '-'}; "
          f"IPv6 only: {' '.join(map(str, c['v6_only'])) or '-'}")
    h = out["hybrid"]
    kinds = "; ".join(f"{k} {n:,}" for k, n in h["kinds"].items())
    print(f"  hybrid: {h['hybrid']:,} of the {h['both_families']:,} links seen in both families "
          f"({_pct(h['share'])}){': ' + kinds if kinds else ''}; links in one family only (both ASes in the "
          f"other): IPv4 {h['v4_only_links']:,}, IPv6 {h['v6_only_links']:,}")
    for asn, fams in out["ases"].items():
        for afi, r in fams.items():
            provs = " ".join(f"AS{a}" for a in r["providers"]) or "none (transit-free)"
            print(f"  AS{asn} IPv{afi}: {'in the clique; ' if r['in_clique'] else ''}providers {provs}; "
                  f"{r['customers']:,} customers, {r['peers']:,} peers")
    if "compare" in out:
        c = out["compare"]
        print(f"  against {c['file']} ({c['format']}, IPv{c['afi']}): {c['both']:,} links in both, "
              f"{c['agree']:,} agree ({_pct(c['agreement'])}); p2c agree {_pct(c['p2c']['ppv'])} of ours, "
              f"p2p {_pct(c['p2p']['ppv'])}")
        print(f"    {_decided(c['decided'])}")
        for s, n in c.get("steps", {}).items():
            print(f"    {s:<16} {n['links']:>7,} links in both, {_pct(n['agree'] / n['links'] if n['links'] else None)} agree")
        print(f"    clique: month {' '.join(map(str, c['clique']['month']))}; file "
              f"{' '.join(map(str, c['clique']['file'])) or '-'}")
        for d in c["disagreements"][:10]:
            print(f"    AS{d['link'][0]}-AS{d['link'][1]}: month {d['month']}, file {d['file']} ({d['paths']:,} paths)")
    if "truth" in out:
        for afi in (4, 6):
            t = out["truth"][afi]
            print(f"  IPv{afi} against the generator: p2c PPV {_pct(t['p2c']['ppv'])} TPR {_pct(t['p2c']['tpr'])}; "
                  f"p2p PPV {_pct(t['p2p']['ppv'])} TPR {_pct(t['p2p']['tpr'])}")
            print(f"    {_decided(t['decided'])}")
        h = out["truth"]["hybrid"]
        print(f"  hybrid links found {h['found']:,}, true {h['true']:,}, right {h['correct']:,} "
              f"(precision {_pct(h['precision'])}, recall {_pct(h['recall'])})")


def _decided(d: dict) -> str:
    """One line on the links valley-free evidence decided (the rest are p2p by default)."""
    return (f"decided links ({_pct(d['share_decided'])} of those in both): p2c {d['p2c']['decided']:,}, "
            f"{_pct(d['p2c']['ppv'])} right; p2p {d['p2p']['decided']:,}, {_pct(d['p2p']['ppv'])} right; "
            f"undecided (p2p by default) {d['undecided']['links']:,}, {d['undecided']['agree']:,} right")
