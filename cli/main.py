"""The `congruency` command: one entry point, one module in cli/ per subcommand.

cli/ is the top layer: it may import every step (ingest, pipeline, reports, ...); no
step imports cli/.
"""
from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from pathlib import Path

from bgp_congruency.common import console, layout
from bgp_congruency.common.config import ConfigError, load
from bgp_congruency.common.errors import CongruencyError

#: Commands that read published tables: they read one snapshot of the catalog throughout
#: (lake/attach.pinned), so a month re-published meanwhile is seen whole, old or new.
READERS = ("query", "report", "advise", "export", "trace", "evaluate", "relationships")
#: Readers that write no catalog: they hold one attached catalog for the whole command.
PURE_READERS = ("query", "report", "advise", "export", "trace")
#: Commands that publish (some only with a flag): before reading the catalog they repair the
#: paths an earlier version registered as a relative data dir was spelled (lake/commit.repair).
PUBLISHERS = ("run", "compare", "evaluate", "sensitivity", "relationships", "trace")
#: Commands that only read what an earlier one wrote: a data dir that does not exist is a
#: misspelling, said the same way by each (the others create it).
NEEDS_DATA = (*READERS, "compare", "sensitivity", "sql", "lake", "evaluate")
#: Every command: its module in cli/ (each has register(sub, parents), which adds its
#: parsers) and its one line of help. `congruency --help` lists these without importing any
#: module, and a command loads only its own module, so `--help` and `advise` start fast.
COMMANDS: dict[str, tuple[str, str]] = {
    'run': ('run', 'run every step of a month (ingest, compare, hints, lake, reports); resumable'),
    'status': ('run', 'show what a month has: steps done, failed snapshots, pairs, outputs'),
    'plan': ('plan', 'before a backfill: per month, the snapshots a run would fetch, and its download, disk and time'),
    'catalogue': ('catalogue', 'list the collectors active in a month, or rebuild the catalogue from RIPEstat and RouteViews'),
    'ingest': ('ingest', "discover, download, check and decode a month's RIB snapshots, and merge them into its routes"),
    'compare': ('compare', "run the congruency job (DuckDB in-process, or Spark) on an ingested month's routes"),
    'sensitivity': ('sensitivity', 'recompute a published month under each variant of each open choice of the method'),
    'synth': ('synth', 'generate a synthetic RouteViews + RIS archive of MRT RIBs with ground truth'),
    'sql': ('sql', 'open the duckdb client on the published tables (read-only), or print the lines that do'),
    'query': ('query', 'run a named query (reports/queries/NAME.sql) or your own SQL on the published tables'),
    'lake': ('lake', 'the catalog of the published tables: snapshots, vacuum, migrate, relocate'),
    'report': ('report', 'write a self-contained offline HTML report of a month (--month) or of all months (--trend)'),
    'advise': ('advise', 'which IPv4/IPv6 tunnel paths are disjoint, and how to use them (MPTCP, MPT)'),
    'export': ('export', 'write hints as JSON Lines, a Linux MPTCP script or an MPT connection file'),
    'trace': ('trace', 'router-level congruency of a destination from traceroutes (RIPE Atlas, warts, live scamper)'),
    'evaluate': ('evaluate', 'how often the path selector is right: each VP held out, its answers against its own pairs'),
    'relationships': ('relationships', "a month's AS relationships per family (clique, hybrid links), scored "
                      "against a CAIDA or BGPKIT file"),
}


def command_help(name: str) -> str:
    """A command's one line of help (COMMANDS), for its module's parser."""
    return COMMANDS[name][1]


class _Help(argparse.HelpFormatter):
    """Wraps help at spaces only: `YYYY-MM`, `route-views2` and `2009-06..2014-06` stay whole."""

    def _split_lines(self, text, width):
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text, width, indent):
        import textwrap

        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False)


class Parser(argparse.ArgumentParser):
    """argparse with the project's one-line errors: `error: PROG: what (see PROG --help)`,
    exit 2, instead of a usage block, and help wrapped at spaces only (subcommands inherit both)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def snapshot_id(text: str) -> int:
    """--as-of: a catalog snapshot's number (0 or more); argparse says what is wrong."""
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a catalog snapshot's number (0 or more; congruency lake snapshots "
                                         f"lists them), got {text!r}")
    return n


