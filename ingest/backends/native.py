"""The project's own Rust decoder (ingest/native, built by `make setup`): the default backend.

One pass per file: it reads the file once, decompresses every bzip2 stream / gzip member in
a thread beside the decoder, frames and checks every record with the rules of
`ingest/framing.py`, and hands back finished `rib_entries` column buffers (AS paths already
as lists, sets and origins as `ingest/normalize.py` defines them). So this backend needs
neither the separate framing pass nor `normalize`: `decode_checked` yields RIB_ENTRIES
batches and returns the file's FrameStats.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from bgp_congruency.common import vp_hash
from bgp_congruency.common.tables import RIB_ENTRIES, VP_BUCKET
from bgp_congruency.ingest.framing import FrameStats, FramingError

NAME = "native"
SELF_CHECKING = True
_LIST = RIB_ENTRIES.field("as_path").type
_TS = RIB_ENTRIES.field("snapshot_time").type
_GROUPED = RIB_ENTRIES.append(VP_BUCKET)


def available() -> str | None:
    try:
        import congruency_mrt  # noqa: F401
    except ImportError:
        return "the native decoder is not built (run `make setup`; it needs cargo)"
    return None


def _constant(text: str, n: int) -> pa.Array:
    """n copies of one string, built as Arrow buffers (no Python object per row)."""
    raw = text.encode()
    offsets = np.arange(n + 1, dtype=np.int64) * len(raw)
    if offsets[-1] < 2**31:
        return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets.astype(np.int32)),
                                                      pa.py_buffer(raw * n)])
    return pa.array([text] * n, pa.string())


def _strings(b: dict, name: str, n: int, validity: bytes | None = None) -> pa.Array:
    return pa.Array.from_buffers(pa.string(), n, [None if validity is None else pa.py_buffer(validity),
                                                  pa.py_buffer(b[f"{name}_offsets"]), pa.py_buffer(b[name])])


def _batch(b: dict, *, collector: str, project: str, snapshot_time: datetime,
           source_file: str) -> pa.RecordBatch:
    n = b["rows"]
    values = pa.Array.from_buffers(pa.uint32(), len(b["as_path_values"]) // 4,
                                   [None, pa.py_buffer(b["as_path_values"])])
    as_path = pa.Array.from_buffers(_LIST, n, [pa.py_buffer(b["as_path_validity"]),
                                               pa.py_buffer(b["as_path_offsets"])], children=[values])
    return pa.RecordBatch.from_arrays(
        [
            _constant(collector, n),
            _constant(project, n),
            pa.Array.from_buffers(_TS, n, [None, pa.py_buffer(np.full(n, int(snapshot_time.timestamp()),
                                                                       dtype=np.int64))]),
            pa.Array.from_buffers(pa.uint32(), n, [None, pa.py_buffer(b["peer_asn"])]),
            _strings(b, "peer_ip", n),
            pa.Array.from_buffers(pa.int8(), n, [None, pa.py_buffer(b["afi"])]),
            _strings(b, "prefix", n),
            as_path,
            pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(b["has_as_set"])]),
            _strings(b, "as_path_raw", n, b["as_path_raw_validity"]),
            pa.Array.from_buffers(pa.uint32(), n, [pa.py_buffer(b["origin_asn_validity"]),
                                                   pa.py_buffer(b["origin_asn"])]),
            _constant(source_file, n),
            *([pa.Array.from_buffers(pa.int8(), n, [None, pa.py_buffer(b["vp_bucket"])])] if "vp_bucket" in b else []),
        ],
        schema=_GROUPED if "vp_bucket" in b else RIB_ENTRIES,
    )


def decode_checked(path: Path, batch_rows: int = 200_000, *, collector: str = "", project: str = "",
                   snapshot_time: datetime, source_file: str = "", threads: int = 0,
                   grouped: bool = False) -> Generator[pa.RecordBatch, None, FrameStats]:
    """Yield RIB_ENTRIES batches of `path`; return its FrameStats (`yield from` gives it).

    Raises FramingError (one line) for anything framing.scan would reject, and for malformed
    RIB entries, which the decoder reads in full. `threads`: bzip2 blocks are decompressed
    on this many cores (0: all; 1: one stream decoder). `grouped`: each batch's rows grouped
    by VP bucket, with a `vp_bucket` column (ingest/writer.py writes a row group per bucket)."""
    import congruency_mrt

    reader = congruency_mrt.Reader(str(path), batch_rows, threads,
                                   (vp_hash.MULT, vp_hash.BUCKET_BITS) if grouped else None)
    try:
        for b in reader:
            yield _batch(b, collector=collector, project=project, snapshot_time=snapshot_time,
                         source_file=source_file)
    except congruency_mrt.MrtError as exc:
        raise FramingError(str(exc)) from None
    finally:
        reader.close()
    s = reader.stats
    return FrameStats(records=s["records"], entries=Counter(s["entries"]), skipped=Counter(s["skipped"]),
                      first_timestamp=s["first_timestamp"], uncompressed_bytes=s["uncompressed_bytes"],
                      file_bytes=s["file_bytes"], sha256=s["sha256"])


def refuses(stats) -> str | None:
    """Nothing the framing check accepts is refused."""
    return None
