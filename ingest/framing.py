"""Our own pass over an MRT file: compressed-stream integrity and record framing.

bgpdump and pybgpkit-parser both stop silently at a cut-off download or return nothing
for RIB records that come before any PEER_INDEX_TABLE. This pass reads the file once,
streaming, and proves every record is whole, so a decoder's silence can't lose data.
It also counts the RIB entries each record announces: the number the decoder must
reproduce exactly.
"""
from __future__ import annotations

import bz2
import hashlib
import struct
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bgp_congruency.common.errors import CongruencyError

CHUNK = 4 << 20
HEADER = struct.Struct(">IHHI")

TABLE_DUMP = 12
TABLE_DUMP_V2 = 13
# Record types that may appear in an MRT file at all (RFC 6396 + BGP4MP_ET, legacy).
KNOWN_TYPES = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, TABLE_DUMP, TABLE_DUMP_V2, 16, 17, 32, 33, 48, 49}

PEER_INDEX_TABLE = 1
#: TABLE_DUMP_V2 subtypes we decode -> AFI. ADD-PATH variants (RFC 8050) included.
V2_RIB_AFI = {2: 4, 4: 6, 8: 4, 10: 6}
#: TABLE_DUMP_V2 subtypes we skip and count, by name.
V2_SKIPPED = {
    3: "rib_ipv4_multicast",
    5: "rib_ipv6_multicast",
    6: "rib_generic",
    9: "rib_ipv4_multicast_addpath",
    11: "rib_ipv6_multicast_addpath",
    12: "rib_generic_addpath",
}
V1_AFI = {1: 4, 2: 6}
MAX_RECORD = 16 << 20  # a record announcing more than this is corrupt, not big


class FramingError(CongruencyError):
    """The file is not a complete, well-framed MRT RIB dump. The message is one line."""


@dataclass
class FrameStats:
    records: int = 0
    entries: Counter = field(default_factory=Counter)  # afi -> RIB entries announced
    skipped: Counter = field(default_factory=Counter)  # kind -> records skipped
    first_timestamp: int | None = None
    uncompressed_bytes: int = 0
    file_bytes: int = 0
    sha256: str = ""
    #: RIB records of the ADD-PATH subtypes (RFC 8050), for backends that cannot read them
    #: (pybgpstream); counted by this pass only, so not part of the stats' equality.
    addpath_records: int = field(default=0, compare=False)

    @property
    def total_entries(self) -> int:
        return sum(self.entries.values())


def _decompressor(path: Path, head: bytes):
    if head.startswith(b"BZh"):
        return bz2.BZ2Decompressor, "bzip2"
    if head.startswith(b"\x1f\x8b"):
        return (lambda: zlib.decompressobj(wbits=31)), "gzip"
    return None, "plain"


class _HashingReader:
    """File reads that also hash and count the raw bytes, so one pass gives the sha256."""

    def __init__(self, fh, stats: "FrameStats"):
        self.fh, self.stats, self.h = fh, stats, hashlib.sha256()

    def read(self, n: int) -> bytes:
        data = self.fh.read(n)
        self.h.update(data)
        self.stats.file_bytes += len(data)
        return data

    def peek4(self) -> bytes:
        return self.fh.peek(4)[:4]


def _chunks(path: Path, stats: "FrameStats"):
    """Yield decompressed chunks; raise FramingError if the compressed stream is cut."""
    with open(path, "rb") as raw:
        fh = _HashingReader(raw, stats)
        try:
            yield from _decompressed(fh, path)
        finally:
            stats.sha256 = fh.h.hexdigest()  # every path that returns has read the whole file


