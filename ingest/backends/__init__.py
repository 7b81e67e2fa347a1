"""Decoding backends: MRT file -> `rib_entries` batches, one module a backend, each
following `Backend` below (a module, so the Protocol is its shape, not a base class).

Two kinds, told apart by `SELF_CHECKING`:
- True: `decode_checked(path, batch_rows, *, collector, project, snapshot_time, source_file,
  threads)` is a generator of RIB_ENTRIES batches that frames and checks the file itself in
  the same pass and returns its `framing.FrameStats` (the native decoder, the default);
- False: `decode(path, batch_rows)` yields RAW_SCHEMA batches, the four fields a text
  decoder gives. `ingest.normalize` turns them into `rib_entries` (bgpdump's text is the
  reference the native decoder is tested against) and `ingest.framing.scan` checks the file
  beside them; `refuses(stats)` says why the backend cannot read a file that check accepted.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Protocol

import pyarrow as pa

from bgp_congruency.common.config import BACKENDS
from bgp_congruency.common.errors import BadInput

RAW_SCHEMA = pa.schema(
    [
        ("peer_ip", pa.string()),
        ("peer_asn", pa.uint32()),
        ("prefix", pa.string()),
        # bgpdump-style text: "1 2 3", sets as "{4,5}", confederations as "(6 7)" / "[8,9]".
        ("as_path_text", pa.string()),
    ]
)


class Backend(Protocol):
    """What ingest/run.py calls on a backend module."""

    NAME: str
    SELF_CHECKING: bool

    def available(self) -> str | None: ...

    def refuses(self, stats) -> str | None: ...

    # and, as SELF_CHECKING says, decode(path, batch_rows) or decode_checked(path, batch_rows, **source)


class BackendUnavailable(BadInput):
    pass


def get(name: str) -> Backend:
    """The backend module `name`, or BackendUnavailable with the reason in one line."""
    if name not in BACKENDS:
        raise BackendUnavailable(f"unknown backend {name!r} (choose from {', '.join(BACKENDS)})")
    mod = importlib.import_module(f"bgp_congruency.ingest.backends.{name}")
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
