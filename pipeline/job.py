"""Run the congruency job for one or more months on either engine: read, check, compute, stage, publish.

The engines (pipeline/engines/duckdb.py in-process, pipeline/engines/spark.py on Spark) run the
same steps (pipeline/steps.py); this module is the one flow around them, so bad input
gives the same one-line errors on both and a month is published completely or not at all.
"""
from __future__ import annotations

import errno
import os
import shutil
import threading
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bgp_congruency.common import console, hooks, layout, s3, vp_hash
from bgp_congruency.common.config import Config
from bgp_congruency.common.locks import LockBusy, lock_path, month_lock, wait_for
from bgp_congruency.common.months import previous_month
from bgp_congruency.common.tables import DERIVED_TABLES, MONTH_TABLES, PROVENANCE, STAGED_TABLES
from bgp_congruency.ingest import manifest
from bgp_congruency.ingest.policy import for_config
from bgp_congruency.lake import attach
from bgp_congruency.lake.published import files
from bgp_congruency.pipeline import partitions as P
from bgp_congruency.pipeline import provenance, s3a
from bgp_congruency.pipeline import spark_session as sparkmod
from bgp_congruency.pipeline.engines import Engine
from bgp_congruency.pipeline.engines import spark as spark_engine
from bgp_congruency.pipeline.engines.duckdb import DuckDBEngine
from bgp_congruency.pipeline.steps import JobError

#: What the engine stages of a month (and the provenance row beside it), published with the
#: stagers' tables and month_summary in one commit (common/tables.MONTH_TABLES gives the order).
ENGINE_TABLES = tuple(t for t in MONTH_TABLES if t not in (*STAGED_TABLES, "month_summary"))


class Stager(Protocol):
    """A step the compare runs on a month's staged tables before it publishes them (the
    hints: selector/table.stage_month), handed in by whoever runs the compare (runner/steps.py,
    cli/compare.py): the pipeline knows no room above it. It reads the tables in the folder
    `staged` (local, or an s3:// URL: Spark on S3 stages in the bucket) and writes tables of
    its own into the local folder `out` (`staged` itself when that is local); returns their names, which the
    month's commit publishes with the engine's. `progress` is the compare's rich Progress."""

    def __call__(self, cfg: Config, month: str, staged: str, out: str, progress) -> Sequence[str]: ...


def names_cluster(cfg: Config) -> bool:
    """A Spark cluster is named: a non-local master, cluster storage, or spark-submit's driver."""
    return (not cfg.spark_master.startswith("local") or layout.hadoop_only(cfg.data_dir)
            or "PYSPARK_GATEWAY_PORT" in os.environ or bool(os.environ.get("SPARK_SUBMIT_DEPLOY_MODE")))


def effective_engine(cfg: Config) -> str:
    """`cfg.engine`, except that a named cluster implies Spark."""
    return "spark" if cfg.engine == "spark" or names_cluster(cfg) else "duckdb"


@dataclass
class MonthResult:
    month: str
    summary: dict | None = None
    #: table -> the folder its publish registered.
    published: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    #: The month before's published files this compare read (transitions), as
    #: common.published.listing gives them; None on cluster storage (no catalog there).
    previous: list | None = None
    #: The most its staging folder held (_StagingPeak); None where the staging is not local.
    staging_peak_bytes: int | None = None


