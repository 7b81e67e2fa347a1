#!/usr/bin/env python3
"""What the VP-bucket layout of rib_entries costs and saves (common/vp_hash.py, ingest/writer.py).

Two measurements, each side by side with its baseline in one run:

- **Reading a partition.** The same month in two data dirs: `--plain` ingested before the
  layout (rows in the decoder's order), `--bucketed` ingested with it. For each, the DuckDB
  scan floor of the whole month (bench/compare.py's DUCKDB_FLOOR: every value the job reads is
  decoded) and of each VP partition of K, with the compare's own filter
  (pipeline/engines/duckdb.py `_partition_filter`). The layout's claim: a partition costs
  about 1/K of the month's floor, where the plain layout costs a whole scan.
- **Writing a file.** One snapshot decoded once, then written by ingest's writer and by a plain
  Parquet writer with the same settings and the decoder's row order (the writer before the
  layout): seconds and bytes.

    .venv/bin/python bench/layout.py --plain /work/d250full --bucketed /work/d250b --month 2026-07 \\
        --partitions 2,5,32 --plain-partitions 5 [--rib FILE] [--repeat 3] [--json]

It measures the month as it was stored before the routes (rib_entries/, every dump whole):
run it from a worktree of a commit before 2026-11-28 (bench/commits.worktree), on a data dir
that commit ingested. Its figures in RESULTS.md are that layout's.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench.compare import DUCKDB_FLOOR  # noqa: E402


def _best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def scans(data_dir: Path, month: str, ks: list[int], repeat: int, threads: int | None) -> dict:
    """The month's floor and each partition's, with the job's reader and filter."""
    import duckdb

    from bgp_congruency.common import vp_hash
    from bgp_congruency.pipeline.engines.duckdb import _bucketed, _files, _partition_filter, _read

    files = _files(str(data_dir / "rib_entries" / f"month={month}"))
    if not files:
        raise SystemExit(f"bench/layout.py: {data_dir}: no rib_entries for {month}")
    bucketed = _bucketed(files)
    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {threads}")
    src = _read(files)
    cols = "peer_asn::BIGINT AS peer_asn, * EXCLUDE (peer_asn)"

    def floor(where: str):
        return con.execute(DUCKDB_FLOOR.format(src=f"(SELECT {cols} FROM {src}{where})")).fetchone()

    floor("")  # warm the page cache: every figure below reads from memory
    whole_s, whole = _best(lambda: floor(""), repeat)
    out = {"data_dir": str(data_dir), "bucketed": bucketed, "files": len(files),
           "bytes": sum(os.path.getsize(f) for f in files), "rows": whole[0], "whole_s": round(whole_s, 3),
           "partitions": {}}
    for k in ks:
        parts, rows = [], 0
        for i in range(k):
            s, got = _best(lambda: floor(_partition_filter(vp_hash.even(k), i, bucketed)), repeat)
            parts.append(round(s, 3))
            rows += got[0]
        if rows != whole[0]:
            raise SystemExit(f"bench/layout.py: {data_dir}: the {k} partitions hold {rows:,} rows, the month {whole[0]:,}")
        out["partitions"][str(k)] = parts
    return out


def writes(rib: Path, repeat: int) -> dict:
    """One snapshot written by ingest's writer and by the plain writer it replaced."""
    import pyarrow.parquet as pq

    from bgp_congruency.common.tables import DECODED_SCHEMA
    from bgp_congruency.ingest import writer as W
    from bgp_congruency.ingest.backends import native

    batches = list(native.decode_checked(rib, 200_000, collector="bench", project="routeviews",
                                         snapshot_time=datetime(2000, 1, 1, tzinfo=timezone.utc), source_file=str(rib)))
    with tempfile.TemporaryDirectory() as tmp:
        plain, laid = Path(tmp) / "plain.parquet", Path(tmp) / "bucketed" / "x.parquet"

        def write_plain():
            with pq.ParquetWriter(plain, DECODED_SCHEMA, compression="zstd", use_dictionary=W._DICTIONARY,
                                  write_statistics=[c for c in W._STATISTICS if c in DECODED_SCHEMA.names]) as w:
                for b in batches:
                    w.write_batch(b.select(DECODED_SCHEMA.names))

        def write_bucketed():
            w = W.SnapshotWriter(laid)
            for b in batches:
                w.write(b)
            w.publish()

        plain_s, _ = _best(write_plain, repeat)
        laid_s, _ = _best(write_bucketed, repeat)
        return {"file": str(rib), "rows": sum(b.num_rows for b in batches),
                "plain_s": round(plain_s, 3), "bucketed_s": round(laid_s, 3),
                "plain_bytes": plain.stat().st_size, "bucketed_bytes": laid.stat().st_size,
                "row_groups": pq.ParquetFile(laid).metadata.num_row_groups}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plain", type=Path, help="a data dir ingested before the layout (no vp_bucket)")
    ap.add_argument("--bucketed", type=Path, help="the same month ingested with the layout")
    ap.add_argument("--month", default="2026-07")
    ap.add_argument("--partitions", default="5,32", help="comma-separated K for the bucketed dir (default 5,32)")
    ap.add_argument("--plain-partitions", default="5",
                    help="comma-separated K for the plain dir (default 5: each of its partitions is a whole scan)")
    ap.add_argument("--rib", type=Path, default=common.DEFAULT_RIB, help="the snapshot the write cost is measured on")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many (default 3)")
    ap.add_argument("--threads", type=int, help="DuckDB threads (default all cores)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    a = ap.parse_args(argv)
    ks = [int(k) for k in a.partitions.split(",")]
    started = datetime.now(timezone.utc)
    load = os.getloadavg()[0]
    doc = {"command": "bench/layout.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "date": started.strftime("%Y-%m-%d %H:%M UTC"), "load_before": round(load, 2), "dirs": [],
           "write": writes(a.rib, a.repeat) if a.rib and a.rib.exists() else None}
    for d, kk in ((a.plain, [int(k) for k in a.plain_partitions.split(",")]), (a.bucketed, ks)):
        if d:
            common.console().print(f"scanning {d} (K = {', '.join(map(str, kk))}) ...")
            doc["dirs"].append(scans(d, a.month, kk, a.repeat, a.threads))
    if len({d["rows"] for d in doc["dirs"]}) > 1:
        raise SystemExit("bench/layout.py: the two data dirs hold different months: "
                         + ", ".join(f"{d['data_dir']} {d['rows']:,}" for d in doc["dirs"]))
    name = Path(a.bucketed or a.plain or "write").name
    common.OUT.mkdir(parents=True, exist_ok=True)
    (common.OUT / f"layout-{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    if a.json:
        print(json.dumps(doc, indent=1))
    else:
        for d in doc["dirs"]:
            print(f"{d['data_dir']} ({'bucketed' if d['bucketed'] else 'plain'}): {d['rows']:,} rows, "
                  f"{d['bytes'] / 2**20:,.0f} MiB, whole month {d['whole_s']:.2f} s")
            for k, parts in d["partitions"].items():
                print(f"  K={k}: a partition {min(parts):.2f}-{max(parts):.2f} s, mean "
                      f"{sum(parts) / len(parts) / d['whole_s']:.3f} of the month (1/K = {1 / int(k):.3f})")
        if doc["write"]:
            w = doc["write"]
            print(f"write {w['rows']:,} rows: plain {w['plain_s']:.2f} s {w['plain_bytes'] / 2**20:.1f} MiB, "
                  f"bucketed {w['bucketed_s']:.2f} s {w['bucketed_bytes'] / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
