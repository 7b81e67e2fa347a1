"""Airflow 3 DAG: one run per month, the same steps as `congruency run` (runner/month.py).

Fires at 06:00 UTC on day 6 of month M, once M's five-day snapshot window (days 1-5) has
closed, and covers month M. `catchup` fills the months since START (the 2014 study's
series starts in 2009-01); `airflow backfill create --dag-id congruency_monthly
--from-date 2009-01-01 --to-date 2014-12-31` re-runs a range. One month at a time
(max_active_runs=1), in order, because `transitions` reads the month before.

Tasks: plan -> ingest (mapped per collector, in the `congruency_downloads` pool) ->
ingest_done -> compare (in the worker, or through spark-submit on a cluster; the
`compare_on` param picks) -> hints -> lake -> reports. Every task calls a function
of runner/month.py; nothing here decides anything the command line does not.

Environment read when the file is parsed: CONGRUENCY_SPARK_CONN (the Airflow connection
naming the cluster's master, default spark_default), CONGRUENCY_DOWNLOAD_POOL (default
congruency_downloads; create it with `airflow pools set congruency_downloads 4 ...`),
CONGRUENCY_DAG_RETRIES (default 3).
"""
from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, Param, get_current_context, task
from airflow.sdk.definitions.timetables.trigger import CronTriggerTimetable

DAG_ID = "congruency_monthly"
START = datetime(2009, 1, 1, tzinfo=timezone.utc)
#: Day 6, 06:00 UTC: the window (days 1-5) is over and the archives have the last dumps.
SCHEDULE = "0 6 6 * *"
POOL = os.environ.get("CONGRUENCY_DOWNLOAD_POOL", "congruency_downloads")
SPARK_CONN = os.environ.get("CONGRUENCY_SPARK_CONN", "spark_default")
#: The spark-submit entry file of the project (same arguments as the `congruency` command).
SUBMIT = str(Path(__file__).resolve().parents[1] / "cli" / "submit.py")

PARAMS = {
    "month": Param(None, type=["null", "string"], pattern=r"^\d{4}-\d{2}$",
                   description="YYYY-MM to run instead of the logical date's month"),
    "collectors": Param(["route-views2", "route-views6"], type="array", items={"type": "string"},
                        description="collector names, or all / routeviews / ris (ingest/catalogue.toml); "
                                    "one mapped ingest task per collector active in the month"),
    "days": Param("1-5", type="string", description="days of the month of the snapshot window"),
    "times": Param("00:00", type="string", description="UTC times of day, HH:MM[,HH:MM...]"),
    "archive_root": Param(None, type=["null", "string"],
                          description="one archive root (URL or folder) instead of the public archives"),
    "data_dir": Param("data", type="string", description="DATA_DIR: a folder every worker (and the cluster) mounts, or s3://BUCKET/PREFIX"),
    "engine": Param("duckdb", enum=["duckdb", "spark"], description="compare engine in the worker"),
    "spark_master": Param("local[2]", type="string", description="Spark master for the spark engine in the worker"),
    "compare_on": Param("worker", enum=["worker", "cluster"],
                        description=f"worker: in the task; cluster: spark-submit via connection {SPARK_CONN}"),
    "min_coverage": Param(None, type=["null", "number"], description="default-free threshold (default 0.9)"),
    "config": Param(None, type=["null", "string"], description="a congruency TOML file read first"),
    "sensitivity": Param(False, type="boolean",
                         description="also compute the sensitivity table and page of the month (congruency sensitivity)"),
}

DEFAULT_ARGS = {
    "retries": int(os.environ.get("CONGRUENCY_DAG_RETRIES", "3")),
    "retry_delay": timedelta(minutes=2),
    "retry_exponential_backoff": 2.0,
    "max_retry_delay": timedelta(hours=1),
}


def _job():
    """The runner's executor and scheduler modules, the run's month and its Config, from the
    context (same code path as the command line)."""
    # lazy: the scheduler parses DAG files often; the project's modules load in the task only
    from bgp_congruency.runner import month as runner
    from bgp_congruency.runner import schedule

    ctx = get_current_context()
    params = ctx["params"]
    return runner, schedule, schedule.month_for(ctx["logical_date"], params.get("month")), \
        schedule.config_from_params(params)


with DAG(
    DAG_ID,
    schedule=CronTriggerTimetable(SCHEDULE, timezone="UTC"),
    start_date=START,
    catchup=True,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    params=PARAMS,
    tags=["bgp", "congruency"],
    doc_md=__doc__,
) as dag:

    @task
    def plan() -> list[str]:
        """The month's collectors that were running then (the catalogue's lifetimes, the same
        planning as `congruency run` and `congruency plan`): the ingest task is mapped over them."""
        runner, schedule, month, cfg = _job()
        return runner.planned_collectors(cfg, month)

    @task(pool=POOL, max_active_tis_per_dagrun=4)
    def ingest(collector: str) -> dict:
        runner, schedule, month, cfg = _job()
        return runner.ingest_collector(cfg, month, collector)

    @task(trigger_rule="all_done", retries=0)
    def ingest_done() -> None:
        """Join: the month's ingest is complete only if every collector's task was."""
        runner, schedule, month, cfg = _job()
        schedule.require(runner.finish_ingest(cfg, month))

    @task.branch
    def compare_where() -> str:
        return "compare" if get_current_context()["params"]["compare_on"] == "worker" else "compare_on_cluster"

    @task
    def compare() -> None:
        runner, schedule, month, cfg = _job()
        schedule.require(runner.run_step(cfg, month, "compare"))

    class ClusterCompare(SparkSubmitOperator):
        """spark-submit of cli/submit.py `run --only compare` with this run's settings (and,
        for an s3:// data dir, S3A's jars: pipeline/s3a.py)."""

        def execute(self, context):
            runner, schedule, month, cfg = _job()
            self.application_args = schedule.submit_args(cfg, month, context["params"].get("config"))
            self.jars = schedule.submit_jars(cfg) or self.jars
            return super().execute(context)

    def later(step: str):
        @task(task_id=step, trigger_rule="none_failed_min_one_success")
        def run() -> str:
            runner, schedule, month, cfg = _job()
            return schedule.require(runner.run_step(cfg, month, step)).status
        return run()

    joined = ingest_done()
    ingest.expand(collector=plan()) >> joined
    branches = [compare(), ClusterCompare(task_id="compare_on_cluster", conn_id=SPARK_CONN,
                                          application=SUBMIT, name="congruency-compare")]
    joined >> compare_where() >> branches
    branches >> later("sensitivity") >> later("hints") >> later("lake") >> later("reports")