class _StagingPeak:
    """The most a month's staging folder holds while it is compared: its staged tables,
    DuckDB's work database and spill, the stagers' files (what `congruency plan` counts as the
    compare's staging: runner/plan.py learns its bytes per route from these). Sampled every
    EVERY_S seconds from a thread, and once more (`sample`) before the publish moves the
    tables out; files removed while it walks count 0, as in bench/endtoend.py."""

    EVERY_S = 1.0

    def __init__(self, folder: str):
        self.folder, self.peak = folder, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="staging-peak", daemon=True)

    def sample(self) -> None:
        self.peak = max(self.peak, layout.bytes_under(self.folder))

    def _run(self) -> None:
        while not self._stop.wait(self.EVERY_S):
            self.sample()

    def __enter__(self) -> _StagingPeak:
        self._thread.start()
        return self

    def stop(self) -> None:
        """No more samples from the thread (idempotent): a last `sample` is then the final word."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def __exit__(self, *exc) -> None:
        self.stop()


class _StageTicker:
    """Shows the running Spark stage's task progress under the current job step."""

    def __init__(self, spark, progress, task):
        self.tracker = spark.sparkContext.statusTracker()
        self.progress, self.task = progress, task
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.wait(0.5):
            try:
                ids = self.tracker.getActiveStageIds()
                infos = [self.tracker.getStageInfo(i) for i in ids]
                infos = [i for i in infos if i]
                if infos:
                    done = sum(i.numCompletedTasks for i in infos)
                    total = sum(i.numTasks for i in infos)
                    self.progress.update(self.task, total=total, completed=done,
                                         description=f"  spark stage {','.join(map(str, ids))}")
            except Exception:
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=2)


def spark_session(cfg: Config):
    """The SparkSession `cfg` asks for: its master and settings, and S3A's for an s3:// data
    dir (its jars checked before a JVM starts for nothing)."""
    if not s3.is_s3(cfg.data_dir):
        return sparkmod.session(cfg.spark_master, cfg.spark_conf)
    reach = s3a.conf(str(cfg.data_dir), cfg.spark_conf.get("spark.jars", ""))
    settings = {**reach, **cfg.spark_conf}  # the user's settings win, but for the jars: both
    if "spark.jars" in reach:
        settings["spark.jars"] = reach["spark.jars"]
    spark = sparkmod.session(cfg.spark_master, settings)
    s3a.give_credentials(spark, str(cfg.data_dir))
    return spark


def open_engine(cfg: Config, spark=None) -> Engine:
    """The engine `cfg` asks for (Spark on the given session, or a session of its own)."""
    if spark is not None or effective_engine(cfg) == "spark":
        own = spark is None
        if own:
            spark = spark_session(cfg)
        spark_engine.check_s3(spark, cfg.data_dir)
        return spark_engine.SparkEngine(spark, own=own)

    return DuckDBEngine(cfg.duckdb_memory_limit, cfg.duckdb_temp_dir, cfg.duckdb_threads)


def compare_months(cfg: Config, months: list[str], spark=None, stagers: Sequence[Stager] = ()) -> list[MonthResult]:
    """Each month on `cfg`'s engine (effective_engine), published on its own with the tables
    `stagers` add (Stager)."""
    if spark is None and effective_engine(cfg) == "spark" and s3.is_s3(cfg.data_dir) and not s3a.submitted():
        s3a.jars()  # missing, named in one line before the catalog or a JVM is touched
    # The catalog (and the data dir it needs) before anything is computed.
    attach.configure(cfg.data_dir if s3.is_s3(cfg.data_dir) else layout.local(
        cfg.data_dir, "the catalog of the published tables"), cfg.catalog)
    engine = open_engine(cfg, spark)
    try:
        return [compare_with(engine, cfg, m, stagers) for m in months]
    finally:
        engine.close()


def compare_month(cfg: Config, month: str, spark=None, stagers: Sequence[Stager] = ()) -> MonthResult:
    """One month on `cfg`'s engine (on Spark with the given session)."""
    return compare_months(cfg, [month], spark, stagers)[0]