class _Version(argparse.Action):
    """--version: computed when asked (git describe), the same strings provenance rows hold."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        from bgp_congruency.pipeline.provenance import method_version, project_version

        print(f"congruency {project_version()} (method {method_version()})")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `congruency` parser: with `command`, only that command's module is imported and
    every other command is its one line of help (enough for `--help` and for parsing that
    command); None: every command in full (the generated docs)."""
    config = Parser(add_help=False)
    config.add_argument("--config", metavar="FILE", help="TOML file with settings (docs/configuration.md)")
    common = Parser(add_help=False, parents=[config])
    common.add_argument("--data-dir", metavar="DIR", help="where Parquet, the manifest and the cache live: a folder (default ./data) or s3://BUCKET/PREFIX (docs/operations.md)")
    parser = Parser(
        prog="congruency",
        description="IPv4/IPv6 AS-path congruency per dual-stacked vantage point, "
        "from RouteViews and RIPE RIS RIB snapshots.",
    )
    parser.add_argument("--version", action=_Version, help="the project's and the method's versions, as provenance records them")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = {m for m, _h in COMMANDS.values()} if command is None else {COMMANDS[command][0]} if command else set()
    done: set[str] = set()
    for name, (module, hlp) in COMMANDS.items():
        if module not in wanted:
            sub.add_parser(name, help=hlp)  # listed in --help; parsed only when asked for (its module then)
        elif module not in done:
            done.add(module)
            mod = importlib.import_module(f"bgp_congruency.cli.{module}")
            mod.register(sub, [common] if getattr(mod, "USES_DATA_DIR", True) else [config])
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else "")
    args = parser.parse_args(argv)
    try:
        cfg = load(args.config)
    except ConfigError as exc:
        console.error(str(exc))
        return 2
    if getattr(args, "data_dir", None):
        cfg = cfg.with_overrides(data_dir=layout.root_of(args.data_dir))
    d = cfg.data_dir
    local = "data_dir" in vars(args) and not layout.is_cluster(d)
    in_place = "data_dir" in vars(args) and not layout.hadoop_only(d)  # local or s3://: read where it is
    if local and Path(d).exists() and not Path(d).is_dir():
        console.error(f"--data-dir: {d} is not a folder")
        return 2
    out = getattr(args, "out", None)
    if args.command != "synth" and isinstance(out, str) and Path(out).is_dir():  # --out FILE (synth's is a DIR)
        console.error(f"--out: {out} is a folder; give a file path")
        return 2
    if args.command != "synth" and isinstance(out, str) and not Path(out).absolute().parent.is_dir():
        console.error(f"--out: no such folder {Path(out).absolute().parent} (it is not created: a typo "
                      "would otherwise leave files where nobody looks)")
        return 2
    if local and args.command in NEEDS_DATA and not getattr(args, "list", False) and not Path(d).exists():
        console.error(f"--data-dir: {d} does not exist (congruency run or ingest creates it; is it misspelled?)")
        return 2
    from contextlib import nullcontext

    from bgp_congruency.lake.attach import pinned

    try:
        publishes = args.command in PUBLISHERS and (getattr(args, "store", True) and getattr(args, "infer", True))
        if publishes and local:
            from bgp_congruency.lake import commit

            commit.repair_in_place(cfg.data_dir)
        hold = args.command in PURE_READERS and not getattr(args, "store", False)  # trace --store publishes
        with pinned(cfg.data_dir, hold=hold) if args.command in READERS and in_place \
                else nullcontext():
            try:
                rc = args.func(args, cfg)
            except Exception as exc:  # a published file that cannot be read: one line, not a traceback
                line = _unreadable(cfg.data_dir, exc) if in_place else None
                if line is None:
                    raise
                console.error(line)
                return 1
        sys.stdout.flush()  # inside the try: a pipe closed early fails here, not at exit
        return rc
    except KeyboardInterrupt:
        # Ctrl-C: one line, exit 130 as a shell's interrupted command; what a step had begun
        # is recorded `interrupted` and resumed by the next run (runner/month.py).
        console.error(f"interrupted; `congruency {args.command}` stopped" +
                      (" (run it again to resume)" if args.command in ("run", "ingest") else ""))
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as a shell's SIGPIPE'd command does
        # (exit 141); stdout goes to /dev/null so the interpreter's final flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except CongruencyError as exc:  # the project's errors: one line, their own exit code
        console.error(str(exc))
        return exc.exit_code
    except OSError as exc:  # a file the work needs (full disk, permissions, a folder in its place)
        where = f"{exc.filename}: " if exc.filename else ""
        if exc.errno == errno.EROFS:
            console.error(f"{where}read-only file system: `congruency {args.command}` writes there "
                          f"(query, advise, export and report --out FILE read a read-only data dir)")
            return 1
        console.error(f"{where}{exc.strerror or exc}")
        return 1


def _unreadable(root, exc: Exception) -> str | None:
    """lake/attach.unreadable's line for a DuckDB IO error or an OSError on a published file
    (None for any other error)."""
    duck_io = type(exc).__name__ == "IOException" and type(exc).__module__.startswith(("duckdb", "_duckdb"))
    if not duck_io and not isinstance(exc, OSError):
        return None
    from bgp_congruency.lake.attach import unreadable

    return unreadable(root, exc)


if __name__ == "__main__":
    sys.exit(main())
