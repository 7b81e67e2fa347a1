"""Property-based fuzzing of the native MRT decoder (Hypothesis) over the real sample files.

Seeds are real dumps from ../shared/data (raw MRT, and the same bytes gzip'd / bzip2'd, one
of them as two bzip2 streams). Each example mutates one seed: a cut at a record boundary, a
cut anywhere, bit flips, or a run of random bytes written over it. The properties, checked
against `ingest/framing.py` (an independent Python reader) on the same bytes:

- the decoder ends: rows, or MrtError with a one-line message; never a panic (that would be
  "internal decoder error"), a crash or a hang (a deadline per example);
- if it returns rows, framing.scan accepts the file too, with the same records, entries per
  AFI and skipped records, and the rows per AFI equal those entries;
- if framing.scan accepts a file the decoder refuses, the decoder saw a malformed RIB record
  or peer table (it reads every entry, framing only the record headers);
- a cut at a record boundary gives exactly the first rows of the whole file.

`python -m tests.fuzz.native_fuzz --examples 20000` runs a longer campaign; the test suite
runs a few hundred examples (tests/test_native.py).
"""
from __future__ import annotations

import argparse
import bz2
import gzip
import struct
import sys
import tempfile
import time
from datetime import datetime, timezone
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgp_congruency.ingest import framing
from tests.support.data import ARCHIVE, EDGE, RV2_2026, RV6_2026

T0 = datetime(2000, 1, 1, tzinfo=timezone.utc)


def boundaries(raw: bytes) -> list[int]:
    """Offsets where records start (and the end): the valid cut points of a raw MRT file."""
    out, pos = [0], 0
    while pos + 12 <= len(raw):
        pos += 12 + struct.unpack_from(">I", raw, pos + 8)[0]
        out.append(pos)
    return out


def _head(path: Path, records: int) -> bytes:
    """The first `records` records of a compressed dump, decompressed (a small real seed)."""
    opener = bz2.open if path.name.endswith(".bz2") else gzip.open
    with opener(path, "rb") as fh:
        data = fh.read(4 << 20)
    b = boundaries(data)
    return data[: b[min(records, len(b) - 1)]]


