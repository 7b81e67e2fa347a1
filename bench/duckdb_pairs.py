#!/usr/bin/env python3
"""The pair computation of congruency/METHOD.md (steps 1-7) as one DuckDB SQL query: the
single-machine baseline for the Spark job.

Reads DIR/rib_entries/month=M (hive partitioned, as ingest writes it), cleans paths
(default routes, AS sets, first AS not the peer, reserved ASNs, loops after prepending
removal), picks representative paths (most observations, then fewer ASes, then the
smallest ASN sequence), finds dual-stacked default-free VPs by coverage and writes the
pairs table (congruent, hops, shared ASes and their adjacency, non-adopters, edit
distance) to bench/out/duckdb/pairs-M.parquet.

--check compares these pairs row for row with the Spark job's published pairs
(DIR/pairs/month=M) and exits 1 on any difference (both directions, multiset).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402

PAIR_COLUMNS = ["vp_group", "vp_asn", "dest_asn", "v4_path", "v6_path", "congruent", "hops_v4", "hops_v6",
                "shared_asns", "shared_adjacent", "non_adopters", "edit_distance"]


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def pairs_sql(entries_glob: str, params) -> str:
    """The query: one SELECT giving the pairs table's columns (no month)."""
    reserved = " OR ".join(f"x = {lo}" if lo == hi else f"x BETWEEN {lo} AND {hi}"
                           for lo, hi in params.reserved_asns) or "false"
    if params.groups:
        group = "CASE collector " + " ".join(f"WHEN {_q(k)} THEN {_q(v)}" for k, v in sorted(params.groups.items())) \
                + " ELSE collector END"
    else:
        group = "collector"
    thr = float(params.min_coverage)
    # Levenshtein distance over two ASN lists: one DP row per element of b (list_reduce),
    # the inner list_reduce builds the next row left to right; same recurrence as Spark.
    edit = """list_reduce(v6_path,
        lambda prev, y: list_reduce(range(1, len(v4_path) + 1),
            lambda row, i: list_append(row, least(prev[i + 1] + 1, row[-1] + 1,
                                                  prev[i] + CASE WHEN v4_path[i] = y THEN 0 ELSE 1 END)),
            [prev[1] + 1]),
        range(0, len(v4_path) + 1))[-1]"""
    return f"""
WITH src AS (
    SELECT {group} AS vp_group, peer_asn::BIGINT AS vp_asn, peer_ip, afi, prefix, snapshot_time,
           has_as_set, as_path::BIGINT[] AS as_path
    FROM read_parquet({_q(entries_glob)}, hive_partitioning = true, hive_types_autocast = false)
),
stripped AS (  -- step 2: collapse runs of equal ASNs
    SELECT *, list_filter(as_path, lambda x, i: i = 1 OR x != as_path[i - 1]) AS path FROM src
),
classified AS (  -- step 1: the first reason that applies
    SELECT *, CASE
        WHEN prefix IN ('0.0.0.0/0', '::/0') THEN 'default_route'
        WHEN has_as_set THEN 'as_set'
        WHEN as_path IS NULL OR len(as_path) = 0 OR as_path[1] != vp_asn THEN 'first_as_not_peer'
        WHEN len(list_filter(as_path, lambda x: {reserved})) > 0 THEN 'reserved_asn'
        WHEN len(list_distinct(path)) != len(path) THEN 'loop'
    END AS reason
    FROM stripped
),
kept AS (
    SELECT vp_group, vp_asn, peer_ip, afi, prefix, snapshot_time, path, path[-1] AS dest_asn
    FROM classified WHERE reason IS NULL
),
per_path AS (  -- step 4: representative path per (VP, origin, AFI)
    SELECT vp_group, vp_asn, dest_asn, afi, path, count(*) AS path_observations
    FROM kept GROUP BY vp_group, vp_asn, dest_asn, afi, path
),
paths AS (
    SELECT vp_group, vp_asn, dest_asn, afi, path FROM (
        SELECT *, row_number() OVER (PARTITION BY vp_group, vp_asn, dest_asn, afi
                                     ORDER BY path_observations DESC, len(path) ASC, path ASC) AS rnk
        FROM per_path)
    WHERE rnk = 1
),
totals AS (  -- step 5: coverage against all origins of the month, per AFI
    SELECT count(DISTINCT dest_asn) FILTER (WHERE afi = 4) AS t4,
           count(DISTINCT dest_asn) FILTER (WHERE afi = 6) AS t6
    FROM kept
),
origins AS (
    SELECT vp_group, vp_asn, count(*) FILTER (WHERE afi = 4) AS o4, count(*) FILTER (WHERE afi = 6) AS o6
    FROM paths GROUP BY vp_group, vp_asn
),
default_free AS (
    SELECT vp_group, vp_asn FROM origins, totals
    WHERE o4 > 0 AND o6 > 0
      AND coalesce(CASE WHEN t4 > 0 THEN o4::DOUBLE / t4 END >= {thr}, false)
      AND coalesce(CASE WHEN t6 > 0 THEN o6::DOUBLE / t6 END >= {thr}, false)
),
base AS (  -- step 7: (default-free VP, destination) with a path in both AFIs
    SELECT p4.vp_group, p4.vp_asn, p4.dest_asn, p4.path AS v4_path, p6.path AS v6_path
    FROM paths p4
    JOIN paths p6 ON p6.afi = 6 AND p4.vp_group = p6.vp_group AND p4.vp_asn = p6.vp_asn
                  AND p4.dest_asn = p6.dest_asn
    JOIN default_free d ON d.vp_group = p4.vp_group AND d.vp_asn = p4.vp_asn
    WHERE p4.afi = 4 AND p4.dest_asn != p4.vp_asn
),
v6_asns AS (SELECT DISTINCT unnest(path) AS x FROM kept WHERE afi = 6),
inner_v4 AS (
    SELECT vp_group, vp_asn, dest_asn, unnest(v4_path[2:len(v4_path) - 1]) AS x FROM base
),
non_adopt AS (
    SELECT i.vp_group, i.vp_asn, i.dest_asn, list_sort(list_distinct(list(i.x))) AS non_adopters
    FROM inner_v4 i ANTI JOIN v6_asns v ON i.x = v.x
    GROUP BY i.vp_group, i.vp_asn, i.dest_asn
),
shared AS (
    SELECT *, list_sort(list_filter(list_intersect(v4_path, v6_path),
                                    lambda x: x != vp_asn AND x != dest_asn)) AS shared_asns
    FROM base
)
SELECT s.vp_group, s.vp_asn, s.dest_asn, s.v4_path, s.v6_path,
       s.v4_path = s.v6_path AS congruent,
       (len(s.v4_path) - 1)::INTEGER AS hops_v4,
       (len(s.v6_path) - 1)::INTEGER AS hops_v6,
       s.shared_asns,
       CASE WHEN len(s.shared_asns) = 0 THEN NULL
            ELSE len(list_filter(s.shared_asns, lambda a: NOT (
                     (a = s.v4_path[2] OR a = s.v4_path[-2]) AND (a = s.v6_path[2] OR a = s.v6_path[-2])))) = 0
       END AS shared_adjacent,
       coalesce(n.non_adopters, []::BIGINT[]) AS non_adopters,
       ({edit.replace('v4_path', 's.v4_path').replace('v6_path', 's.v6_path')})::INTEGER AS edit_distance
FROM shared s
LEFT JOIN non_adopt n ON n.vp_group = s.vp_group AND n.vp_asn = s.vp_asn AND n.dest_asn = s.dest_asn
"""


