"""The DuckDB engine of the compare job: runs pipeline/steps.py's DuckDB SQL in-process (no JVM).

One connection per month, capped by `duckdb_memory_limit` and spilling to
`duckdb_temp_dir` (default: the month's staging folder, so a failed run leaves nothing
behind elsewhere). DuckDB does not spill all of a hash aggregate's state, so the month runs
in K VP partitions (pipeline/partitions.py chooses K): the cleaning and per-path aggregate
of each partition, then the month-level facts over all of them, then everything per VP a
partition at a time (pipeline/steps.py's phases). Each partition's aggregates are kept in a
work database in the staging folder (WORK_DB, whatever duckdb_temp_dir says: a killed run's
next run reuses them); other intermediates are DuckDB temp tables (spilled when they don't
fit); output tables are streamed batch by batch into Parquet, a file per partition, with
the exact Arrow schemas of common/tables.py.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections import Counter

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from bgp_congruency.common import atomic, console, duck, hooks, layout, routes, s3, vp_hash
from bgp_congruency.common.duck import quote
from bgp_congruency.common.params import MethodParams
from bgp_congruency.common.tables import TABLES, TRANSITIONS, spark_name, sql_type
from bgp_congruency.pipeline import partitions as P
from bgp_congruency.pipeline import steps as S
from bgp_congruency.pipeline.publish import LocalStore, ObjectStore


def _prev(prev: dict[str, list[str]], table: str) -> str:
    """The month before's table: its files, or none where it has no rows (no file)."""
    return duck.read_parquet(prev[table], hive=True) if prev[table] else f"({S.empty_select(TABLES[table], 'duckdb')})"


def _partition_filter(cuts: vp_hash.Cuts, i: int) -> str:
    """The rows of partition i of `cuts` (VP partitions: pipeline/partitions.py); the bucket
    range lets the Parquet reader skip every other row group (the routes are in bucket order)."""
    if len(cuts) == 2:
        return ""
    lo, hi = vp_hash.bucket_span(cuts, i)
    return f" WHERE {vp_hash.sql_range('peer_asn', cuts, i)} AND {vp_hash.COLUMN} BETWEEN {lo} AND {hi}"


#: The month's partition work (each partition's cleaning and per-path aggregates, the VP rows
#: of the partitions done, and a record of which are done under which inputs and SQL) lives in
#: a DuckDB database in the staging folder, attached as WORK: a run killed mid-way leaves it
#: for the next run of the month (pipeline/job.py), which redoes only the partitions not done.
#: Under the same memory limit as the rest (one buffer pool); removed with the staging folder.
WORK_DB, WORK = "_work/partitions.duckdb", "work"


def _key(*parts) -> str:
    """A fingerprint of what a phase's work depends on (the SQL rendered, the inputs)."""
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def _inputs(store, files: list[str]) -> list:
    """The month's route files with their sizes and modification times (a merge changes them)."""
    return [(f, *store.stat(f)) for f in files]


def _label(name: str, i: int, k: int) -> str:
    """A step's name for the progress line: with its partition where there are several."""
    return name if k == 1 else f"{name} ({i + 1}/{k})"


#: Tables written in an order, so that a reader asking for one destination reads a few row
#: groups (min/max statistics): `advise` looks a destination's routes up in `paths`
#: (selector/month.py), not scanning the month. DuckDB's own row groups (122,880 rows): at
#: synthetic scale 50 (14.4M paths) the sorted write took 5.2-5.3 s against 5.9-6.0 s in groups
#: of 30,000, and 50 lookups of a destination 0.41 s against 0.75 s; the file 6% larger
#: (2026-12-02).
SORTED = {"paths": " ORDER BY afi, dest_asn, vp_asn"}


