"""A small MRT TABLE_DUMP_V2 (RFC 6396) writer, streamed through bz2 or gzip.

It writes what RouteViews and RIS RIB dumps hold: a PEER_INDEX_TABLE, then one
RIB_IPV4_UNICAST / RIB_IPV6_UNICAST record per prefix. Callers pre-encode attribute
bytes with the helpers below, so the per-entry work is a bytes concatenation; records go
to the compressor one at a time (bounded memory) under common/atomic.py's temp name, renamed on success.
"""
from __future__ import annotations

import bz2
import gzip
import hashlib
import ipaddress
import struct
from pathlib import Path

from bgp_congruency.common import atomic

TABLE_DUMP_V2 = 13
PEER_INDEX_TABLE, RIB_IPV4_UNICAST, RIB_IPV6_UNICAST = 1, 2, 4
AS_SET, AS_SEQUENCE = 1, 2
_HDR = struct.Struct(">IHHI")
_RIB_HEAD = struct.Struct(">I")
_COUNT = struct.Struct(">H")


def attribute(type_code: int, value: bytes, flags: int = 0x40) -> bytes:
    """One path attribute; the extended-length flag when the value exceeds 255 bytes."""
    if len(value) > 255:
        return struct.pack(">BBH", flags | 0x10, type_code, len(value)) + value
    return struct.pack(">BBB", flags, type_code, len(value)) + value


#: ORIGIN IGP: every synthetic route carries it first.
ORIGIN_IGP = attribute(1, b"\x00")


def as_path(seq, as_set=()) -> bytes:
    """AS_PATH with 4-byte ASNs (RFC 6396 4.3.4): AS_SEQUENCE segments (<= 255 ASNs each),
    then an optional AS_SET."""
    segs = []
    for i in range(0, len(seq), 255):
        chunk = seq[i : i + 255]
        segs.append(struct.pack(f">BB{len(chunk)}I", AS_SEQUENCE, len(chunk), *chunk))
    if as_set:
        segs.append(struct.pack(f">BB{len(as_set)}I", AS_SET, len(as_set), *as_set))
    return attribute(2, b"".join(segs))


def next_hop(ip: str) -> bytes:
    return attribute(3, ipaddress.IPv4Address(ip).packed)


def mp_reach_abbreviated(*next_hops: str) -> bytes:
    """MP_REACH_NLRI as RIB entries carry it (RFC 6396 4.3.4): next-hop length and next
    hop(s) only, no AFI/SAFI and no NLRI."""
    nh = b"".join(ipaddress.IPv6Address(x).packed for x in next_hops)
    return attribute(14, bytes([len(nh)]) + nh, flags=0x80)


def rib_entry_head(peer_index: int, originated: int) -> bytes:
    """The fixed part of a RIB entry; the caller appends the 2-byte attribute length and
    the attributes."""
    return struct.pack(">HI", peer_index, originated)


class MrtWriter:
    """`with MrtWriter(path, timestamp) as w: w.peer_index(...); w.rib(...)`.

    Compression follows the suffix (.bz2 / .gz); gzip has mtime 0 and no name so output
    is byte-for-byte reproducible. `sha256` and `size` describe the compressed file.
    """

    def __init__(self, path: Path, timestamp: int):
        self.path, self.timestamp = Path(path), timestamp
        self.seq = 0
        self.size = 0
        self._buf: list[bytes] = []
        self._buffered = 0
        self._sha = hashlib.sha256()
        self.sha256 = ""

    def __enter__(self) -> "MrtWriter":
        if self.path.suffix not in (".bz2", ".gz"):
            raise ValueError(f"unknown compression for {self.path}")
        self._file = atomic.Pending(self.path)
        self._f = open(self._file.tmp, "wb")
        if self.path.suffix == ".bz2":
            self._bz = bz2.BZ2Compressor(9)
            self._gz = None
        else:
            self._bz = None
            self._gz = gzip.GzipFile(filename="", mode="wb", fileobj=self, mtime=0, compresslevel=6)
        return self

    def write(self, data: bytes) -> None:
        """Raw sink for compressed bytes (gzip writes here): file + running hash."""
        self._f.write(data)
        self._sha.update(data)
        self.size += len(data)

    def _emit(self, record: bytes) -> None:
        """Batch records (~256 KiB) before compressing: fewer, larger compressor calls."""
        self._buf.append(record)
        self._buffered += len(record)
        if self._buffered >= 1 << 18:
            self._drain()

    def _drain(self) -> None:
        data = b"".join(self._buf)
        self._buf, self._buffered = [], 0
        if self._bz is not None:
            out = self._bz.compress(data)
            if out:
                self.write(out)
        else:
            self._gz.write(data)

    def peer_index(self, collector_id: str, view: str, peers) -> None:
        """peers: (bgp_id, ip, asn) in peer-index order; every peer gets 4-byte ASN form."""
        name = view.encode()
        body = [ipaddress.IPv4Address(collector_id).packed, struct.pack(">H", len(name)), name, struct.pack(">H", len(peers))]
        for bgp_id, ip, asn in peers:
            addr = ipaddress.ip_address(ip)
            body.append(struct.pack(">B", 0x02 | (0x01 if addr.version == 6 else 0)))
            body.append(ipaddress.IPv4Address(bgp_id).packed + addr.packed + struct.pack(">I", asn))
        data = b"".join(body)
        self._emit(_HDR.pack(self.timestamp, TABLE_DUMP_V2, PEER_INDEX_TABLE, len(data)) + data)

    def rib(self, subtype: int, prefix_wire: bytes, entries: list[bytes]) -> None:
        """One RIB record: sequence number, prefix (length byte + significant bytes),
        entries (each from rib_entry_head + length + attributes)."""
        data = b"".join((_RIB_HEAD.pack(self.seq), prefix_wire, _COUNT.pack(len(entries)), *entries))
        self.seq += 1
        self._emit(_HDR.pack(self.timestamp, TABLE_DUMP_V2, subtype, len(data)) + data)

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            try:
                if exc_type is None:
                    self._drain()
                    if self._bz is not None:
                        self.write(self._bz.flush())
                    else:
                        self._gz.close()
            finally:
                self._f.close()
            if exc_type is None:
                self._file.commit()
                self.sha256 = self._sha.hexdigest()
        finally:  # after a failure (the caller's, the last flush's or the rename's): no temp left
            self._file.discard()
