"""The `congruency` command: one entry point, one subcommand per pipeline step."""
from __future__ import annotations

import argparse
import sys

from pipeline import console
from pipeline.config import ConfigError, load


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="FILE", help="TOML file with settings (see README)")
    common.add_argument("--data-dir", metavar="DIR", help="where Parquet, the manifest and the cache live (default ./data)")
    parser = argparse.ArgumentParser(
        prog="congruency",
        description="IPv4/IPv6 AS-path congruency per dual-stacked vantage point, "
        "from RouteViews and RIPE RIS RIB snapshots.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    from ingest import cli as ingest_cli

    ingest_cli.register(sub, [common])
    from pipeline import compare_cli
    from ingest.synth import cli as synth_cli

    compare_cli.register(sub, [common])
    synth_cli.register(sub, [common])
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        cfg = load(args.config)
    except ConfigError as exc:
        console.error(str(exc))
        return 2
    if getattr(args, "data_dir", None):
        from pathlib import Path

        # hdfs://, s3a:// ... stay strings (Path would fold '//'); Spark jobs accept them.
        d = args.data_dir
        cfg = cfg.with_overrides(data_dir=d if "://" in d else Path(d))
    return args.func(args, cfg)


if __name__ == "__main__":
    sys.exit(main())