def compare_with(engine: Engine, cfg: Config, month: str, stagers: Sequence[Stager] = ()) -> MonthResult:
    root = cfg.data_dir if isinstance(cfg.data_dir, str) else str(cfg.data_dir.resolve())
    res = MonthResult(month)
    src = str(layout.routes_dir(root, month))
    staged = store = resumed = out = peak = None
    interrupted = False
    with console.progress() as prog, _locked(cfg, month, res), ExitStack() as stack:
        if res.error:
            return res
        steps = prog.add_task(f"compare {month} ({engine.name})", total=3)
        ticker = None
        if engine.name == "spark":
            ticker = _StageTicker(engine.spark, prog, prog.add_task("  spark", total=None))
            ticker.__enter__()

        def step(name):
            prog.update(steps, description=f"compare {month} ({engine.name}): {name}")

        try:
            store = engine.store(root)
            src = store.month("routes", month)
            if not store.has_files(src):
                raise JobError(f"{src}: no ingested data for month {month} (run congruency ingest first)")
            _wait_previous(root, month, step)
            # What a killed run left is deleted, but the partitions it finished (DuckDB: the
            # engine reuses them when the inputs and SQL are the same). The staging folder is
            # chosen before the engine opens the month: DuckDB spills there from its first query.
            staged = resumed = engine.resumable(store, month)
            store.recover(month, keep=staged)
            staged = staged or store.staging(month)
            if not layout.is_cluster(staged):  # a local folder (either engine's store)
                peak = stack.enter_context(_StagingPeak(str(layout.local(staged, "the staging peak"))))
            step("checking the input")
            per_afi = engine.open(store, src, staged)
            for afi in (4, 6):
                if not per_afi.get(afi):
                    raise JobError(f"{src}: month {month} has no IPv{afi} entries; both address families are needed")
            k = partitions(engine, cfg, src)
            prog.advance(steps)
            prev, res.previous = _previous(root, month)
            resumed = None  # from here a failure deletes the folder, whatever it held
            engine.run(cfg.method, staged, prev, step, partitions=k)
            hooks.pause("compare")
            prog.advance(steps)
            step("publishing")
            for scratch in ("_work", "_spill"):
                store.delete(f"{staged}/{scratch}")
            step("provenance")
            _stage_provenance(engine, store, cfg, month, staged)
            res.summary = engine.summary(staged)
            # What the month held (DuckDB: its connection, up to duckdb_memory_limit) is let go
            # before the hints open a connection of their own under the same limit.
            engine.end_month()
            extra: list[str] = []
            out = store.stager_folder(staged)
            for stage in stagers:
                extra += stage(cfg, month, staged, out, prog)
            if unknown := set(extra) - set(MONTH_TABLES):
                raise JobError(f"{month}: a stager staged {', '.join(sorted(unknown))}, not a month table")
            store.take_staged(out, staged, extra)
            if peak is not None:  # every table staged, nothing published yet
                peak.stop()
                peak.sample()
                res.staging_peak_bytes = peak.peak
            tables = [t for t in MONTH_TABLES if t in (*ENGINE_TABLES, *extra, "month_summary")]
            res.published = dict(zip(tables, store.publish(staged, tables, month, retire=DERIVED_TABLES)))
            staged = None
            prog.advance(steps)
        except KeyboardInterrupt:
            interrupted = True
            raise
        except JobError as exc:
            res.error = str(exc)
        except OSError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            res.error = no_space(root, month, exc) or f"{src}: publishing failed: {first}"
        except Exception as exc:
            if console.interrupted(exc):
                interrupted = True
                raise KeyboardInterrupt from None  # the runner records `interrupted`, not a failure
            res.error = no_space(root, month, exc) or engine.failure(exc, src)
            if res.error is None:
                raise
        finally:
            engine.end_month()
            if ticker is not None:
                ticker.__exit__(None, None, None)
            # Interrupted (Ctrl-C, SIGTERM), the staging folder stays for the next run to resume
            # (DuckDB's finished partitions) or delete; a failure's is deleted, but a killed
            # run's folder this run failed before resuming (a refusal, a month without IPv6)
            # loses only this run's spill.
            try:
                if staged is not None and store is not None and store.exists(staged) and not interrupted:
                    store.delete(f"{staged}/_spill" if resumed else staged)
            except OSError:  # the storage is gone (an S3 endpoint down): the next run removes it
                pass
            if out is not None and staged is not None and out != staged:  # the stagers' local folder
                shutil.rmtree(out, ignore_errors=True)
    return res


