#!/usr/bin/env python3
"""What integer path ids would gain the DuckDB compare: the per-path aggregate (pipeline/steps.py
`per_path`, the compare's longest step) on one month's cleaned rows, as the compare runs it
(grouped by the path, a BIGINT[]), against the same aggregate grouped by a 64-bit hash of the
path with no path carried: the cost of grouping on one BIGINT, a lower bound for path ids that
ingest would write (the ids' dictionary and the join back to the paths are not counted).

The rows (`observed` and `rows`, as the compare renders them for the month) are built once in one
DuckDB connection at the config's memory limit; the two aggregates then run in turn, --repeat
rounds, best of each, and their group counts must agree (a hash collision would show there).

    .venv/bin/python bench/path_keys.py --data-dir bench/out/routes/<commit>/data [--repeat 2] [--json]

Writes bench/out/path-keys-NAME.json (NAME: the data dir's parent folder name).
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


def hashed(per_path: str) -> str:
    """`per_path` grouped by hash(path) instead of the path, the path not carried (dest_asn kept
    as a column of the hash's group: any_value would carry the list again)."""
    inner = per_path.replace("FROM rows WHERE reason IS NULL",
                             "FROM (SELECT * EXCLUDE (path), hash(path) AS path FROM rows) WHERE reason IS NULL")
    return inner.replace("path[-1] AS dest_asn", "max(path) AS dest_asn")


def measure(data: Path, month: str, repeat: int) -> dict:
    from bgp_congruency.common import vp_hash
    from bgp_congruency.common.config import load
    from bgp_congruency.pipeline import steps as S
    from bgp_congruency.pipeline.engines.duckdb import DuckDBEngine

    cfg = load().with_overrides(data_dir=str(data), engine="duckdb")
    engine = DuckDBEngine(cfg.duckdb_memory_limit, None, cfg.duckdb_threads)
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
        variants = {"path": sql["per_path"], "hash": hashed(sql["per_path"])}
        runs: dict[str, list[float]] = {k: [] for k in variants}
        groups: dict[str, int] = {}
        for _ in range(repeat):
            for k, q in variants.items():
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
            "same_groups": len(set(groups.values())) == 1, "memory_limit": cfg.duckdb_memory_limit}


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/path_keys.py: the per-path aggregate keyed by the path against a 64-bit key."""
    intro = ["`bench/path_keys.py --data-dir D`: the compare's per-path aggregate (DuckDB, the config's memory",
             "limit) on one month's cleaned rows, grouped by the path as today, and grouped by a 64-bit hash of",
             "it with no path carried (a lower bound for integer path ids written by ingest), in turn, best of",
             "--repeat; the group counts agree."]
    rows = [[f"`{Path(r['data_dir']).parent.name}`", f"{r['rows']:,}", f"{r['kept_rows']:,}", f"{r['groups']['path']:,}",
             render.num(r["best"]["path"]), render.num(r["best"]["hash"]),
             render.ratio(r["best"]["path"] / r["best"]["hash"]), "yes" if r["same_groups"] else "NO",
             f"`{r['command']}` ({r['date']}, load after {r['load_after']})"] for r in runs]
    return render.section("Integer path keys, measured in advance (bench/path_keys.py)", intro,
                          ["data", "rows", "kept", "paths", "keyed by path s", "keyed by BIGINT s", "gain",
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
    res |= {"command": "bench/path_keys.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "date": common.now_utc(), "load_after": common.load_now()}
    common.write_json(res, OUT / f"path-keys-{a.data_dir.resolve().parent.name}.json")
    if a.json:
        common.write_json(res, stdout=True)
    else:
        common.console().print(common.table(["variant", "runs s", "best s", "groups"],
                                            [[k, ", ".join(map(str, v)), res["best"][k], f"{res['groups'][k]:,}"]
                                             for k, v in res["runs"].items()]))
    return 0 if res["same_groups"] else 1


if __name__ == "__main__":
    sys.exit(main())
