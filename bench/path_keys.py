#!/usr/bin/env python3
"""What integer path ids would gain the DuckDB compare: the per-path aggregate (pipeline/steps.py
`per_path`, the compare's longest step) on one month's cleaned rows grouped by the path, a
BIGINT[], as the compare groups them, against the same SQL grouped by a 64-bit hash of the path
(a UBIGINT) with no path carried: the grouping on one integer key that ids written by ingest
would give.

Not a bound either way: the hashed variant still reads the path and hashes it in the timed query
(ids would not), and it leaves out what ids would add (their dictionary, the join back to the
paths). Both variants carry the destination (the path's last AS) as a key column, as ids would
have to. The month runs as one VP partition, in one DuckDB connection at the config's memory
limit (the compare's partitions split it only when the limit is too small for the month): the
rows (`observed` and `rows`, as the compare renders them for the month) are built once, then the
two aggregates run in turn, --repeat rounds, each round in the other order, best of each; their
group counts are compared (a hash collision would show there).

    .venv/bin/python bench/path_keys.py --data-dir bench/out/routes/<commit>/data [--repeat 2] [--json]

Writes bench/out/path-keys-NAME.json (NAME: bench/common.data_name of the data dir).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common, render  # noqa: E402
from bench.common import OUT  # noqa: E402


def keyed(per_path: str, key: str) -> str:
    """`per_path` with the destination carried as a key column (it is the path's last AS: the
    groups do not change), and with `key` "hash" grouped by hash(path), the path not carried."""
    edits = [("FROM rows WHERE reason IS NULL",
              "FROM (SELECT *, path[-1] AS dest FROM rows) WHERE reason IS NULL"
              if key == "path" else
              "FROM (SELECT * EXCLUDE (path), hash(path) AS path, path[-1] AS dest FROM rows) WHERE reason IS NULL"),
             ("GROUP BY vp_group, vp_asn, afi, path, prefix)", "GROUP BY vp_group, vp_asn, afi, path, dest, prefix)"),
             ("SELECT vp_group, vp_asn, afi, path, prefix,", "SELECT vp_group, vp_asn, afi, path, dest, prefix,"),
             ("path[-1] AS dest_asn", "dest AS dest_asn")]
    for old, new in edits:  # each once, or the SQL of per_path changed under this bench
        if per_path.count(old) != 1:
            raise SystemExit(f"error: pipeline/steps.py per_path no longer holds {old!r} once: update bench/path_keys.py")
        per_path = per_path.replace(old, new)
    outer = per_path.rsplit("GROUP BY vp_group, vp_asn, afi, path", 1)
    if len(outer) != 2:
        raise SystemExit("error: pipeline/steps.py per_path has no outer GROUP BY by path: update bench/path_keys.py")
    return outer[0] + "GROUP BY vp_group, vp_asn, afi, path, dest" + outer[1]


def measure(data: Path, month: str, repeat: int) -> dict:
    from bgp_congruency.common import vp_hash
    from bgp_congruency.common.config import load
    from bgp_congruency.pipeline import steps as S
    from bgp_congruency.pipeline.engines.duckdb import DuckDBEngine

    cfg = load().with_overrides(data_dir=str(data), engine="duckdb")
    engine = DuckDBEngine(cfg.duckdb_memory_limit, cfg.duckdb_temp_dir, cfg.duckdb_threads)
    staged = tempfile.mkdtemp(prefix="path-keys-", dir=str(OUT))
    try:
        store = engine.store(str(data.resolve()))
        engine.open(store, store.month("routes", month), staged)
        sql = dict(zip([s.name for s in S.PARTITION_STEPS], S.partition_sql(cfg.method, "duckdb", engine.plan)))
        con = engine.con
        con.execute(f"CREATE VIEW entries AS SELECT * EXCLUDE ({vp_hash.COLUMN}) FROM month_entries")
        con.execute(f"CREATE VIEW observed AS {sql['observed']}")
        t = time.perf_counter()
        con.execute(f"CREATE TEMP TABLE rows AS {sql['rows']}")
        rows_s = time.perf_counter() - t
        n_rows, kept = con.execute("SELECT count(*), count(*) FILTER (WHERE reason IS NULL) FROM rows").fetchone()
        variants = {k: keyed(sql["per_path"], k) for k in ("path", "hash")}
        runs: dict[str, list[float]] = {k: [] for k in variants}
        groups: dict[str, int] = {}
        limit = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
        for i in range(repeat):
            for k, q in sorted(variants.items(), reverse=bool(i % 2)):  # each round in the other order
                t = time.perf_counter()
                con.execute(f"CREATE OR REPLACE TEMP TABLE out_{k} AS {q}")
                runs[k].append(round(time.perf_counter() - t, 2))
                groups[k] = con.execute(f"SELECT count(*) FROM out_{k}").fetchone()[0]
                con.execute(f"DROP TABLE out_{k}")
    finally:
        engine.close()
        shutil.rmtree(staged, ignore_errors=True)
    return {"data_dir": str(data), "month": month, "rows": n_rows, "kept_rows": kept, "rows_s": round(rows_s, 2),
            "runs": runs, "best": {k: min(v) for k, v in runs.items()}, "groups": groups,
            "same_groups": len(set(groups.values())) == 1, "memory_limit": limit}


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/path_keys.py: the per-path aggregate keyed by the path against a 64-bit key."""
    intro = ["`bench/path_keys.py --data-dir D`: the compare's per-path aggregate (DuckDB, the config's memory",
             "limit) on one month's cleaned rows, grouped by the path as today, and grouped by a 64-bit hash of",
             "it with no path carried (the grouping integer path ids written by ingest would give; not a bound",
             "either way: its docstring), in turn, best of --repeat, one VP partition; the group counts compared."]
    rows = [[f"`{r['name']}`", f"{r['rows']:,}", f"{r['kept_rows']:,}", f"{r['groups']['path']:,}",
             render.num(r["best"]["path"]), render.num(r["best"]["hash"]),
             render.ratio(r["best"]["path"] / r["best"]["hash"] if r["best"]["hash"] else None), "yes" if r["same_groups"] else "NO",
             f"`{r['command']}` ({r['date']}, load after {r['load_after']})"] for r in runs]
    return render.section("Integer path keys, measured in advance (bench/path_keys.py)", intro,
                          ["data", "rows", "kept", "paths", "keyed by path s", "keyed by hash s", "gain",
                           "same groups", "command"], rows, align="lrrrrrrll")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True, help="a data dir with an ingested month's routes")
    ap.add_argument("--month", default="2026-07", help="YYYY-MM (default 2026-07)")
    ap.add_argument("--repeat", type=int, default=2, help="rounds, each variant once per round (default 2)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    a = ap.parse_args(argv)
    if not (a.data_dir / "routes" / f"month={a.month}").is_dir():
        ap.error(f"--data-dir: {a.data_dir} has no routes of {a.month} (congruency ingest)")
    if not 1 <= a.repeat <= 10:
        ap.error("--repeat: 1..10")
    res = measure(a.data_dir, a.month, a.repeat)
    res |= {"name": common.data_name(a.data_dir), "command": "bench/path_keys.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "date": common.now_utc(), "load_after": common.load_now()}
    common.write_json(res, OUT / f"path-keys-{res['name']}.json")
    if a.json:
        common.write_json(res, stdout=True)
    else:
        common.console().print(common.table(["variant", "runs s", "best s", "groups"],
                                            [[k, ", ".join(map(str, v)), res["best"][k], f"{res['groups'][k]:,}"]
                                             for k, v in res["runs"].items()]))
    return 0 if res["same_groups"] else 1


if __name__ == "__main__":
    sys.exit(main())