class DuckDBEngine:
    name = "duckdb"

    def __init__(self, memory_limit: str | None = "auto", temp_dir: str | None = None, threads: int | None = None):
        self.memory_limit, self.temp_dir, self.threads = duck.memory_limit(memory_limit), temp_dir, threads
        self.con = None
        self._work_kept, self._kept, self._private = False, None, None
        self.computed = Counter()  # step -> runs that computed it in any partition (per_path's: the cleanings)
        self.only: set[str] | None = None  # output tables written (None: all)

    def store(self, root: str) -> LocalStore | ObjectStore:
        if s3.is_s3(root):
            return ObjectStore(root)
        if layout.is_cluster(root):
            raise S.JobError(f"{root}: the DuckDB engine reads a local data dir or s3://; use --engine spark for "
                             "Hadoop's storage")
        return LocalStore(root)

    def open(self, store, src: str, staged: str) -> dict[int, int]:
        """Connect, spilling to duckdb_temp_dir or `staged`/_spill from the first query on
        (DuckDB cannot change its temp directory once it has spilled: the month pass may),
        register `month_entries`, run the month pass."""
        self.end_month()
        self._work_kept, self._kept = False, None
        self.con = duckdb.connect()
        self.con.execute("SET enable_progress_bar = false")
        self.con.execute("SET preserve_insertion_order = false")
        duck.limit(self.con, self.memory_limit, self.threads)
        if self.temp_dir:  # a folder of its own under it, removed at the month's end
            spill = self._private = duck.private_spill(self.temp_dir)
        else:
            spill = os.path.join(staged, "_spill")
            shutil.rmtree(spill, ignore_errors=True)  # a killed run's spill files
        duck.spill_to(self.con, spill)
        if s3.is_s3(src):
            s3.connect_duckdb(self.con, src)
        self.src, self._store = src, store
        inputs = routes.month_input(src, store)
        self.plan = S.SnapshotPlan.of(inputs)
        self.files = [f for fs, _s in inputs.values() for f in fs]
        if not self.files:
            raise S.JobError(f"{src}: no routes (run congruency ingest for the month first)")
        # by name: a collector whose routes an earlier version wrote lacks the OPTIONAL columns
        rel = " UNION ALL BY NAME ".join(f"SELECT {quote(c)} AS collector, * FROM {duck.read_parquet(fs)}"
                                         for c, (fs, _s) in sorted(inputs.items()) if fs)
        have = {name: spark_name(typ) for name, typ, *_ in
                self.con.execute(f"DESCRIBE SELECT * FROM ({rel})").fetchall()}
        S.check_columns(have, src)
        cols = ", ".join([f"{c}::BIGINT[] AS {c}" if c == "as_path" else f"{c}::BIGINT AS {c}" if c == "peer_asn"
                          else c for c in S.REQUIRED] + S.optional_columns(have))
        self.con.execute(f"CREATE VIEW month_entries AS SELECT {cols}, {vp_hash.COLUMN} FROM ({rel})")
        self.con.execute(f"CREATE TEMP TABLE month_counts AS {S.render(S.MONTH_COUNTS, 'duckdb', MethodParams(), self.plan)}")
        return S.counts(self.con.execute(S.COUNTS).fetchall())

    def vp_entries(self) -> list[tuple[int, int]]:
        """(peer ASN, routes) of every VP of the month, from the month pass (a row per peer
        ASN: thousands in a month of every collector): a partition's work is its routes."""
        return [(int(a), int(n)) for a, n in self.con.execute(
            "SELECT peer_asn, sum(routes)::BIGINT FROM month_counts GROUP BY peer_asn ORDER BY peer_asn").fetchall()]

    def pin(self) -> None:
        """Read the month's entries once into DuckDB (spilled past the memory limit): later
        runs (the sensitivity variants) share them instead of decoding the Parquet again."""
        self.con.execute("CREATE TEMP TABLE entries_pinned AS SELECT * FROM month_entries")
        self.con.execute("CREATE OR REPLACE VIEW month_entries AS SELECT * FROM entries_pinned")

    @staticmethod
    def resumable(store, month: str) -> str | None:
        """The staging folder of a killed run of `month` whose partition work the next run may
        reuse (the newest holding a work database; `run` checks that it was made from the same
        inputs and SQL), or None."""
        base = store.staging_root()
        found = [f"{base}/{n}" for n in store.children(base)
                 if n.startswith(f"{month}-") and os.path.exists(f"{base}/{n}/{WORK_DB}")]
        return max(found, key=lambda p: os.path.getmtime(f"{p}/{WORK_DB}")) if found else None

    def run(self, params, staged: str, prev: dict[str, list[str]] | None, step, keep: bool = False,
            partitions=1) -> None:
        """Every step into staged/<table>: a per-VP table's rows of partition i in
        part-<i>.parquet (the hints build reads a partition's pairs and paths from these two
        files alone, selector/table.py), a month-level table in part-0; `keep`: leave the
        connection open for another run on the same entries (the sensitivity variants),
        keeping the partitions' cleaning and per-path aggregates where the new parameters
        render them the same (a variant of min_coverage alone keeps them). A partition's
        work is recorded done in the work database (WORK_DB) as it ends: a run into a
        staging folder where a killed run of the same inputs and SQL left some skips it."""
        cuts = vp_hash.even(partitions) if isinstance(partitions, int) else tuple(partitions)
        k = len(cuts) - 1
        part_sql = S.partition_sql(params, "duckdb", self.plan)
        rest_sql = [S.render(s, "duckdb", params, self.plan) for s in S.FACTS + S.VP_STEPS + S.SUMMARY_STEPS]
        rest_sql += [S.TRANSITIONS.duckdb, S.PREV_V6_DESTS.duckdb]
        reuse = keep and self._kept == (part_sql, cuts)
        for name in (*(s.name for s in S.FACTS), S.PREV_V6_DESTS.name):
            self.con.execute(f"DROP TABLE IF EXISTS {name}")
        for name in ("month_vps", "month_pair_counts"):
            self.con.execute(f"DROP VIEW IF EXISTS {name}")
        if not reuse:
            self._drop_partitions()
        self._kept = None  # set once every partition's aggregates exist
        self.only = {"month_summary"} if keep else None  # a variant's other tables are never read
        if not reuse and not self._work_kept:  # a kept connection keeps the work database it began with
            self._attach_work(staged)
            self._work_kept = keep

        key1 = _key(k, part_sql, self.plan.times, _inputs(self._store, self.files), duckdb.__version__,
                    [_partition_filter(cuts, i) for i in range(k)],
                    [str(TABLES[t]) for t in sorted(TABLES)], str(TRANSITIONS))
        key2 = _key(key1, rest_sql, prev, keep, staged)
        done1, done2 = self._done(staged, key1, key2)
        if not reuse and (done1 or done2):
            console.note(f"{staged}: resuming what a stopped run of the month finished with the same inputs: "
                         f"{len(done1)} of {k} partitions' cleaning and {len(done2)} of {k} partitions' tables "
                         "are reused")
        ran: set[str] = set()
        if not reuse:
            self._parts = k
            without_bucket = f" EXCLUDE ({vp_hash.COLUMN})"
            for i in range(k):  # the cleaning and per-path aggregates, a partition at a time
                if i in done1:
                    continue
                self.con.execute(f"CREATE OR REPLACE VIEW entries AS SELECT *{without_bucket} FROM month_entries"
                                 f"{_partition_filter(cuts, i)}")
                for s, sql in zip(S.PARTITION_STEPS, part_sql):
                    step(_label(s.name, i, k))
                    ran.add(s.name)
                    kind = "VIEW" if s.kind == "view" else "TABLE"
                    # work: the partition's, kept in the work database; scratch: dropped below
                    name = f"{WORK}.{s.name}_{i}" if s.kind == "work" else s.name
                    self.con.execute(f"CREATE OR REPLACE {'' if s.kind == 'work' else 'TEMP '}{kind} {name} AS {sql}")
                for s in reversed(S.PARTITION_STEPS):
                    if s.kind == "scratch":
                        self.con.execute(f"DROP TABLE {s.name}")
                self.con.execute(f"INSERT INTO {WORK}.done VALUES (1, {i}, ?)", [key1])
        self._kept = (part_sql, cuts) if keep else None
        for name in ("by_session", "per_path"):
            self.con.execute(f"CREATE OR REPLACE VIEW {S.MONTH_OF[name]} AS "
                             + " UNION ALL ".join(f"SELECT * FROM {WORK}.{name}_{i}" for i in range(k)))
        for s in S.FACTS:
            step(s.name)
            ran.add(s.name)
            self._run_step(s, S.render(s, "duckdb", params, self.plan), staged)
        if prev is not None:
            self.con.execute(f"CREATE OR REPLACE VIEW prev_paths AS SELECT * FROM {_prev(prev, 'paths')}")
            self._run_step(S.PREV_V6_DESTS, S.PREV_V6_DESTS.duckdb, staged)
        for i in range(k):  # everything per VP, a partition at a time
            if i in done2:
                continue
            for name in ("by_session", "per_path"):
                self.con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {WORK}.{name}_{i}")
            for n, s in enumerate(S.VP_STEPS):
                step(_label(s.name, i, k))
                ran.add(s.name)
                self._run_step(s, S.render(s, "duckdb", params, self.plan), staged, part=i)
                if i and not n:
                    hooks.pause("mid-partition")
            if prev is not None and self.only is None:
                step(_label("transitions", i, k))
                only = f" WHERE {vp_hash.sql_range('vp_asn', cuts, i)}" if k > 1 else ""
                for t in ("pairs", "vps"):
                    self.con.execute(f"CREATE OR REPLACE VIEW prev_{t} AS SELECT * FROM {_prev(prev, t)}{only}")
                self._run_step(S.TRANSITIONS, S.TRANSITIONS.duckdb, staged, part=i)
                self.con.execute("DROP TABLE transitions")
            # The partition's files are in place: its VP rows and its record commit together.
            for name in ("vps", "pair_counts"):
                self.con.execute(f"CREATE TABLE IF NOT EXISTS {WORK}.{S.MONTH_OF[name]} AS "
                                 f"SELECT * FROM {name} LIMIT 0")
            self.con.execute("BEGIN")
            for name in ("vps", "pair_counts"):
                self.con.execute(f"INSERT INTO {WORK}.{S.MONTH_OF[name]} SELECT * FROM {name}")
            self.con.execute(f"INSERT INTO {WORK}.done VALUES (2, {i}, ?)", [key2])
            self.con.execute("COMMIT")
            for s in reversed(S.VP_STEPS):
                self.con.execute(f"DROP {self._kind(s)} IF EXISTS {s.name}")
            if i + 1 < k:
                hooks.pause("partition")
        for name in ("vps", "pair_counts"):
            self.con.execute(f"CREATE OR REPLACE TEMP VIEW {S.MONTH_OF[name]} AS SELECT * FROM {WORK}.{S.MONTH_OF[name]}")
        if prev is None and self.only is None:
            self._write_arrow(TRANSITIONS.empty_table().to_batches(), TRANSITIONS, staged, "transitions")
        for s in S.SUMMARY_STEPS:
            step(s.name)
            ran.add(s.name)
            self._run_step(s, S.render(s, "duckdb", params, self.plan), staged)
            self.con.execute(f"DROP TABLE {s.name}")
        self.computed.update(ran)
        if not keep:
            self.end_month()  # every table is written; closing releases the spill files

    def _attach_work(self, staged: str) -> None:
        """The work database in `staged` (WORK_DB), made if missing; where a killed run left
        one, what it records is checked by _done."""
        path = os.path.realpath(os.path.join(staged, WORK_DB))
        if "?" in path:
            # DuckDB reads a `?` in a database path as the start of options and writes the WAL
            # elsewhere (common/duck.py writable_db): such a data dir's work database lives in a
            # private temporary folder for the run's life, and a killed run is not resumed.
            self._work_tmp = tempfile.mkdtemp(prefix="congruency-work-")
            path = os.path.join(self._work_tmp, os.path.basename(WORK_DB))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic.clean_dead_under(staged)  # a killed run's half-written tables
        self.con.execute(f"ATTACH {quote(path)} AS {WORK}")
        self.con.execute(f"CREATE TABLE IF NOT EXISTS {WORK}.done (phase INTEGER, part INTEGER, key VARCHAR)")

    def _done(self, staged: str, key1: str, key2: str) -> tuple[set[int], set[int]]:
        """The partitions whose cleaning (phase 1) and tables (phase 2) are done for these
        keys. Work recorded under other keys is dropped first, with every table staged
        beside it (their files are not this run's)."""
        rows = self.con.execute(f"SELECT phase, part, key FROM {WORK}.done").fetchall()
        phase1 = any(ph == 1 and key != key1 for ph, _p, key in rows)
        if phase1 or any(ph == 2 and key != key2 for ph, _p, key in rows):
            # The staged files first: a kill between the two leaves records of no file, not
            # files no record disowns.
            for name in os.listdir(staged) if os.path.isdir(staged) else []:
                if name not in ("_work", "_spill"):
                    shutil.rmtree(os.path.join(staged, name))
            self.con.execute("BEGIN")
            if phase1:
                self._drop_partitions(everything=True)
            for name in ("month_vps", "month_pair_counts"):
                self.con.execute(f"DROP TABLE IF EXISTS {WORK}.{name}")
            self.con.execute(f"DELETE FROM {WORK}.done" + ("" if phase1 else " WHERE phase = 2"))
            self.con.execute("COMMIT")
            rows = [] if phase1 else [r for r in rows if r[0] == 1]
        return {p for ph, p, _ in rows if ph == 1}, {p for ph, p, _ in rows if ph == 2}

    def _drop_partitions(self, everything: bool = False) -> None:
        """The partitions' aggregates of the last run on this connection (`everything`: any
        in the work database, a killed run's)."""
        if everything:
            names = [n for (n,) in self.con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = ?", [WORK]).fetchall()]
        elif getattr(self, "_parts", 0) and self._attached():
            names = [f"{s.name}_{i}" for i in range(self._parts) for s in S.PARTITION_STEPS if s.kind == "work"]
        else:
            names = []
        for n in names:
            if n != "done":
                self.con.execute(f"DROP TABLE IF EXISTS {WORK}.{n}")
        self._parts = 0

    def _attached(self) -> bool:
        return bool(self.con.execute("SELECT 1 FROM duckdb_databases() WHERE database_name = ?", [WORK]).fetchall())

    def _kind(self, s: S.SqlStep) -> str:
        lazy = self.only is not None and s.name in S.VARIANT_VIEWS
        return "VIEW" if s.kind == "view" or lazy else "TABLE"

    def _run_step(self, s: S.SqlStep, sql: str, staged: str, part: int = 0) -> None:
        kind = self._kind(s)
        self.con.execute(f"CREATE OR REPLACE TEMP {kind} {s.name} AS {sql}")
        if s.kind == "table" and (self.only is None or s.name in self.only):
            self._copy(s.name, TRANSITIONS if s.name == "transitions" else TABLES[s.name], staged, part)

    def _copy(self, name: str, schema: pa.Schema, staged: str, part: int) -> None:
        """The temp table `name` -> staged/<name>/part-<partition>.parquet by DuckDB's own
        writer, each column cast to the table's schema (minus `month`, which lives in the
        folder name) and the written schema checked against it. DuckDB writes on its threads
        with no Arrow conversion: about 1 s less than pyarrow's single-threaded writer over the
        scale-10 steps (bench/steps.py), the same tables row for row and in schema."""
        file_schema = pa.schema([f for f in schema if f.name != "month"])
        got = [c for (c,) in self.con.execute(f"SELECT column_name FROM (DESCRIBE {name})").fetchall()]
        if got != file_schema.names:
            raise S.JobError(f"{name}: columns {got} differ from {file_schema.names}")
        cols = ", ".join(f"CAST({f.name} AS {sql_type(f.type, 'duckdb')}) AS {f.name}" for f in file_schema)
        os.makedirs(f"{staged}/{name}", exist_ok=True)
        # Whole files only, on disk before a partition is recorded done: a resumed run trusts them.
        order = SORTED.get(name, "")
        with atomic.replacing(f"{staged}/{name}/part-{part}.parquet") as tmp:
            self.con.execute(f"COPY (SELECT {cols} FROM {name}{order}) TO {quote(str(tmp))} "
                             "(FORMAT parquet, COMPRESSION zstd)")
            if not pq.read_schema(tmp).equals(file_schema):  # the contract of common/tables.py
                raise S.JobError(f"{name}: written schema {pq.read_schema(tmp)} differs from common.tables")

    @staticmethod
    def _write_arrow(batches, schema: pa.Schema, staged: str, name: str, part: int = 0) -> None:
        """Batches -> staged/<name>/part-<partition>.parquet with the table's schema (minus
        `month`, which lives in the folder name), column for column."""
        file_schema = pa.schema([f for f in schema if f.name != "month"])
        os.makedirs(f"{staged}/{name}", exist_ok=True)
        # Whole files only, on disk before a partition is recorded done: a resumed run trusts them.
        with atomic.replacing(f"{staged}/{name}/part-{part}.parquet") as tmp, \
                pq.ParquetWriter(tmp, file_schema, compression="zstd") as w:
            for b in batches:
                if b.schema.names != file_schema.names:
                    raise S.JobError(f"{name}: columns {b.schema.names} differ from {file_schema.names}")
                w.write_batch(b.cast(file_schema))

    def summary(self, staged: str) -> dict | None:
        rows = pq.read_table(f"{staged}/month_summary").to_pylist()
        return rows[0] if rows else None

    def write_rows(self, staged: str, name: str, rows: list[dict], schema: pa.Schema) -> None:
        """A few rows computed outside SQL (provenance) as staged/<name>, like the SQL tables."""
        file_schema = pa.schema([f for f in schema if f.name != "month"])
        self._write_arrow([pa.RecordBatch.from_pylist(rows, schema=file_schema)], schema, staged, name)

    def failure(self, exc: BaseException, src: str) -> str | None:
        if not isinstance(exc, duckdb.Error):
            return None
        first = re.sub(r"\s+", " ", str(exc)).strip().split(" Possible solutions:")[0]
        if isinstance(exc, duckdb.OutOfMemoryException) or "No space left" in first or "temp_directory" in first:
            return (f"{src}: DuckDB ran out of memory or disk (memory_limit {self.memory_limit}, "
                    f"spilling to {self.temp_dir or 'the staging folder'}, its partitions' work in the staging "
                    "folder; the compare needs about "
                    f"{P.BYTES_PER_ENTRY} bytes of memory per entry of a VP partition: raise duckdb_memory_limit "
                    f"or compare_partitions): {first}")
        return f"{src}: DuckDB failed: {first}"

    def end_month(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None
        if getattr(self, "_work_tmp", None):
            shutil.rmtree(self._work_tmp, ignore_errors=True)
            self._work_tmp = None
        if self._private:  # this month's folder under duckdb_temp_dir
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None

    def close(self) -> None:
        self.end_month()

