"""Run the congruency job for one or more months: read, check, compute, stage, publish."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from common import console, hooks
from common.locks import LockBusy, month_lock
from pipeline.compare import JobError, check_schema, compute, transitions
from common.config import Config

TABLE_ORDER = ("cleaning_stats", "paths", "vps", "pairs", "transitions", "month_summary")
SMALL = {"cleaning_stats", "vps", "month_summary", "transitions"}


def previous_month(month: str) -> str:
    y, m = map(int, month.split("-"))
    return f"{y - 1}-12" if m == 1 else f"{y}-{m - 1:02d}"


@dataclass
class MonthResult:
    month: str
    summary: dict | None = None
    published: list[str] = field(default_factory=list)
    error: str | None = None


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


def run_months(cfg: Config, months: list[str], spark=None) -> list[MonthResult]:
    from pipeline import spark as sparkmod

    own = spark is None
    if own:
        spark = sparkmod.session(cfg.spark_master, cfg.spark_conf)
    try:
        return [run_month(spark, cfg, m) for m in months]
    finally:
        if own:
            spark.stop()


def run_month(spark, cfg: Config, month: str) -> MonthResult:
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from pipeline.publish import Store

    root = cfg.data_dir if isinstance(cfg.data_dir, str) else str(cfg.data_dir.resolve())
    store = Store(spark, root)
    res = MonthResult(month)
    src = store.path("rib_entries", f"month={month}")
    staged = None
    with console.progress() as prog, _locked(cfg, month, res):
        if res.error:
            return res
        steps = prog.add_task(f"compare {month}", total=len(TABLE_ORDER) + 3)
        stage = prog.add_task("  spark", total=None)

        def step(name):
            prog.update(steps, description=f"compare {month}: {name}")

        try:
            with _StageTicker(spark, prog, stage):
                if not store.has_files(src):
                    raise JobError(f"{src}: no ingested data for month {month} (run congruency ingest first)")
                entries = spark.read.option("basePath", store.path("rib_entries")).parquet(src)
                check_schema(entries, src)
                step("checking address families")
                per_afi = {r["afi"]: r["count"] for r in entries.groupBy("afi").count().collect()}
                for afi in (4, 6):
                    if not per_afi.get(afi):
                        raise JobError(f"{src}: month {month} has no IPv{afi} entries; "
                                       "both address families are needed")
                prog.advance(steps)
                staged = store.staging(month)
                written: set[str] = set()

                def materialize(df, name):
                    out = df.coalesce(1) if name in SMALL else df
                    out.write.mode("error").parquet(f"{staged}/{name}")
                    written.add(name)
                    hooks.pause("compare")
                    return spark.read.parquet(f"{staged}/{name}")

                frames = dict(compute(entries, month, cfg.method, materialize, step=step).items())
                prev = previous_month(month)
                have_prev = all(store.has_files(store.path(t, f"month={prev}")) for t in ("pairs", "vps", "paths"))
                frames["transitions"] = transitions(spark, frames["pairs"], {
                    t: spark.read.parquet(store.path(t, f"month={prev}")) for t in ("pairs", "vps", "paths")
                } if have_prev else None)
                prog.advance(steps)
                for name in TABLE_ORDER:
                    if name not in written:
                        step(f"writing {name}")
                        materialize(frames[name], name)
                    prog.advance(steps)
                store.delete(f"{staged}/_work")
                step("publishing")
                summary = spark.read.parquet(f"{staged}/month_summary").collect()
                res.summary = summary[0].asDict() if summary else None
                res.published = store.publish(staged, list(TABLE_ORDER), month)
                staged = None
                prog.advance(steps)
                spark.catalog.clearCache()
        except JobError as exc:
            res.error = str(exc)
        except OSError as exc:
            res.error = _no_space(root, month, exc) or f"{src}: publishing failed: {exc}"
        except (PySparkException, Py4JJavaError) as exc:
            res.error = _no_space(root, month, exc) or f"{src}: Spark failed: {str(exc).splitlines()[0]}"
        finally:
            if staged is not None and store.exists(staged):
                store.delete(staged)
    return res


class _locked:
    """The month lock around one month's job; a busy month becomes `res.error`."""

    def __init__(self, cfg: Config, month: str, res: MonthResult):
        self.cm = month_lock(cfg.data_dir, month)
        self.res = res

    def __enter__(self):
        try:
            self.cm.__enter__()
        except LockBusy as exc:
            self.cm = None
            self.res.error = str(exc)

    def __exit__(self, *exc):
        return self.cm.__exit__(*exc) if self.cm else False


def _no_space(root: str, month: str, exc: BaseException) -> str | None:
    """The one-line message for a full disk (however deep in a Java trace it is), or None."""
    import errno

    if getattr(exc, "errno", None) == errno.ENOSPC or "No space left on device" in str(exc):
        return (f"{root}: no space left on device while writing month {month}; the published "
                "tables are unchanged; free space and run again")
    return None
