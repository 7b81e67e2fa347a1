"""pybgpkit-parser (the Rust bgpkit-parser): the default backend, a wheel from PyPI."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pyarrow as pa

from ingest.backends import raw_batch

NAME = "bgpkit"


def available() -> str | None:
    try:
        import pybgpkit_parser  # noqa: F401
    except ImportError:
        return "pybgpkit-parser is not installed (pip install pybgpkit-parser)"
    return None


def decode(path: Path, batch_rows: int = 200_000) -> Iterator[pa.RecordBatch]:
    import pybgpkit_parser

    ips: list = []
    asns: list = []
    prefixes: list = []
    paths: list = []
    for elem in pybgpkit_parser.Parser(url=str(path)):
        ips.append(elem.peer_ip)
        asns.append(elem.peer_asn)
        prefixes.append(elem.prefix)
        paths.append(elem.as_path or "")
        if len(ips) >= batch_rows:
            yield raw_batch(ips, asns, prefixes, paths)
            ips, asns, prefixes, paths = [], [], [], []
    if ips:
        yield raw_batch(ips, asns, prefixes, paths)
