"""The month's `hints` table: one row per pair, the selector's fields computed over whole
columns (no Python per row), staged and published like the compare's tables."""
from __future__ import annotations

import re
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bgp_congruency.common import console, duck, vp_hash
from bgp_congruency.common.config import Config
from bgp_congruency.common.duck import quote
from bgp_congruency.common.tables import HINTS, sql_type
from bgp_congruency.lake import published
from bgp_congruency.lake.attach import pinned
from bgp_congruency.lake.commit import data_files
from bgp_congruency.pipeline.partitions import limit_bytes
from bgp_congruency.pipeline.publish import store_for
from bgp_congruency.selector import rules as selector
from bgp_congruency.selector.month import data_root, files_relation, month_snapshots, resolve_month

_KEY = ["congruent", "has_shared", "adjacent", "stability_v4", "stability_v6", "hops_v4", "hops_v6", "snapshots"]


def _derived(con, month_snapshots: int) -> tuple[pa.Table, pa.Table] | None:
    """The derived fields of every distinct key of the month's pairs, computed over whole
    columns (selector's *_array forms; no Python per key but its advice row): the key,
    hint_class, primary_afi, confidence and advice_row (1-based, into the advice); and the
    advice (selector.advice) of each (class, primary family, why), a handful of rows. None
    when the month has no pairs."""
    keys = con.sql(f"SELECT DISTINCT {', '.join(_KEY)} FROM hint_input").to_arrow_table()
    if keys.num_rows == 0:
        return None
    col = {c: keys.column(c).to_numpy(zero_copy_only=False) for c in _KEY}
    # The class depends on three small columns: selector.hint_class once per combination.
    code = col["congruent"].astype(np.int8) * 6 + col["has_shared"].astype(np.int8) * 3 + (col["adjacent"] + 1)
    combos, which = np.unique(code, return_inverse=True)
    names = [selector.hint_class(bool(c // 6), [1] if (c // 3) % 2 else [], None if c % 3 == 0 else bool(c % 3 - 1))
             for c in combos.tolist()]
    cls = pa.array(names, pa.string()).take(pa.array(which.ravel()))
    primary = selector.primary_afi_array(col["stability_v4"], col["stability_v6"], col["hops_v4"], col["hops_v6"])
    why = selector.primary_why_array(col["stability_v4"], col["stability_v6"], col["hops_v4"], col["hops_v6"])
    conf = selector.confidence_array(col["stability_v4"], col["stability_v6"], col["snapshots"], month_snapshots)
    adv = sorted({(n, a, w) for n in names for a in (4, 6) for w in range(len(selector.WHY_PRIMARY) - 1)})
    at = {k: i + 1 for i, k in enumerate(adv)}  # 1-based, as DuckDB indexes lists
    row = [at[(n, int(a), int(w))] for n, a, w in zip(cls.to_pylist(), primary.tolist(), why.tolist())]  # per key
    derived = keys.append_column("hint_class", cls).append_column("primary_afi", pa.array(primary)) \
        .append_column("primary_why", pa.array(why)).append_column("confidence", pa.array(conf, pa.float64())) \
        .append_column("advice_row", pa.array(row, pa.int32()))
    rows = [{"hint_class": n, "primary_afi": a, "primary_why": w,
             **selector.advice(n, a, why=selector.WHY_PRIMARY[w]).as_dict(), "caveat": selector.LOWER_BOUND}
            for n, a, w in adv]
    return derived, pa.Table.from_pylist(rows)


def _literal(v) -> str:
    """A value of the advice (a string, an integer, or None) as a DuckDB literal."""
    if v is None:
        return "NULL"
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise TypeError(f"advice value {v!r}: expected a string, an integer or None")
    return quote(v) if isinstance(v, str) else str(v)


#: DuckDB memory per pair of a hints partition (its pairs joined with their two paths, and
#: the partition's sort): the month's pairs are split into as many VP partitions as it takes
#: to stay under duckdb_memory_limit (as the compare's entries are, pipeline/partitions.py).
BYTES_PER_PAIR = 2000

#: The share of duckdb_memory_limit the hints give DuckDB: the rest is the process's own, and
#: the Arrow tables of each partition's keys and derived fields (_derived). DuckDB fills what
#: it is given, so with the whole limit a partition peaked at the limit plus 0.9 GB (4.95 GB
#: at 4GB, a scale-250 month); with half, 2.55 GB, and 64.6 s against 53.5 s.
MEMORY_SHARE = 0.5


def memory_bytes(cfg: Config) -> int | None:
    """DuckDB's memory for the hints, in bytes (None: no cap)."""
    limit = limit_bytes(cfg)
    return int(limit * MEMORY_SHARE) if limit else None


def connect(cfg: Config, spill=None):
    """A DuckDB connection for building hints: the config's (common/duck.connect) with
    MEMORY_SHARE of its memory limit."""
    con = duck.connect(cfg, spill=spill)
    if (cap := memory_bytes(cfg)) is not None:
        duck.limit(con, f"{max(1, cap // 2**20)}MiB", None)
    return con


def partitions(con, cfg: Config, pairs_files: list[str], fixed: bool = True) -> int:
    """The VP partitions the month's hints (or these pairs files' share of them) are built
    in: from the pairs (Parquet metadata) and the memory limit; a fixed compare_partitions
    where `fixed` and the config has one."""
    if fixed and cfg.compare_partitions:
        return cfg.compare_partitions
    n = con.execute("SELECT coalesce(sum(num_rows), 0) FROM parquet_file_metadata($f)",
                    {"f": [duck.glob_literal(f) for f in pairs_files]}).fetchone()[0] if pairs_files else 0
    limit = memory_bytes(cfg)
    return max(1, -(-int(n) * BYTES_PER_PAIR // limit)) if limit else 1


def _hints_sql(con, month: str, files: dict[str, list[str]], part: tuple[int, int] = (0, 1)) -> str | None:
    """The SELECT giving the month's hints table (columns and types of HINTS) for the VP
    partition `part` = (i, K) of K, or None when it has no pairs; `files`: the month's pairs
    and paths files. Joins each pair with its two paths once (a temp table), then with the
    derived fields of its key, in key order (a second one), and adds the advice of its class."""
    pairs, paths = files_relation(files["pairs"], "pairs"), files_relation(files["paths"], "paths")
    i, k = part
    only = f"WHERE {vp_hash.sql_partition('vp_asn', k)} = {i}" if k > 1 else ""
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE hint_input AS
        SELECT p.vp_group, p.vp_asn, p.dest_asn, p.v4_path, p.v6_path, p.shared_asns, p.congruent,
               len(p.shared_asns) > 0 AS has_shared, coalesce(p.shared_adjacent::TINYINT, -1) AS adjacent,
               s4.stability AS stability_v4, s6.stability AS stability_v6,
               p.hops_v4, p.hops_v6, least(s4.snapshots, s6.snapshots) AS snapshots
        FROM (SELECT * FROM {pairs} {only}) p
        JOIN (SELECT * FROM {paths} {only}) s4
          ON s4.vp_group = p.vp_group AND s4.vp_asn = p.vp_asn AND s4.dest_asn = p.dest_asn AND s4.afi = 4
        JOIN (SELECT * FROM {paths} {only}) s6
          ON s6.vp_group = p.vp_group AND s6.vp_asn = p.vp_asn AND s6.dest_asn = p.dest_asn AND s6.afi = 6""")
    got = _derived(con, month_snapshots(con, None, month, paths))
    if got is None:
        return None
    derived, advice = got
    con.register("hint_derived", derived)
    on = " AND ".join(f"i.{c} = d.{c}" for c in _KEY)  # no key column is null
    # Sorted before the advice's long texts join the rows, which the sort moved with every
    # row: 3.3M hints of synthetic scale 50 joined and sorted in 7.7-8.2 s with them, 2.3 s
    # without; the whole stager 9.2 -> 6.9-7.6 s. The advice then comes by its row number
    # from a list literal per column: a projection of one table, which keeps the table's
    # order (a join would not: duckdb.org, "Order preservation"; tests/test_selector.py
    # checks the order).
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE hint_sorted AS
        SELECT i.*, d.hint_class, d.primary_afi, d.primary_why, d.confidence, d.advice_row
        FROM hint_input i JOIN hint_derived d ON {on}
        ORDER BY i.vp_group, i.vp_asn, i.dest_asn""")
    con.unregister("hint_derived")
    con.execute("DROP TABLE hint_input")
    derived_cols = ("hint_class", "primary_afi", "confidence")  # DuckDB writes these nullable as they are
    direct = {"vp_group", "vp_asn", "dest_asn", "v4_path", "v6_path", "shared_asns",
              "stability_v4", "stability_v6", "snapshots", *derived_cols}
    lookup = {c: advice.column(c).to_pylist() for c in advice.column_names
              if c not in ("hint_class", "primary_afi", "primary_why")}
    cols = []
    for f in HINTS:
        if f.name == "month":
            expr = quote(month)
        elif f.name in ("source_asn", "dest_asn_v6", "via_v4", "via_v6"):
            expr = {"source_asn": "s.vp_asn", "dest_asn_v6": "s.dest_asn", "via_v4": "s.v4_path[2]",
                    "via_v6": "s.v6_path[2]"}[f.name]
        elif f.name in direct:
            expr = f"s.{f.name}"
        elif f.name == "via_proxy":
            expr = "false"
        elif f.name in ("proxies", "notes"):
            expr = "[]"
        elif f.name in lookup:
            expr = f"[{', '.join(map(_literal, lookup[f.name]))}][s.advice_row]"
        else:
            expr = "NULL"
        if f.name not in lookup and f.name not in derived_cols:
            # DuckDB would write constants and key columns NOT NULL; HINTS has none
            expr = f"CASE WHEN s.hint_class IS NULL THEN NULL ELSE {expr} END"
        texts = {"month": [month], "hint_class": selector.CLASSES}.get(f.name) or \
            sorted({v for v in lookup.get(f.name, ()) if isinstance(v, str)})
        if texts:
            # A string of a few values as an ENUM of them: DuckDB's Parquet writer then writes
            # its dictionary once, where a VARCHAR's every row is hashed into it, the advice's
            # long texts included; the file's column is the same string column (stage checks
            # the schema written). At synthetic scale 50, each of the two partitions' COPY
            # (1.65M hints) 2.0-2.1 -> 1.3 s, the whole stager 8.4 -> 6.8 s (2026-12-02).
            cols.append(f"CAST({expr} AS ENUM({', '.join(map(_literal, texts))})) AS {f.name}")
        else:
            cols.append(f"CAST({expr} AS {sql_type(f.type, 'duckdb')}) AS {f.name}")
    return f"SELECT {', '.join(cols)} FROM hint_sorted s"


def _published_files(cfg: Config, month: str) -> dict[str, list[str]]:
    return published.files(data_root(cfg), ["pairs", "paths"], month)


def build(con, cfg: Config, month: str) -> pa.RecordBatchReader:
    """The month's hints table (schema HINTS) as a stream of record batches, from its
    published pairs and paths (a month published before its hints were); `con` from
    connect()."""
    sql = _hints_sql(con, month, _published_files(cfg, month))
    if sql is None:
        return pa.RecordBatchReader.from_batches(HINTS, [])
    reader = con.sql(sql).to_arrow_reader(100_000)
    return pa.RecordBatchReader.from_batches(
        HINTS, (pa.Table.from_batches([b]).cast(HINTS).to_batches()[0] for b in reader if b.num_rows))


#: A file of one VP partition of the compare (pipeline/engines/duckdb.py writes each per-VP
#: table's rows of partition i to part-<i>.parquet).
_PART = re.compile(r"part-(\d+)\.parquet")


def _compare_parts(files: dict[str, list[str]]) -> list[dict[str, list[str]]] | None:
    """The month's pairs and paths files as the compare's VP partitions, each a {pairs, paths}
    of its own files (the DuckDB engine's part-<i>.parquet of both tables); None where the
    names do not line up (Spark's files, a month published before)."""
    by = {t: {Path(f).name: f for f in files[t]} for t in ("pairs", "paths")}
    names = set(by["pairs"])
    if not names or names != set(by["paths"]) or not all(_PART.fullmatch(n) for n in names):
        return None
    return [{t: [by[t][n]] for t in by} for n in sorted(names, key=lambda n: int(_PART.fullmatch(n).group(1)))]


def stage(cfg: Config, month: str, staged: str, files: dict[str, list[str]], prog) -> dict:
    """Write the month's hints table into `staged`/hints (a VP partition at a time: memory
    follows the partition, not the month) from `files`, the month's pairs and paths: the
    compare's own staged tables, so that the month's commit publishes its hints with them
    (pipeline/job.py). The partitions are the compare's own where its files show them (each
    reads only its two files, no scan of the month per partition), each split again only if
    its pairs need more than the memory limit; else VP hash ranges over the whole month.
    Returns rows per class. `prog`: the caller's rich Progress."""
    store = store_for(data_root(cfg))
    con = connect(cfg, spill=Path(staged) / ".duckdb-tmp")  # every partition spills there
    try:
        store.mkdirs(f"{staged}/hints")
        parts = _compare_parts(files)
        if parts and len(parts) > 1:  # the compare's partitions, split again only where memory says
            plan = [(g, i, k) for g in parts for k in [partitions(con, cfg, g["pairs"], fixed=False)] for i in range(k)]
        else:  # one file or none per table, or files of no VP partition: VP hash ranges of the month
            plan = [(files, i, k) for k in [partitions(con, cfg, files["pairs"])] for i in range(k)]
        task = prog.add_task(f"hints {month}", total=len(plan))
        for j, (group, i, k) in enumerate(plan):
            out = Path(staged) / "hints" / f"part-{j}.parquet"
            sql = _hints_sql(con, month, group, (i, k))
            if sql is None:
                pq.write_table(HINTS.empty_table(), out, compression="zstd")
            else:
                con.execute(f"COPY ({sql}) TO {quote(out)} (FORMAT parquet, COMPRESSION zstd)")
            if not pq.read_schema(out).equals(HINTS):  # the contract of common/tables.py
                raise OSError(f"{out}: written schema differs from common.tables.HINTS")
            prog.advance(task)
        every = quote(f"{duck.glob_literal(Path(staged) / 'hints')}/*.parquet")
        counts = con.execute(f"SELECT hint_class, count(*) FROM read_parquet({every}) GROUP BY 1 ORDER BY 1").fetchall()
    finally:
        con.close()
        store.delete(f"{staged}/.duckdb-tmp")
    return {c: int(n) for c, n in counts}


def staged_files(staged: str) -> dict[str, list[str]]:
    """The pairs and paths files a compare staged (what the catalog will register)."""
    return {t: data_files(f"{staged}/{t}") for t in ("pairs", "paths")}


def stage_month(cfg: Config, month: str, staged: str, out: str, progress) -> list[str]:
    """The compare's stager (pipeline/job.Stager): the month's hints from the pairs and paths
    it staged, published in the month's own commit."""
    stage(cfg, month, out, staged_files(staged), progress)
    return ["hints"]


def publish(cfg: Config, month: str | None = None, progress=None) -> dict:
    """Build the hints of a published month again from its published pairs and paths and
    publish them on their own (the compare publishes a month's hints in its own commit; this
    is for a month published before, or after the selector's rules changed). Staged whole
    under DATA_DIR/_staging, then committed to the catalog: readers see the old hints or the
    new. Returns a summary: month, rows, rows per class, path, seconds. `progress`: the
    caller's rich Progress (one display), else its own."""
    t0 = time.perf_counter()
    month = resolve_month(cfg, month)
    store = store_for(data_root(cfg))
    staged = store.staging(month)
    try:  # every partition reads the pairs and paths of one catalog snapshot
        with console.progress() if progress is None else nullcontext(progress) as prog, pinned(data_root(cfg)):
            classes = stage(cfg, month, staged, _published_files(cfg, month), prog)
            [final] = store.publish(staged, ["hints"], month)
            staged = None
    finally:
        if staged is not None:
            store.delete(staged)
    return {"month": month, "rows": sum(classes.values()), "classes": classes, "path": final,
            "seconds": round(time.perf_counter() - t0, 3)}