def latest_month(data_dir: Path) -> str | None:
    months = sorted(p.name.split("=", 1)[1] for p in (data_dir / "rib_entries").glob("month=*"))
    return months[-1] if months else None


def connect(threads: int | None = None, memory_limit: str | None = None):
    import duckdb

    con = duckdb.connect()
    tmp = common.OUT / "duckdb-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    con.execute(f"SET temp_directory = {_q(str(tmp))}")
    con.execute("SET preserve_insertion_order = false")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    if memory_limit:
        con.execute(f"SET memory_limit = {_q(memory_limit)}")
    return con


def compute(data_dir: Path, month: str, params, out: Path, threads=None, memory_limit=None) -> dict:
    """Run the query and write the pairs to `out`; returns figures."""
    glob = str(data_dir / "rib_entries" / f"month={month}" / "*" / "*.parquet")
    con = connect(threads, memory_limit)
    t0 = time.perf_counter()
    rows = con.execute(f"SELECT count(*) FROM read_parquet({_q(glob)}, hive_partitioning = true)").fetchone()[0]
    out.parent.mkdir(parents=True, exist_ok=True)
    con.execute(f"COPY ({pairs_sql(glob, params)}) TO {_q(str(out))} (FORMAT parquet, COMPRESSION zstd)")
    seconds = time.perf_counter() - t0
    pairs, nonc = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE NOT congruent) FROM read_parquet({_q(str(out))})").fetchone()
    return {"month": month, "rib_entries": rows, "pairs": pairs, "noncongruent_pairs": nonc,
            "seconds": round(seconds, 3), "rows_per_s": round(rows / seconds) if seconds else None,
            "output": str(out), "min_coverage": params.min_coverage}


