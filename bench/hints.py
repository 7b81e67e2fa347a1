#!/usr/bin/env python3
"""The path selector's costs, each against a floor measured side by side in this script:

- hints table: `selector.table.publish` over a generated month of N pairs (and 2N paths)
  vs the floor = DuckDB joining the same pairs with their two paths and writing the result
  as Parquet (the I/O any hints table needs). The selector's definitions run in Python once
  per distinct key (class inputs, stabilities, hops, snapshots), not per pair: the number
  of distinct keys is reported.
- JSON Lines export: `tunnels.jsonl.write` of the published hints table (rendered a batch at
  a time by DuckDB) vs the per-row writer it replaced (`jsonl.line` on each row's dict) on
  the same table, and the floor = DuckDB's own `COPY ... (FORMAT json)` of the same rows.
- address lookup: `advise` for one IPv4 and one IPv6 address (longest-prefix match over the
  month's routes) vs the floor = DuckDB reading the prefix, afi and origin columns of
  the same routes once.

    .venv/bin/python bench/hints.py --pairs 2000000 [--entries DATA_DIR_WITH_RIB_ENTRIES --month 2026-07]

Works under bench/out/hints/ (or --work DIR); the result goes to bench/out/hints-N.json, which
bench/run.py renders into RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import render  # noqa: E402
from bench.common import OUT, machine_facts, write_json  # noqa: E402
from bgp_congruency.common import routes  # noqa: E402
from bgp_congruency.common.duck import quote  # noqa: E402

MONTH = "2026-01"


def generate(con, root: Path, pairs: int) -> None:
    """A published month of `pairs` pairs from 300 VPs; 70% of the paths fully stable."""
    for t in ("pairs", "paths", "vps", "month_summary"):
        (root / t / f"month={MONTH}").mkdir(parents=True, exist_ok=True)
    con.execute(f"""
        CREATE OR REPLACE TABLE p AS
        SELECT 'route-views' AS vp_group, (i % 300) + 1 AS vp_asn, (i // 300) + 1000 AS dest_asn,
               hash(i) AS h FROM range({pairs}) t(i)""")
    con.execute(f"""
        COPY (SELECT vp_group, vp_asn, dest_asn,
                     [vp_asn, 5000 + h % 40, 6000 + (h >> 8) % 500, dest_asn] AS v4_path,
                     [vp_asn, 5000 + (h >> 16) % 40, 7000 + (h >> 24) % 500, dest_asn] AS v6_path,
                     (h % 10 = 0) AS congruent, 3::INT AS hops_v4, 3::INT AS hops_v6,
                     CASE WHEN (h % 40) = ((h >> 16) % 40) THEN [5000 + h % 40] ELSE [] END AS shared_asns,
                     CASE WHEN (h % 40) = ((h >> 16) % 40) THEN true END AS shared_adjacent,
                     []::BIGINT[] AS non_adopters, 2::INT AS edit_distance
              FROM p) TO {quote(f'{root}/pairs/month={MONTH}/part-0.parquet')} (FORMAT parquet)""")
    con.execute(f"""
        COPY (SELECT vp_group, vp_asn, dest_asn, afi::TINYINT AS afi,
                     [vp_asn, dest_asn] AS path, 10::BIGINT AS observations, 10::BIGINT AS path_observations,
                     CASE WHEN (h >> afi) % 10 < 7 THEN 1.0 ELSE round(((h >> (afi + 4)) % 100) / 100.0, 2) END
                       AS stability, 1::BIGINT AS prefixes, 1 + ((h >> afi) % 5)::BIGINT AS snapshots
              FROM p, (VALUES (4), (6)) a(afi)) TO {quote(f'{root}/paths/month={MONTH}/part-0.parquet')} (FORMAT parquet)""")
    con.execute(f"""COPY (SELECT DISTINCT vp_group, vp_asn FROM p)
                    TO {quote(f'{root}/vps/month={MONTH}/part-0.parquet')} (FORMAT parquet)""")
    # What makes the month published (lake/published.py); its figures don't matter here.
    con.execute(f"""COPY (SELECT count(*) AS pairs FROM p)
                    TO {quote(f'{root}/month_summary/month={MONTH}/part-0.parquet')} (FORMAT parquet)""")
    from bgp_congruency.lake import upkeep

    upkeep.migrate(root)  # the files registered in the catalog where they are, as a publish would


def floor_hints(con, root: Path, out: Path) -> int:
    pairs, paths = f"{root}/pairs/month={MONTH}/*.parquet", f"{root}/paths/month={MONTH}/*.parquet"
    con.execute(f"""
        COPY (SELECT p.*, s4.stability AS stability_v4, s6.stability AS stability_v6,
                     least(s4.snapshots, s6.snapshots) AS snapshots
              FROM read_parquet({quote(pairs)}) p
              JOIN read_parquet({quote(paths)}) s4 ON s4.vp_group = p.vp_group AND s4.vp_asn = p.vp_asn
                   AND s4.dest_asn = p.dest_asn AND s4.afi = 4
              JOIN read_parquet({quote(paths)}) s6 ON s6.vp_group = p.vp_group AND s6.vp_asn = p.vp_asn
                   AND s6.dest_asn = p.dest_asn AND s6.afi = 6
              ORDER BY p.vp_group, p.vp_asn, p.dest_asn)
        TO {quote(out)} (FORMAT parquet, COMPRESSION zstd)""")
    return con.execute(f"SELECT count(*) FROM read_parquet({quote(out)})").fetchall()[0][0]


JSONL_CHILD = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import duckdb
import pyarrow.dataset as ds
from bgp_congruency.common.config import load
from bgp_congruency.common.duck import quote
from bgp_congruency.common.tables import HINTS
from bgp_congruency.selector.exports import jsonl
mode, data, month, out = sys.argv[2:6]
from bgp_congruency.lake import published
src = published.files(data, ["hints"], month)["hints"]
t0 = time.perf_counter()
if mode == "write":
    jsonl.write(load().with_overrides(data_dir=data), out, month)
elif mode == "per_row":  # the writer before: a dict and json.dumps per row
    with open(out, "w", encoding="utf-8") as fp:
        for b in ds.dataset(src, format="parquet", schema=HINTS).to_batches():
            for r in b.to_pylist():
                fp.write(jsonl.line(r) + "\n")
else:
    duckdb.connect().execute(f"COPY (SELECT {quote(jsonl.SCHEMA)} AS schema, * FROM read_parquet({quote(str(src) + '/*.parquet')})) "
                             f"TO {quote(out)} (FORMAT json)")
# VmHWM, not ru_maxrss: Linux carries the parent's peak across fork and exec into ru_maxrss.
hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
print(json.dumps({"s": time.perf_counter() - t0, "rss_mib": hwm // 1024}))
"""


def bench_jsonl(cfg, work: Path) -> dict:
    """Each writer in its own process (its peak RSS is its own), on the same published table."""
    import subprocess

    repo = str(Path(__file__).resolve().parents[1])
    got, files = {}, {}
    for mode in ("write", "per_row", "floor"):
        files[mode] = work / f"{mode}.jsonl"
        p = subprocess.run([sys.executable, "-c", JSONL_CHILD, repo, mode, str(cfg.data_dir), MONTH, str(files[mode])],
                           capture_output=True, text=True, check=True)
        got[mode] = json.loads(p.stdout.splitlines()[-1])
    same = files["write"].read_bytes() == files["per_row"].read_bytes()
    with open(files["write"], "rb") as fp:
        lines = sum(1 for _ in fp)
    size = files["write"].stat().st_size
    for f in files.values():
        f.unlink()
    return {"lines": lines, "bytes": size, "write_s": round(got["write"]["s"], 2),
            "per_row_s": round(got["per_row"]["s"], 2), "floor_s": round(got["floor"]["s"], 2),
            "speedup": round(got["per_row"]["s"] / got["write"]["s"], 1),
            "ratio": round(got["write"]["s"] / got["floor"]["s"], 2),
            "rss_mib": {m: got[m]["rss_mib"] for m in got}, "byte_identical": same}


def timed(fn):
    t0 = time.perf_counter()
    r = fn()
    return time.perf_counter() - t0, r


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/hints.py: the hints table and its JSON Lines export, each against its floor."""
    intro = ["`bench/hints.py --pairs N`: a generated month of N pairs. Hints: `selector.table.publish` vs",
             "DuckDB joining the pairs with their paths into Parquet. Export: `tunnels.jsonl.write` (a batch",
             "at a time through DuckDB's `to_json`) vs the per-row writer it replaced (`jsonl.line` per row)",
             "and DuckDB's own `COPY ... (FORMAT json)`, each in its own process."]
    rows = []
    for r in sorted(runs, key=lambda r: r["pairs"]):
        h, j = r["hints"], r.get("jsonl") or {}
        rss = j.get("rss_mib") or {}
        rows.append([f"{r['pairs']:,}", render.num(h["publish_s"]), render.num(h["floor_s"]), f"{h['ratio']}x",
                     f"{j.get('bytes', 0) / 2**20:,.0f} MiB", render.num(j.get("write_s")), render.num(j.get("per_row_s")),
                     render.num(j.get("floor_s")), f"{j.get('speedup')}x", f"{j.get('ratio')}x",
                     f"{rss.get('write', 0):,} / {rss.get('per_row', 0):,} MiB",
                     "yes" if j.get("byte_identical") else "**no**"])
    return render.section("Path selector: the hints table and the JSON Lines export", intro,
                    ["pairs", "publish s", "floor s", "ratio", "export size", "export s", "per-row s",
                     "COPY s", "speedup", "vs COPY", "peak RSS (export / per-row)", "same bytes"],
                    rows, "rrrrrrrrrrrl")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=1_000_000)
    ap.add_argument("--entries", type=Path, help="a data dir with a published month (routes, paths, vps, pairs)")
    ap.add_argument("--month", default="2026-07")
    ap.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / "out" / "hints")
    args = ap.parse_args()

    from bgp_congruency.common import duck
    from bgp_congruency.common.config import load
    from bgp_congruency.selector.advice import advise
    from bgp_congruency.selector.table import publish as publish_hints

    res: dict = {"pairs": args.pairs}
    root = args.work / f"month-{args.pairs}"
    shutil.rmtree(root, ignore_errors=True)
    con = duck.connect(load())  # the caps publish() uses too
    generate(con, root, args.pairs)
    cfg = load().with_overrides(data_dir=root)
    floor_s, n = timed(lambda: floor_hints(con, root, args.work / "floor.parquet"))
    pub_s, summary = timed(lambda: publish_hints(cfg, MONTH))
    keys = con.execute(f"""SELECT count(*) FROM (SELECT DISTINCT stability, snapshots, afi FROM
                           read_parquet({quote(f'{root}/paths/month={MONTH}/*.parquet')}))""").fetchall()[0][0]
    assert summary["rows"] == n == args.pairs, (summary, n)
    res["hints"] = {"publish_s": round(pub_s, 2), "floor_s": round(floor_s, 2), "ratio": round(pub_s / floor_s, 2),
                    "pairs_per_s": round(n / pub_s), "classes": summary["classes"], "distinct_path_numbers": keys}
    res["jsonl"] = bench_jsonl(cfg, args.work)
    if args.entries:
        ecfg = load().with_overrides(data_dir=args.entries)
        from bench.compare import route_files

        files = ", ".join(quote(f) for f in route_files(Path(args.entries), args.month))
        scan_s, rows = timed(lambda: con.execute(
            f"SELECT count(*), count(DISTINCT prefix), max({routes.origin_sql()}), max(afi) FROM read_parquet([{files}])").fetchall())
        ask_s, ans = timed(lambda: advise(ecfg, "6939", ["8.8.8.8", "2001:4860::8888"], month=args.month))
        res["lookup"] = {"advise_s": round(ask_s, 3), "scan_floor_s": round(scan_s, 3),
                         "ratio": round(ask_s / scan_s, 2), "entries": rows[0][0],
                         "prefix_v4": ans["hints"][0]["prefix_v4"]}
    con.close()
    res["command"] = f"bench/hints.py --pairs {args.pairs}"
    res["machine"] = machine_facts()
    write_json(res, OUT / f"hints-{args.pairs}.json", stdout=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
