"""pybgpkit-parser (the Rust bgpkit-parser): the default backend, a wheel from PyPI."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pyarrow as pa

from ingest.backends import batches

NAME = "bgpkit"


def available() -> str | None:
    try:
        import pybgpkit_parser  # noqa: F401
    except ImportError:
        return "pybgpkit-parser is not installed (pip install pybgpkit-parser)"
    return None


def decode(path: Path, batch_rows: int = 200_000) -> Iterator[pa.RecordBatch]:
    import pybgpkit_parser

    rows = ((e.peer_ip, e.peer_asn, e.prefix, e.as_path or "") for e in pybgpkit_parser.Parser(url=str(path)))
    return batches(rows, batch_rows)