def check(data_dir: Path, month: str, ours: Path, con_out, limit: int = 5) -> dict:
    """Row-for-row comparison (multiset, both directions) with the Spark job's pairs."""
    spark_glob = data_dir / "pairs" / f"month={month}"
    if not spark_glob.is_dir():
        raise SystemExit(f"{spark_glob}: no published Spark pairs (run congruency compare, or bench/compare.py)")
    cols = ", ".join(PAIR_COLUMNS)
    con = connect()
    con.execute(f"CREATE VIEW duck AS SELECT {cols} FROM read_parquet({_q(str(ours))})")
    con.execute(f"CREATE VIEW spark AS SELECT {cols} FROM read_parquet({_q(str(spark_glob / '*.parquet'))})")
    n_duck = con.execute("SELECT count(*) FROM duck").fetchone()[0]
    n_spark = con.execute("SELECT count(*) FROM spark").fetchone()[0]
    only_duck = con.execute("SELECT count(*) FROM (SELECT * FROM duck EXCEPT ALL SELECT * FROM spark)").fetchone()[0]
    only_spark = con.execute("SELECT count(*) FROM (SELECT * FROM spark EXCEPT ALL SELECT * FROM duck)").fetchone()[0]
    res = {"duckdb_pairs": n_duck, "spark_pairs": n_spark, "only_duckdb": only_duck, "only_spark": only_spark,
           "identical": only_duck == 0 and only_spark == 0 and n_duck == n_spark}
    if not res["identical"]:
        for name, q in (("only in DuckDB", "SELECT * FROM duck EXCEPT ALL SELECT * FROM spark"),
                        ("only in Spark", "SELECT * FROM spark EXCEPT ALL SELECT * FROM duck")):
            sample = con.execute(f"{q} ORDER BY vp_group, vp_asn, dest_asn LIMIT {limit}").fetchall()
            res[name.replace(" ", "_").lower()] = [dict(zip(PAIR_COLUMNS, r)) for r in sample]
            for r in sample:
                con_out.print(f"  {name}: {dict(zip(PAIR_COLUMNS, r))}")
    return res


def method_params(min_coverage: float | None):
    from dataclasses import replace

    from common.config import load

    p = load().method
    return replace(p, min_coverage=min_coverage) if min_coverage is not None else p


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path,
                    help="data dir with rib_entries/ (and pairs/ for --check); default bench/out/data, "
                         "the real 2026-07 pair that bench/compare.py ingests and runs the job on")
    ap.add_argument("--month", help="YYYY-MM (default: the latest month under rib_entries/)")
    ap.add_argument("--min-coverage", type=float,
                    help="default-free threshold; must match the Spark run for --check (default: 0 for "
                         "bench/out/data as bench/compare.py uses it, else the config's 0.9)")
    ap.add_argument("--check", action="store_true",
                    help="compare with the Spark job's published pairs; exit 1 on any difference")
    ap.add_argument("--out", type=Path, help="pairs Parquet to write (default bench/out/duckdb/pairs-M.parquet)")
    ap.add_argument("--threads", type=int, help="DuckDB threads (default: all cores)")
    ap.add_argument("--memory-limit", help="DuckDB memory_limit, e.g. 4GB (default: DuckDB's, 80%% of RAM)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    ap.add_argument("--result", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    con = common.console()
    if a.data_dir is None:
        a.data_dir = common.OUT / "data"
        if a.min_coverage is None:
            a.min_coverage = 0.0
    month = a.month or latest_month(a.data_dir)
    if not month:
        con.print(f"[red]{a.data_dir}/rib_entries: no month found (ingest first)[/]")
        return 2
    out = a.out or common.OUT / "duckdb" / f"pairs-{month}.parquet"
    params = method_params(a.min_coverage)
    con.print(f"duckdb pairs: {a.data_dir} month {month}, min_coverage {params.min_coverage}")
    res = compute(a.data_dir, month, params, out, a.threads, a.memory_limit)
    res["python_hwm"] = common.hwm_bytes()
    con.print(f"  {res['rib_entries']:,} rib_entries -> {res['pairs']:,} pairs "
              f"({res['noncongruent_pairs']:,} non-congruent) in {res['seconds']:.2f}s "
              f"({common.rate(res['rows_per_s'])}); peak RSS {common.mib(res['python_hwm'])}")
    rc = 0
    if a.check:
        res["check"] = check(a.data_dir, month, out, con)
        c = res["check"]
        if c["identical"]:
            con.print(f"[green]check: identical to Spark's pairs ({c['spark_pairs']:,} rows)[/]")
        else:
            con.print(f"[red]check: DIFFERENT: DuckDB {c['duckdb_pairs']:,} rows, Spark {c['spark_pairs']:,}; "
                      f"{c['only_duckdb']:,} only in DuckDB, {c['only_spark']:,} only in Spark[/]")
            rc = 1
    common.write_result(a.result, res)
    common.write_json(res, stdout=a.json)
    return rc


if __name__ == "__main__":
    sys.exit(main())
