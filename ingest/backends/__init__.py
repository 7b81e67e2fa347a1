"""Decoding backends: MRT file -> raw columns, one module a backend, the same entry shape.

Each backend module has `NAME`, `available() -> str | None` (None when usable, else why
not) and `decode(path, batch_rows) -> Iterator[pyarrow.RecordBatch]` yielding RAW_SCHEMA
batches: the four fields every decoder gives as text or ints. `ingest.normalize` turns
them into the one `rib_entries` schema, so backends can't drift apart in how they spell
AS paths, AFIs or origins.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from itertools import islice
from types import ModuleType

import pyarrow as pa

RAW_SCHEMA = pa.schema(
    [
        ("peer_ip", pa.string()),
        ("peer_asn", pa.uint32()),
        ("prefix", pa.string()),
        # bgpdump-style text: "1 2 3", sets as "{4,5}", confederations as "(6 7)" / "[8,9]".
        ("as_path_text", pa.string()),
    ]
)

NAMES = ("bgpkit", "bgpdump", "pybgpstream")


class BackendUnavailable(Exception):
    pass


def get(name: str) -> ModuleType:
    """The backend module `name`, or BackendUnavailable with the reason in one line."""
    if name not in NAMES:
        raise BackendUnavailable(f"unknown backend {name!r} (choose from {', '.join(NAMES)})")
    mod = importlib.import_module(f"ingest.backends.{name}")
    why = mod.available()
    if why:
        raise BackendUnavailable(f"backend {name!r} is not usable here: {why}")
    return mod


def batches(rows: Iterable[tuple[str, int, str, str]], batch_rows: int) -> Iterator[pa.RecordBatch]:
    """(peer_ip, peer_asn, prefix, as_path_text) tuples -> RAW_SCHEMA batches of batch_rows."""
    it = iter(rows)
    while chunk := list(islice(it, batch_rows)):
        ips, asns, prefixes, paths = zip(*chunk)
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(ips, pa.string()),
                pa.array(asns, pa.uint32()),
                pa.array(prefixes, pa.string()),
                pa.array(paths, pa.string()),
            ],
            schema=RAW_SCHEMA,
        )
