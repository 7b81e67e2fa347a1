"""The DuckDB engine of the compare job: runs pipeline/steps.py's DuckDB SQL in-process (no JVM).

One connection per month, capped by `duckdb_memory_limit` and spilling to
`duckdb_temp_dir` (default: the month's staging folder, so a failed run leaves nothing
behind elsewhere). Intermediates and output tables are DuckDB temp tables (spilled when
they don't fit); output tables are streamed batch by batch into Parquet with the exact
Arrow schemas of common/tables.py.
"""
from __future__ import annotations

import os
import re

import pyarrow as pa
import pyarrow.parquet as pq

from bgp_congruency.common import duck, layout
from bgp_congruency.common.duck import quote
from bgp_congruency.common.tables import TABLES, TRANSITIONS
from bgp_congruency.pipeline import steps as S
from bgp_congruency.pipeline.publish import LocalStore

_SCALAR = {
    "VARCHAR": "string", "BIGINT": "bigint", "UINTEGER": "bigint", "INTEGER": "int", "USMALLINT": "int",
    "SMALLINT": "smallint", "UTINYINT": "smallint", "TINYINT": "tinyint", "BOOLEAN": "boolean",
    "DOUBLE": "double", "FLOAT": "float", "TIMESTAMP WITH TIME ZONE": "timestamp", "TIMESTAMP": "timestamp_ntz",
    "TIMESTAMP_S": "timestamp_ntz", "UBIGINT": "decimal(20,0)", "DATE": "date", "BLOB": "binary",
}


def spark_type(t: str) -> str:
    """A DuckDB type in the name Spark gives the same Parquet column (messages match on both engines)."""
    if t.endswith("[]"):
        return f"array<{spark_type(t[:-2])}>"
    return _SCALAR.get(t, t.lower())


def _files(folder: str) -> list[str]:
    """Parquet files under a folder, skipping hidden and temp names as Spark does."""
    from bgp_congruency.common.published import data_files

    return [f for f in data_files(folder) if f.endswith(".parquet")]


def _read(folder: str) -> str:
    files = "[" + ", ".join(quote(f) for f in _files(folder)) + "]"
    return f"read_parquet({files}, hive_partitioning = true, hive_types_autocast = false)"


