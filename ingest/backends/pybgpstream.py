"""pybgpstream (CAIDA libbgpstream) reading one local file through its `singlefile` interface.

It needs the libbgpstream C library, which has no wheel; where it is missing this backend
says so and the rest of the pipeline is unaffected.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pyarrow as pa

from ingest.backends import batches

NAME = "pybgpstream"


def available() -> str | None:
    try:
        import pybgpstream  # noqa: F401
    except ImportError as exc:
        return f"pybgpstream is not importable ({exc}); it needs libbgpstream from CAIDA"
    return None


def decode(path: Path, batch_rows: int = 200_000) -> Iterator[pa.RecordBatch]:
    import pybgpstream

    stream = pybgpstream.BGPStream(data_interface="singlefile")
    stream.set_data_interface_option("singlefile", "rib-file", str(path))
    rows = (
        (e.peer_address, e.peer_asn, e.fields["prefix"], e.fields.get("as-path", ""))
        for e in stream
        if e.type == "R"
    )
    return batches(rows, batch_rows)
