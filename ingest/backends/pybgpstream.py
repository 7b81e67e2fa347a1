"""pybgpstream (CAIDA libbgpstream) reading one local file through its `singlefile` interface.

`make bgpstream` builds libbgpstream from ../shared/vendor and pybgpstream against it (or
uses a system libbgpstream: LIBBGPSTREAM_PREFIX). Its rows equal the native decoder's on
every sample RIB (tests/test_pybgpstream.py). libbgpstream's own behaviours, made explicit:
it reads a cut-off .bz2/.gz without error (the framing check beside it refuses the file),
skips a RIB with no peer index with a warning (the framing check names the record), and
yields nothing for ADD-PATH RIB subtypes (`refuses` says so). The API hands out one Python
object per route (no batch interface): the bench measures what that costs.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pyarrow as pa

from bgp_congruency.ingest.backends import batches

NAME = "pybgpstream"
SELF_CHECKING = False


def available() -> str | None:
    try:
        import pybgpstream  # noqa: F401
    except ImportError as exc:
        return f"pybgpstream is not importable ({exc}); `make bgpstream` builds libbgpstream and installs it"
    return None


def refuses(stats) -> str | None:
    """Why this backend cannot read a file the framing check accepted, or None."""
    if stats.addpath_records:
        return (f"{stats.addpath_records} ADD-PATH RIB records (RFC 8050 subtypes 8-12), which libbgpstream "
                "2.3 does not read (it yields no route for them); use the native backend")
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