def partitions(engine: Engine, cfg: Config, src: str):
    """The VP partitions the month runs in (pipeline/partitions.py: common/vp_hash.Cuts),
    from the engine's month pass; a month that cannot fit (one VP larger than a partition
    may be) is refused here, before any table is staged."""
    vps = engine.vp_entries()
    if not vps:  # an engine that does not partition
        return vp_hash.even(1)
    limit = P.limit_bytes(cfg)
    why = None if cfg.compare_partitions else P.unfit(max(n for _a, n in vps), limit)
    if why:
        raise JobError(f"{src}: {why}")
    try:
        return P.cut(vps, limit, cfg.compare_partitions)
    except P.Unfit as exc:
        raise JobError(f"{src}: {exc}") from None


#: The month before's tables `transitions` reads (pipeline/steps.py: prev_pairs, ...).
PREVIOUS_TABLES = ("pairs", "vps", "paths")
#: What the compare reads of the month before: those, and month_summary (is it published?).
PREVIOUS_READ = (*PREVIOUS_TABLES, "month_summary")
#: How long a compare waits for a run of the month before that is in flight.
PREVIOUS_WAIT_S = 24 * 3600.0


def _wait_previous(root: str, month: str, step) -> None:
    """Wait for a run of the month before that is in flight (its tables are about to change;
    a parallel backfill would otherwise compare against nothing): before the engine opens
    the month, so nothing is held meanwhile. Local data dirs only (on a cluster the scheduler
    orders months)."""
    if layout.is_cluster(root):
        return

    pm, base = previous_month(month), Path(root.removeprefix("file://"))
    if lock_path(base, pm).exists():
        step(f"waiting for the run of {pm} (transitions read its tables)")
        wait_for(base, pm, PREVIOUS_WAIT_S)


def _previous(root: str, month: str) -> tuple[dict | None, list | None]:
    """The month before's tables as this compare reads them (table -> its files, all of one
    catalog snapshot), and the listing of what it read, for the runner's fingerprint. The
    files stay in place until a vacuum expires their snapshot, however often that month is
    re-published meanwhile (lake/commit.py): a publish commits all of a month's tables at once."""
    pm = previous_month(month)
    if layout.hadoop_only(root):
        return None, None  # no catalog there (lake/attach.py): compared without transitions

    base = layout.home(root)
    got = files(layout.root_of(base), PREVIOUS_READ, pm)  # one snapshot
    read = [[f.removeprefix(base + "/") if s3.is_s3(base) else os.path.relpath(f, base)] for t in got for f in got[t]]
    # Published: its month_summary row is there (a table with no rows has no file).
    return ({t: got[t] for t in PREVIOUS_TABLES} if got["month_summary"] else None), read


def _stage_provenance(engine, store, cfg: Config, month: str, staged: str) -> None:
    """The month's provenance row (pipeline/provenance.py), staged beside its tables."""
    if layout.hadoop_only(cfg.data_dir):  # only the engine reaches it
        folder = store.month("manifest", month)
        single, per = layout.manifest_names(store.children(folder))
        rows = list(manifest.latest(engine.read_rows(f"{folder}/{single}") if single else [],
                                    {c: engine.read_rows(f"{folder}/{n}") for c, n in per.items()}).values())
    else:
        rows = list(manifest.read(cfg.data_dir, month).values())
    cov = for_config(rows, cfg).to_dict() if rows else None
    engine.write_rows(staged, "provenance", [provenance.row(cfg, month, engine.name, rows, cov)], PROVENANCE)


class _locked:
    """The month's lock (common/locks.py) around its job; a busy month becomes `res.error`."""

    def __init__(self, cfg: Config, month: str, res: MonthResult):
        self.cm, self.res = month_lock(cfg.data_dir, month), res

    def __enter__(self):
        try:
            self.cm.__enter__()
        except LockBusy as exc:
            self.cm, self.res.error = None, str(exc)

    def __exit__(self, *exc):
        return self.cm.__exit__(*exc) if self.cm else False


def no_space(root: str, month: str, exc: BaseException) -> str | None:
    """The one-line message for a full disk, however deep in an engine's error it is, or None."""
    if getattr(exc, "errno", None) == errno.ENOSPC or "No space left on device" in str(exc):
        return (f"{root}: no space left on device while writing month {month}; the published "
                "tables are unchanged; free space and run again")
    return None