@cache
def seeds() -> dict[str, tuple[bytes, bool]]:
    """name -> (bytes, raw?) for every seed file."""
    raw = {
        "quagga.tdv2": (EDGE / "lab.quagga.rib.tdv2.mrt").read_bytes(),
        "openbgpd.tdv2": (EDGE / "lab.openbgpd.rib.tdv2.mrt").read_bytes(),
        "openbgpd.tdv1": (EDGE / "lab.openbgpd.rib.tdv1.mrt").read_bytes(),
        "addpath4": gzip.decompress((EDGE / "lab.rib.ipv4-addpath.gz").read_bytes()),
        "addpath6": gzip.decompress((EDGE / "lab.rib.ipv6-addpath.gz").read_bytes()),
        "64k": gzip.decompress((EDGE / "rrc00.bview.20180919.0800.64k-record.gz").read_bytes()),
        "rv2-2026": _head(RV2_2026, 60),
        "rv6-2026": _head(RV6_2026, 60),
        "rv2-2008-v1": _head(ARCHIVE / "route-views2/bgpdata/2008.05/RIBS/rib.20080501.0644.bz2", 200),
        "rrc00-2002-v1": _head(ARCHIVE / "rrc00/2002.07/bview.20020722.2337.gz", 200),
    }
    out = {k: (v, True) for k, v in raw.items()}
    out["quagga.gz"] = (gzip.compress(raw["quagga.tdv2"], mtime=0), False)
    out["rv2-2026.bz2"] = (bz2.compress(raw["rv2-2026"], 1), False)
    b = boundaries(raw["rv6-2026"])
    cut = b[len(b) // 2]
    out["rv6-2026.2stream.bz2"] = (bz2.compress(raw["rv6-2026"][:cut], 1) + bz2.compress(raw["rv6-2026"][cut:], 1), False)
    out["64k.gz"] = ((EDGE / "rrc00.bview.20180919.0800.64k-record.gz").read_bytes(), False)
    # Five 100 kB bzip2 blocks: the decoder splits them over cores (then falls back on trouble).
    out["rv2-2026.blocks.bz2"] = (bz2.compress(_head(RV2_2026, 450), 1), False)
    return out


def decode(path: Path):
    """(table, FrameStats) or the MrtError/FramingError message."""
    import pyarrow as pa

    from bgp_congruency.common.tables import RIB_ENTRIES
    from bgp_congruency.ingest.backends import native

    gen = native.decode_checked(path, 64, snapshot_time=T0)
    batches = []
    try:
        while True:
            batches.append(next(gen))
    except StopIteration as stop:
        return pa.Table.from_batches(batches, schema=RIB_ENTRIES), stop.value
    except framing.FramingError as exc:
        return str(exc)


@cache
def full_rows(name: str):
    data, _ = seeds()[name]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "seed"
        p.write_bytes(data)
        table, _ = decode(p)
    return table


def check(name: str, data: bytes, workdir: Path, boundary_cut: int | None = None) -> str:
    """Assert the properties for one mutated file; returns the outcome kind."""
    p = workdir / "case"
    p.write_bytes(data)
    got = decode(p)
    try:
        ref = framing.scan(p)
    except framing.FramingError as exc:
        ref = f"framing: {exc}"
    if isinstance(got, str):
        assert "\n" not in got and got, repr(got)
        assert "internal decoder error" not in got, got
        if not isinstance(ref, str):
            assert got.startswith(("malformed RIB record", "malformed PEER_INDEX_TABLE")), (got, ref)
        return "error"
    table, stats = got
    assert not isinstance(ref, str), (f"the decoder accepted what framing refuses: {ref}", name)
    assert (stats.records, dict(stats.entries), dict(stats.skipped), stats.first_timestamp) == \
        (ref.records, dict(ref.entries), dict(ref.skipped), ref.first_timestamp)
    afi = table.column("afi").to_pylist()
    assert {4: afi.count(4), 6: afi.count(6)} == {4: ref.entries.get(4, 0), 6: ref.entries.get(6, 0)}
    if boundary_cut is not None:
        full = full_rows(name)
        assert table.equals(full.slice(0, table.num_rows)), name
    return "rows"


@st.composite
def cases(draw):
    name = draw(st.sampled_from(sorted(seeds())))
    data, raw = seeds()[name]
    kind = draw(st.sampled_from(["cut_boundary", "cut", "flip", "overwrite"] if raw else ["cut", "flip", "overwrite"]))
    n = len(data)
    cut_at = None
    if kind == "cut_boundary":
        b = boundaries(data)
        cut_at = draw(st.sampled_from(b))
        data = data[:cut_at]
    elif kind == "cut":
        data = data[: draw(st.integers(0, n - 1))]
    elif kind == "flip":
        buf = bytearray(data)
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, n - 1))
            buf[i] ^= 1 << draw(st.integers(0, 7))
        data = bytes(buf)
    else:
        i = draw(st.integers(0, n - 1))
        junk = draw(st.binary(min_size=1, max_size=24))
        data = data[:i] + junk + data[i + len(junk):]
    return name, kind, data, cut_at


def run(examples: int, seed: int | None = None, deadline_ms: int = 5000) -> dict:
    """Run `examples` Hypothesis examples; returns counts of outcomes (raises on a failure)."""
    outcomes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="native-fuzz-") as d:
        work = Path(d)

        @settings(max_examples=examples, deadline=deadline_ms, database=None, derandomize=seed is None,
                  suppress_health_check=list(HealthCheck), print_blob=True)
        @given(cases())
        def prop(case):
            name, kind, data, cut_at = case
            out = check(name, data, work, cut_at if kind == "cut_boundary" else None)
            key = f"{kind}:{out}"
            outcomes[key] = outcomes.get(key, 0) + 1

        if seed is not None:
            from hypothesis import seed as hseed

            prop = hseed(seed)(prop)
        prop()
    return outcomes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=20000, help="examples to run (default 20000)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: derandomized)")
    a = ap.parse_args(argv)
    t = time.perf_counter()
    out = run(a.examples, a.seed)
    took = time.perf_counter() - t
    print(f"{sum(out.values())} examples in {took:.0f} s, no failure: "
          + ", ".join(f"{k} {v}" for k, v in sorted(out.items())))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.exit(main())
