"""The compare's two engines behind one interface: `spark.SparkEngine` (a SparkSession, local
or a cluster) and `duckdb.DuckDBEngine` (in-process, no JVM). Both run the same SQL steps
(pipeline/steps.py, rendered per dialect) and stage the same tables; pipeline/job.py drives
either through `Engine` and never asks which one it has."""
from __future__ import annotations

from typing import Protocol

import pyarrow as pa

from bgp_congruency.pipeline.publish import Store


class Engine(Protocol):
    name: str

    def store(self, root: str) -> Store:
        """The data dir as this engine reaches it (local disk, or Hadoop's FileSystem)."""

    def open(self, store: Store, src: str, staged: str) -> dict[int, int]:
        """Register the month's `entries` from `src`; check its columns; rows per AFI.
        `staged`: the month's staging folder (DuckDB spills there unless duckdb_temp_dir says)."""

    def pin(self) -> None:
        """Keep the month's entries for several runs (the sensitivity variants)."""

    def vp_entries(self) -> list[tuple[int, int]]:
        """(peer ASN, entries) of every VP of the month, from the month pass, for its VP
        partitions (pipeline/partitions.py); an engine that runs one partition returns []."""

    def resumable(self, store: Store, month: str) -> str | None:
        """A killed run's staging folder of `month` whose finished partitions `run` may reuse
        (it checks the inputs and SQL are the same), or None (Spark: never)."""

    def run(self, params, staged: str, prev: dict[str, list[str]] | None, step, keep: bool = False,
            partitions=1) -> None:
        """Every step of the month, in `partitions` VP partitions (a number of even hash ranges,
        or common/vp_hash.Cuts); each output table staged
        as staged/<table>. `prev`: the month before's pairs/vps/paths files (the
        catalog's) for transitions (None: an empty table)."""

    def summary(self, staged: str) -> dict | None:
        """The staged month_summary row."""

    def read_rows(self, path: str) -> list[dict]:
        """A small Parquet file's rows (a manifest file) where only the engine reaches it
        (Spark, on a data dir only Hadoop reads; elsewhere ingest/manifest.read)."""

    def write_rows(self, staged: str, name: str, rows: list[dict], schema: pa.Schema) -> None:
        """A few rows computed outside SQL (provenance), staged like the SQL tables."""

    def failure(self, exc: BaseException, src: str) -> str | None:
        """The one-line message for an engine error, or None when it is not the engine's."""

    def end_month(self) -> None:
        """Drop what the month registered."""

    def close(self) -> None: ...
