"""`congruency sql` command line: the duckdb client on the published tables."""
from __future__ import annotations

import argparse
import shutil
import subprocess

from bgp_congruency.cli.main import command_help, snapshot_id
from bgp_congruency.common import console
from bgp_congruency.common.config import Config


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sql",
        parents=parents,
        help=command_help('sql'),
        description=(
            "Start the `duckdb` command-line client with the data dir's catalog attached read-only "
            "and a view per table under its own name (pairs, vps, month_summary, ..., rib_entries): "
            "the same tables as lake.connect() in Python. SQL on standard input runs and exits. "
            "--print shows the statements instead (LOAD the two extensions, ATTACH the catalog, "
            "the views), for a duckdb you start yourself."
        ),
    )
    p.add_argument("--month", metavar="YYYY-MM", help="only this month's rows in every view")
    p.add_argument("--as-of", type=snapshot_id, metavar="SNAPSHOT", dest="as_of",
                   help="the tables as this catalog snapshot had them (congruency lake snapshots)")
    p.add_argument("--print", action="store_true", help="print the statements; start nothing")
    p.set_defaults(func=main)


def statements(root, month: str | None, as_of: int | None) -> list[str]:
    """LOAD, ATTACH (read-only, at `as_of`) and the views, as the duckdb client takes them."""
    from bgp_congruency.lake import attach, commit, views

    out = []
    in_lake: dict[str, set[str]] = {}
    if attach.exists(root):
        out = attach.attach_sql(root, snapshot=as_of)
        with attach.opened(root, snapshot=as_of) as con:
            in_lake = commit.attached_columns(con)
    elif as_of is not None:
        raise attach.NoCatalog(attach.no_catalog(root))
    sql, made = views.statements(root, in_lake, month)
    if not made:
        raise attach.NoCatalog(attach.no_catalog(root))
    return [s + ";" for s in out] + [s + ";" for s in sql if not s.startswith("COMMENT")]


def main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.common.duck import quote
    from bgp_congruency.common.months import parse_month
    from bgp_congruency.lake import published
    from bgp_congruency.reports.warehouse import data_root

    root = data_root(cfg)
    if args.month:
        parse_month(args.month)
        published.require(root, args.month)  # not published: say which are, as `query` does
    lines = statements(root, args.month, args.as_of)
    if args.print:
        from bgp_congruency.lake.attach import masked

        shown = [masked(ln) for ln in lines]
        if shown != lines:
            print("-- the catalog's password and the S3 secret key are masked: give the password through "
                  "PGPASSWORD or ~/.pgpass, and put your secret key where *** is")
        print("\n".join(shown))
        return 0
    import sys
    from pathlib import Path

    beside = Path(sys.executable).parent / "duckdb"  # the venv's own (pip's duckdb-cli)
    exe = str(beside) if beside.is_file() else shutil.which("duckdb")
    if exe is None:
        import duckdb

        console.error(f"the duckdb client is not installed (pip install duckdb-cli=={duckdb.__version__}); "
                      "or run congruency sql --print and paste the lines into yours")
        return 1
    import tempfile

    # The statements through a private file, not the command line (`ps` shows that to
    # everyone, and a PostgreSQL catalog's conninfo may hold a password).
    if not (sys.stdin.isatty() and sys.stdout.isatty()):  # SQL or results piped: no progress bar in the output
        lines = ["SET enable_progress_bar = false;"] + lines
    with tempfile.TemporaryDirectory(prefix="congruency-sql-") as tmp:
        init = Path(tmp) / "init.sql"
        init.touch(mode=0o600)
        init.write_text("\n".join(lines) + "\n")
        # `.read` before stdin, not -init: -init writes "-- Loading resources from ..." (with
        # colour codes) on stderr, which a script reading the output then has to strip.
        return subprocess.run([exe, "-cmd", f".read {quote(str(init))}"]).returncode
