"""The month's `prefix_origins` table: every (family, prefix, origin) of its RIB entries with
their count, staged inside the compare (pipeline/job.Stager) and published in the month's
commit, so that the longest-prefix match of an address (selector/month.lookup_origins) reads
one small table, not every entry of the month."""
from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq

from bgp_congruency.common import duck, routes
from bgp_congruency.common.config import Config
from bgp_congruency.common.duck import quote
from bgp_congruency.common.tables import PREFIX_ORIGINS, sql_type

TABLE = "prefix_origins"


def stage(cfg: Config, month: str, staged: str) -> int:
    """Write the month's prefixes and origins into `staged`/prefix_origins from its routes
    (their entries counted; DuckDB under the memory limit, spilling into the staging folder);
    returns the rows."""
    src = routes.relation_sql(routes.month_files(cfg.data_dir, month))
    out_dir = Path(staged) / TABLE
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / "part-0.parquet"
    con = duck.connect(cfg, spill=Path(staged) / ".duckdb-tmp-prefixes")
    try:
        cols = ", ".join(f"CAST({f.name} AS {sql_type(f.type, 'duckdb')}) AS {f.name}"
                         for f in PREFIX_ORIGINS if f.name != "month")
        con.execute(f"""COPY (SELECT {cols} FROM (
                SELECT afi, prefix, origin_asn, sum(n) AS entries FROM {src}
                WHERE origin_asn IS NOT NULL GROUP BY ALL) ORDER BY afi, prefix, origin_asn)
            TO {quote(str(out))} (FORMAT parquet, COMPRESSION zstd)""")
        n = con.execute(f"SELECT count(*) FROM read_parquet({quote(duck.glob_literal(out))})").fetchone()[0]
    finally:
        con.close()
        shutil.rmtree(Path(staged) / ".duckdb-tmp-prefixes", ignore_errors=True)
    want = PREFIX_ORIGINS.remove(PREFIX_ORIGINS.get_field_index("month"))
    if not pq.read_schema(out).equals(want):  # the contract of common/tables.py
        raise OSError(f"{out}: written schema differs from common.tables.PREFIX_ORIGINS")
    return int(n)


def stage_month(cfg: Config, month: str, staged: str, out: str, progress) -> list[str]:
    """The compare's stager (pipeline/job.Stager): from the month's routes, not `staged`."""
    task = progress.add_task(f"prefixes {month}", total=1)
    stage(cfg, month, out)
    progress.advance(task)
    return [TABLE]