class DuckDBEngine:
    name = "duckdb"

    def __init__(self, memory_limit: str | None = "auto", temp_dir: str | None = None, threads: int | None = None):
        self.memory_limit, self.temp_dir, self.threads = duck.memory_limit(memory_limit), temp_dir, threads
        self.con = None
        self.only: set[str] | None = None  # output tables written (None: all)

    def store(self, root: str) -> LocalStore:
        if layout.is_cluster(root):
            raise S.JobError(f"{root}: the DuckDB engine reads a local data dir; use --engine spark for cluster storage")
        return LocalStore(root)

    def open(self, store, src: str) -> dict[int, int]:
        import duckdb

        self.end_month()
        self._spill_set, self._kept = False, None
        self.con = duckdb.connect()
        self.con.execute("SET preserve_insertion_order = false")
        duck.limit(self.con, self.memory_limit, self.threads)
        self.src = src
        have = {name: spark_type(typ) for name, typ, *_ in
                self.con.execute(f"DESCRIBE SELECT * FROM {_read(src)}").fetchall()}
        S.check_columns(have, src)
        cols = ", ".join(f"{c}::BIGINT[] AS {c}" if c == "as_path" else f"{c}::BIGINT AS {c}" if c == "peer_asn"
                         else c for c in S.REQUIRED)
        self.con.execute(f"CREATE VIEW entries AS SELECT {cols} FROM {_read(src)}")
        per_afi, self.snapshots = S.counts(self.con.execute(S.COUNTS).fetchall())
        return per_afi

    def pin(self) -> None:
        """Read the month's entries once into memory: later runs (the sensitivity
        variants) share them instead of reading the Parquet again."""
        self.con.execute("CREATE TEMP TABLE entries_pinned AS SELECT * FROM entries")
        self.con.execute("CREATE OR REPLACE VIEW entries AS SELECT * FROM entries_pinned")

    def run(self, params, staged: str, prev: dict[str, str] | None, step, keep: bool = False) -> None:
        """Every step into staged/<table>; `keep`: leave the connection open (and drop the
        steps' objects) for another run on the same entries."""
        first = 0
        if keep:
            # The steps before the first whose text the new parameters change are kept from
            # the run before (a variant of min_coverage alone keeps the cleaning and paths).
            first = min(S.first_changed("duckdb", getattr(self, "_kept", None), params, self.snapshots),
                        len(S.MONTH_STEPS) - 1)
            self._kept = params
            for s in reversed(S.MONTH_STEPS[first:]):
                self.con.execute(f"DROP {self._kind(s)} IF EXISTS {s.name}")
            self.only = {"month_summary"}  # a variant's other tables are never read: not written
        else:
            self.only, self._kept = None, None
        if first == 0 and not getattr(self, "_spill_set", False):  # a kept connection spills where it began
            spill = self.temp_dir or os.path.join(staged, "_spill")
            os.makedirs(spill, exist_ok=True)
            self.con.execute(f"SET temp_directory = {quote(spill)}")
            self._spill_set = keep
        for s in S.MONTH_STEPS[first:]:
            step(s.name)
            self._run_step(s, S.render(s, "duckdb", params, self.snapshots), staged)
        step("transitions")
        if prev is None:
            self._write_arrow(TRANSITIONS.empty_table().to_batches(), TRANSITIONS, staged, "transitions")
        else:
            for t, path in prev.items():
                self.con.execute(f"CREATE VIEW prev_{t} AS SELECT * FROM {_read(path)}")
            self._run_step(S.TRANSITIONS, S.render(S.TRANSITIONS, "duckdb", params, self.snapshots), staged)
        if not keep:
            self.end_month()  # every table is written; closing releases the spill files

    #: In a variant run only month_summary is written: these tables become views there, so
    #: the columns it never reads (the edit distance, the divergence) are never computed.
    LAZY_IN_VARIANTS = ("pairs", "divergence")

    def _kind(self, s: S.SqlStep) -> str:
        lazy = self.only is not None and s.name in self.LAZY_IN_VARIANTS
        return "VIEW" if s.kind == "view" or lazy else "TABLE"

    def _run_step(self, s: S.SqlStep, sql: str, staged: str) -> None:
        kind = self._kind(s)
        self.con.execute(f"CREATE TEMP {kind} {s.name} AS {sql}")
        if s.kind == "table" and (self.only is None or s.name in self.only):
            schema = TRANSITIONS if s.name == "transitions" else TABLES[s.name]
            reader = self.con.sql(f"SELECT * FROM {s.name}").to_arrow_reader(200_000)
            self._write_arrow(reader, schema, staged, s.name)

    @staticmethod
    def _write_arrow(batches, schema: pa.Schema, staged: str, name: str) -> None:
        """Batches -> staged/<name>/part-0.parquet with the table's schema (minus `month`,
        which lives in the folder name), column for column."""
        file_schema = pa.schema([f for f in schema if f.name != "month"])
        os.makedirs(f"{staged}/{name}", exist_ok=True)
        with pq.ParquetWriter(f"{staged}/{name}/part-0.parquet", file_schema, compression="zstd") as w:
            for b in batches:
                if b.schema.names != file_schema.names:
                    raise S.JobError(f"{name}: columns {b.schema.names} differ from {file_schema.names}")
                w.write_batch(b.cast(file_schema))

    def summary(self, staged: str) -> dict | None:
        rows = pq.read_table(f"{staged}/month_summary").to_pylist()
        return rows[0] if rows else None

    @staticmethod
    def read_rows(path: str) -> list[dict]:
        """A small Parquet file's rows (the month's manifest)."""
        return pq.read_table(path).to_pylist() if os.path.exists(path) else []

    def write_rows(self, staged: str, name: str, rows: list[dict], schema: pa.Schema) -> None:
        """A few rows computed outside SQL (provenance) as staged/<name>, like the SQL tables."""
        file_schema = pa.schema([f for f in schema if f.name != "month"])
        self._write_arrow([pa.RecordBatch.from_pylist(rows, schema=file_schema)], schema, staged, name)

    def failure(self, exc: BaseException, src: str) -> str | None:
        import duckdb

        if not isinstance(exc, duckdb.Error):
            return None
        first = re.sub(r"\s+", " ", str(exc)).strip().split(" Possible solutions:")[0]
        if isinstance(exc, duckdb.OutOfMemoryException) or "No space left" in first or "temp_directory" in first:
            return (f"{src}: DuckDB ran out of memory or disk (memory_limit {self.memory_limit}, "
                    f"spilling to {self.temp_dir or 'the staging folder'}; the compare needs about 2 GB of "
                    f"memory per 100M entries of the month: raise duckdb_memory_limit): {first}")
        return f"{src}: DuckDB failed: {first}"

    def end_month(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None

    def close(self) -> None:
        self.end_month()

