"""One way to give DuckDB the config's resource caps, and to quote a DuckDB string literal.

Every in-process DuckDB (the compare engine, the warehouse, the path selector) scans Parquet
that can be larger than memory: each is capped by `duckdb_memory_limit` and
`duckdb_threads` of the one Config, so a user sets them once.
"""
from __future__ import annotations


def quote(s: str) -> str:
    """A DuckDB string literal ('' doubles a quote)."""
    return "'" + str(s).replace("'", "''") + "'"


def limit(con, memory_limit: str | None, threads: int | None) -> None:
    """Cap memory and threads on `con` (None leaves DuckDB's default)."""
    if memory_limit:
        con.execute(f"SET memory_limit = {quote(memory_limit)}")
    if threads:
        con.execute(f"SET threads = {int(threads)}")


def connect(cfg):
    """An in-memory DuckDB capped by the config's duckdb_memory_limit and duckdb_threads."""
    import duckdb

    con = duckdb.connect()
    limit(con, cfg.duckdb_memory_limit, cfg.duckdb_threads)
    return con