def _decompressed(fh: "_HashingReader", path: Path):
    head = fh.peek4()
    make, kind = _decompressor(path, head)
    if make is None:
        while data := fh.read(CHUNK):
            yield data
        return
    dec = make()
    pending = b""
    while True:
        data = pending or fh.read(1 << 20)
        pending = b""
        if not data:
            break
        try:
            out = dec.decompress(data)
        except (OSError, zlib.error, EOFError) as exc:
            raise FramingError(f"corrupt {kind} stream: {exc}") from None
        if out:
            yield out
        if dec.eof:
            rest = dec.unused_data
            if not rest and not (rest := fh.read(1 << 20)):
                return
            if not rest.startswith(head[:2]):
                raise FramingError(f"trailing garbage after the {kind} stream")
            dec = make()  # multi-stream file (pbzip2, concatenated gzip)
            pending = rest
    if not dec.eof:
        raise FramingError(f"truncated {kind} stream (download cut short?)")


def scan(path: str | Path) -> FrameStats:
    """Walk every MRT record of `path`; return what a decoder must produce."""
    path = Path(path)
    stats = FrameStats()
    buf = bytearray()
    pos = 0
    seen_peer_index = False
    unpack = HEADER.unpack_from
    for chunk in _chunks(path, stats):
        stats.uncompressed_bytes += len(chunk)
        if pos:
            del buf[:pos]
            pos = 0
        buf += chunk
        end = len(buf)
        while end - pos >= 12:
            ts, rtype, sub, length = unpack(buf, pos)
            if rtype not in KNOWN_TYPES or length > MAX_RECORD:
                raise FramingError(
                    f"not an MRT record at byte {stats_offset(stats, end, pos)} "
                    f"(type {rtype}, length {length})"
                )
            if end - pos < 12 + length:
                break
            body = pos + 12
            if stats.first_timestamp is None:
                stats.first_timestamp = ts
            if rtype == TABLE_DUMP_V2:
                if sub == PEER_INDEX_TABLE:
                    seen_peer_index = True
                elif sub in V2_RIB_AFI:
                    if not seen_peer_index:
                        raise FramingError(
                            f"RIB record #{stats.records + 1} comes before any PEER_INDEX_TABLE"
                        )
                    if length < 7:
                        raise FramingError(f"malformed RIB record #{stats.records + 1}")
                    plen = buf[body + 4]
                    off = body + 5 + (plen + 7) // 8
                    if off + 2 > body + length or plen > (32 if V2_RIB_AFI[sub] == 4 else 128):
                        raise FramingError(f"malformed RIB record #{stats.records + 1}")
                    stats.entries[V2_RIB_AFI[sub]] += (buf[off] << 8) | buf[off + 1]
                    stats.addpath_records += sub in (8, 10)
                else:
                    stats.skipped[V2_SKIPPED.get(sub, f"table_dump_v2_subtype_{sub}")] += 1
            elif rtype == TABLE_DUMP:
                if sub in V1_AFI:
                    stats.entries[V1_AFI[sub]] += 1
                else:
                    stats.skipped[f"table_dump_subtype_{sub}"] += 1
            else:
                stats.skipped[f"mrt_type_{rtype}"] += 1
            stats.records += 1
            pos = body + length
    if pos != len(buf):
        raise FramingError(cut_short(stats.records + 1, stats_offset(stats, len(buf), pos), bytes(buf[pos:pos + 12]),
                                     len(buf) - pos))
    if stats.records == 0:
        raise FramingError("no MRT records")
    return stats


def cut_short(recno: int, offset: int, head: bytes, left: int) -> str:
    """The file ends inside record `recno` (the native decoder words it the same)."""
    if len(head) < 12:
        return f"MRT record #{recno} at byte {offset} cut short: the file ends {left} bytes into its 12-byte header"
    length = int.from_bytes(head[8:12], "big")
    return (f"MRT record #{recno} at byte {offset} cut short: it announces {length} bytes, "
            f"the file ends {left - 12} bytes into them")


def stats_offset(stats: FrameStats, end: int, pos: int) -> int:
    """Absolute offset in the uncompressed stream of buffer position `pos`."""
    return stats.uncompressed_bytes - end + pos
