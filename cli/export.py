"""`congruency export` command line: hints as JSON Lines, a Linux MPTCP script or an MPT file."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bgp_congruency.cli.main import command_help
from bgp_congruency.common import atomic, console
from bgp_congruency.common.config import Config
from bgp_congruency.common.errors import BadInput


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    from bgp_congruency.cli.advise import add_question

    p = sub.add_parser(
        "export",
        parents=parents,
        help=command_help('export'),
        description=(
            "jsonl: the hints as JSON Lines, schema congruency.hints/1 (selector/exports/jsonl.py): the "
            "answer to --from/--to/--endpoints, or without --from every pair of the month (its "
            "published hints table, else built on the fly). mptcp: a POSIX sh script for upstream "
            "Linux MPTCP (sysctl net.mptcp.enabled=1, ip mptcp limits, one ip mptcp endpoint per "
            "local address): it checks devices and addresses first, restores what it found if applying "
            "fails, and is idempotent; it replaces every MPTCP endpoint of the network namespace it runs "
            "in (ip mptcp endpoint flush, then the hint's endpoints); --role server writes the peer's side "
            "(a warning when its interfaces do not hold the --to addresses). mpt: an MPT (GRE-in-UDP "
            "multipath tunnel) connection file per remote peer (--tunnel-local, --tunnel-remote or the "
            "endpoints' `tunnel`), one [path_N] per underlay path; several peers need --out FILE and "
            "get FILE-NAME.conf each. mptcp and mpt need --from, --to or --endpoints, and "
            "your interfaces (--interfaces FILE or --interface NAME=ADDR[/LEN][@GATEWAY]); every value is "
            "validated before it is written (no broadcast, loopback, multicast, unspecified, "
            "link-local or IPv4-mapped address; with /LEN the subnet's network or broadcast address as an "
            "interface address, or a gateway outside the subnet, is refused; --tunnel-local equal to the "
            "remote tunnel address is refused). --out's folder must exist. "
            "Exit 2 on bad input, 3 when the data cannot back a config (no known path, or a family "
            "the hint uses without an interface): nothing is written then."
        ),
    )
    p.add_argument("--format", required=True, choices=("jsonl", "mptcp", "mpt"),
                   help="jsonl: hints as JSON Lines; mptcp: an ip-mptcp sh script; mpt: an MPT connection file")
    p.add_argument("--out", metavar="FILE", help="file to write (default: stdout)")
    add_question(p)
    p.add_argument("--interfaces", metavar="FILE", help="TOML of [[interface]] name, address, gateway")
    p.add_argument("--interface", action="append", default=[], metavar="NAME=ADDR[/LEN][@GATEWAY]",
                   help="a local interface and its address (repeat; the gateway is needed for mpt)")
    p.add_argument("--role", choices=("client", "server"), default="client",
                   help="mptcp: client endpoints use the hint's subflow flags, a server signals its addresses")
    p.add_argument("--tunnel-local", metavar="ADDR", help="mpt: this side's tunnel address")
    p.add_argument("--tunnel-remote", metavar="ADDR",
                   help="mpt: the peer's tunnel address (with --endpoints: each [[endpoint]]'s `tunnel`)")
    p.add_argument("--tunnel-port", type=int, default=65050, metavar="PORT",
                   help="mpt: the tunnel's UDP port on both sides (default 65050)")
    p.add_argument("--keepalive", type=int, default=5, metavar="S", help="mpt keepalive_time (default 5)")
    p.add_argument("--dead-time", type=int, default=11, metavar="S", help="mpt dead_time (default 11)")
    p.set_defaults(func=main)


def _interfaces(args):
    from bgp_congruency.selector.exports import local

    if args.interfaces and args.interface:
        raise local.v.ValidationError("--interfaces and --interface: give one of them")
    if args.interfaces:
        return local.load(args.interfaces)
    if not args.interface:
        raise local.v.ValidationError(f"--format {args.format}: your interfaces are needed "
                                      "(--interfaces FILE or --interface NAME=ADDR[@GATEWAY])")
    return local.check([local.parse_flag(t) for t in args.interface])


def _check_server_addresses(hints: list[dict], ifaces, sel) -> None:
    """A server's config is for the host the hint was computed for: its interfaces should hold
    the --to (or endpoint) addresses, or the paths advised are not the ones its clients use."""
    import ipaddress

    mine = {ipaddress.ip_address(i.address) for i in ifaces}
    for h in hints if not sel else hints[:1]:
        for afi in (4, 6):
            want = h.get(f"addr_v{afi}")
            if want and ipaddress.ip_address(want) not in mine:
                have = ", ".join(f"{i.name} {i.address}" for i in ifaces if i.version == afi) or "none"
                console.warning(f"--role server: the hint was computed for the IPv{afi} address {want}, but "
                                f"this server's IPv{afi} interfaces are {have}; its clients' paths may differ")


def render(args: argparse.Namespace, cfg: Config) -> str | dict | None:
    """The text to write, {file: text} for MPT (a file per peer), or None for a month-wide
    JSONL export (streamed by main)."""
    from bgp_congruency.cli.advise import ask, source_of
    from bgp_congruency.selector.exports import jsonl, mpt, mptcp

    if not args.source and args.endpoints:
        source_of(args)  # the endpoints file's [source] asn
    if args.format == "jsonl" and not args.source:
        if args.to or args.endpoints or args.k:
            raise BadInput("--to/--endpoints/--k need --from")
        return None
    if not args.source:
        raise BadInput(f"--from: required for --format {args.format}")
    ifaces = None if args.format == "jsonl" else _interfaces(args)  # bad flags fail before any reading
    answer = ask(args, cfg)
    hints, sel = answer["hints"], answer["selection"]
    chosen = {(r["endpoint"], r["afi"]) for r in sel["chosen"]} if sel else None
    notes = [sel["note"]] if sel and sel["note"] else []
    for n in notes:
        console.note(n)
    if args.format == "jsonl":
        rows = [dict(h, selected=sorted(a for e, a in chosen if e == h["endpoint"])) if sel else h for h in hints]
        return "".join(jsonl.line(r) + "\n" for r in rows)
    if args.format == "mptcp" and args.role == "server":
        _check_server_addresses(hints, ifaces, sel)
    if args.format == "mptcp":
        if not sel:
            return mptcp.render(hints[0], ifaces, args.role)
        # One MPTCP connection reaches one host: the best chosen path's endpoint, over the
        # families chosen for it; the other chosen paths are named, not configured.
        first = sel["chosen"][0]["endpoint"] if sel["chosen"] else hints[0]["endpoint"]
        hint = next(h for h in hints if h["endpoint"] == first)
        fams = {a for e, a in chosen if e == first} or None
        picked = ", ".join(f"{r['endpoint']} IPv{r['afi']}" for r in sel["chosen"])
        # What the script configures: the chosen families the hint gives a subflow (its flags).
        done = sorted(a for a in (fams or (4, 6)) if hint.get(f"mptcp_flags_v{a}") is not None)
        left = sorted(set(fams or ()) - set(done))
        notes.append(f"--k {sel['k']} chose {picked or 'no path'}; this script configures {first}'s "
                     f"{' and '.join(f'IPv{a}' for a in done) or 'no path'}"
                     + (f" (not IPv{left[0]}: the hint is {hint['hint_class']}, mode {hint['mode']})" if left else ""))
        others = [f"{r['endpoint']} IPv{r['afi']}" for r in sel["chosen"] if r["endpoint"] != first]
        if others:
            notes.append(f"{', '.join(others)} go to other hosts: an MPTCP connection has one peer, so "
                         "each needs its own connection (or carry all of them in one MPT tunnel: --format mpt)")
        return mptcp.render(hint, ifaces, args.role, notes=notes, families=fams)
    from bgp_congruency.selector.question import load_endpoints

    remotes = {d.endpoint: d.tunnel or args.tunnel_remote for d in load_endpoints(args.endpoints)} \
        if args.endpoints else {None: args.tunnel_remote}
    conns = mpt.connections(hints, ifaces, args.tunnel_local, remotes, chosen, args.tunnel_port,
                            args.keepalive, args.dead_time)
    if len(conns) > 1 and not args.out:
        raise BadInput(f"--out FILE: the chosen paths go to {len(conns)} peers ("
                         + ", ".join(c.name for c in conns) + "), one MPT connection file each: FILE-NAME.conf")
    files = {}
    for c in conns:
        h = next(h for h in hints if (h.get("endpoint") or "congruency") == c.name)
        paths = ", ".join(f"IPv{p.ip_ver} over {p.interface_name}" + (" (backup, disabled)" if p.status == 255 else "")
                          for p in c.paths)
        left = sorted(a for e, a in (chosen or ()) if e == h.get("endpoint") and a not in {p.ip_ver for p in c.paths})
        header = [f"MPT connection generated by `congruency export --format mpt` from {answer['month']} hints.",
                  f"{h.get('endpoint') or h['query']}: class {h['hint_class']}, mode {h['mode']}: {h['rationale']}",
                  *notes, f"{len(c.paths)} path(s): {paths}"
                  + (f" (not IPv{left[0]}: the hint is {h['hint_class']}, mode {h['mode']})" if left else ""),
                  h["caveat"]]
        out = Path(args.out) if args.out else None
        if out is not None and len(conns) > 1:
            out = out.with_name(f"{out.stem}-{c.name}{out.suffix or '.conf'}")
        files[out] = mpt.render(c, header)
    return files


def main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.selector import month as hmonth
    from bgp_congruency.selector import table as htable
    from bgp_congruency.selector.exports import jsonl

    text = render(args, cfg)
    if text is None:  # every pair of the month: its published hints table, else built here
        month = hmonth.resolve_month(cfg, args.month)
        from bgp_congruency.lake import published

        have = month in published.months(hmonth.data_root(cfg), "hints")
        con = None if have else htable.connect(cfg)
        try:
            source = cfg if con is None else htable.build(con, cfg, month)
            if args.out:
                jsonl.write(source, args.out, month)
            else:
                jsonl.dump(source, sys.stdout, month)
        finally:
            if con is not None:
                con.close()
        return 0
    # A closed pipe or a file that can't be written: cli/main.py says so in one line.
    for out, body in (text.items() if isinstance(text, dict) else [(Path(args.out) if args.out else None, text)]):
        if out is not None:
            atomic.write_text(out, body, mode=0o755 if out.suffix == ".sh" or body.startswith("#!") else None)
            if isinstance(text, dict) and len(text) > 1:
                console.note(f"wrote {out}")
        else:
            sys.stdout.write(body)
    return 0
