"""What the rib_entries view costs over a bare read_parquet of the same files.

The view (lake.connect, lake/views.py) keeps only the files the manifest lists as ingested `ok`;
this runs each query through the view and through a bare glob, interleaved in one process
on the same files, and prints the median times and their ratio.

    .venv/bin/python bench/warehouse.py --data-dir data/demo [--repeats 7]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUERIES = {
    "count": "SELECT count(*) FROM {src}",
    "group by afi": "SELECT afi, count(DISTINCT peer_asn), count(*) FROM {src} GROUP BY afi",
    "one peer": "SELECT count(*) FROM {src} WHERE peer_asn = 6939",
}


def main() -> int:
    from bgp_congruency import lake
    from bgp_congruency.common.duck import quote
    from bgp_congruency.lake import views

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args()
    root = Path(args.data_dir).resolve()
    con = lake.connect(root)
    glob = views.ingest_globs(root)["rib_entries"]
    bare = f"read_parquet({quote(glob)}, hive_partitioning = true)"
    print(f"{'query':<14} {'view ms':>9} {'bare ms':>9} {'ratio':>6}")
    for name, q in QUERIES.items():
        times = {"view": [], "bare": []}
        results = {}
        for _ in range(args.repeats):
            for kind, src in (("view", "rib_entries"), ("bare", bare)):
                t = time.perf_counter()
                results[kind] = con.execute(q.format(src=src)).fetchall()
                times[kind].append(time.perf_counter() - t)
        assert results["view"] == results["bare"], (name, results)
        v, b = (statistics.median(times[k]) * 1000 for k in ("view", "bare"))
        print(f"{name:<14} {v:9.1f} {b:9.1f} {v / b:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
