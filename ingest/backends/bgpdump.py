"""The Debian `bgpdump -m` text output, parsed column-wise by Arrow's CSV reader."""
from __future__ import annotations

import ipaddress
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from bgp_congruency.ingest.backends import RAW_SCHEMA

NAME = "bgpdump"
SELF_CHECKING = False


def available() -> str | None:
    missing = [t for t in ("bgpdump", "bzip2", "gzip") if not shutil.which(t)]
    return f"{', '.join(missing)} not on PATH (apt-get install {' '.join(missing)})" if missing else None


def _decompressor(path: Path) -> list[str] | None:
    with open(path, "rb") as fh:
        head = fh.read(3)
    return ["bzip2", "-dc"] if head == b"BZh" else ["gzip", "-dc"] if head[:2] == b"\x1f\x8b" else None


def decode(path: Path, batch_rows: int = 200_000) -> Iterator[pa.RecordBatch]:
    # bgpdump stops after the first bzip2 stream / gzip member, so a multi-stream file from
    # pbzip2/lbzip2 would lose entries: it reads the whole decompressed stream from a pipe.
    unzip = _decompressor(path)
    feeder = subprocess.Popen([*unzip, str(path)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL) if unzip else None
    proc = subprocess.Popen(
        ["bgpdump", "-q", "-m", "-" if feeder else str(path)],
        stdin=feeder.stdout if feeder else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=1 << 20,
    )
    if feeder:
        feeder.stdout.close()  # bgpdump holds the pipe now
    try:
        reader = pacsv.open_csv(
            proc.stdout,
            read_options=pacsv.ReadOptions(
                column_names=["line"], block_size=max(1 << 20, batch_rows * 120)
            ),
            # One whole line per value: split on '|' ourselves, since ADD-PATH lines
            # (TABLE_DUMP2_AP) carry one more field before the AS path.
            parse_options=pacsv.ParseOptions(delimiter="\x1f", quote_char=False),
            convert_options=pacsv.ConvertOptions(column_types={"line": pa.string()}),
        )
        for batch in reader:
            # Only RIB lines: an updates file's BGP4MP lines (withdrawals and state changes
            # are shorter) are not entries; the framing pass then reports "no RIB entries".
            lines = batch.column(0)
            lines = lines.filter(pc.starts_with(lines, "TABLE_DUMP"))
            if len(lines):
                yield _columns(lines)
    except pa.ArrowInvalid as exc:
        if "Empty CSV file" not in str(exc):
            raise
    finally:
        proc.stdout.close()
        rc = proc.wait()
        if feeder:
            if rc != 0:
                feeder.kill()
            unzip_rc = feeder.wait()
    if rc != 0:
        raise RuntimeError(f"bgpdump exited with status {rc} on {path}")
    if feeder and unzip_rc != 0:
        raise RuntimeError(f"{' '.join(unzip)} exited with status {unzip_rc} on {path}")


def _canonical_v6(text: pa.Array) -> pa.Array:
    """bgpdump writes '::' for a single zero group ('2001:db8::1:0:0:0:1' style text is
    fine, but '2001:668::3:ffff:0:adcd:3354' is not RFC 5952): rewrite just those rows."""
    bad = pc.and_(pc.match_substring(text, "::"), pc.equal(pc.count_substring(text, ":"), 7))
    if not pc.any(bad).as_py():
        return text
    values = text.to_pylist()
    for i in np.flatnonzero(pc.fill_null(bad, False).to_numpy(zero_copy_only=False)):
        addr, slash, plen = values[i].partition("/")
        values[i] = str(ipaddress.IPv6Address(addr)) + slash + plen
    return pa.array(values, pa.string())


def _columns(lines: pa.Array) -> pa.RecordBatch:
    f = pc.split_pattern(lines, "|")
    addpath = pc.equal(pc.list_element(f, 0), "TABLE_DUMP2_AP")
    path = pc.if_else(addpath, pc.list_element(f, 7), pc.list_element(f, 6))
    return pa.RecordBatch.from_arrays(
        [
            _canonical_v6(pc.list_element(f, 3)),
            pc.cast(pc.list_element(f, 4), pa.uint32()),
            _canonical_v6(pc.list_element(f, 5)),
            path,
        ],
        schema=RAW_SCHEMA,
    )


def refuses(stats) -> str | None:
    """Nothing the framing check accepts is refused."""
    return None
