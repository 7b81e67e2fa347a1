"""The scheduler's view of a month (dags/congruency_monthly.py): which month a run covers,
the Config its params describe, a failed step as a failed task, and spark-submit's arguments."""
from __future__ import annotations

from dataclasses import replace

from bgp_congruency.common import layout, s3
from bgp_congruency.common.config import Config, load
from bgp_congruency.common.months import parse_month_range
from bgp_congruency.ingest import discovery
from bgp_congruency.runner.state import StepFailed, StepResult, data_dir


def month_for(logical_date, explicit: str | None = None) -> str:
    """The month a scheduled run covers: the DAG fires on day 6 of month M (its five-day
    window closed), so M is the logical date's month; an explicit month wins."""
    if explicit:
        (m,) = parse_month_range(explicit, "month")
        return m
    return f"{logical_date.year}-{logical_date.month:02d}"


def config_from_params(params: dict) -> Config:
    """The Config a DAG run's params describe (same fields and defaults as the command line)."""
    cfg = load(params.get("config") or None)
    over = {
        "collectors": tuple(params["collectors"]) if params.get("collectors") else None,
        "days": discovery.parse_days(params["days"]) if params.get("days") else None,
        "times": discovery.parse_times(params["times"]) if params.get("times") else None,
        "archive_root": params.get("archive_root") or None,
        "spark_master": params.get("spark_master") or None,
        "data_dir": layout.root_of(params["data_dir"]) if params.get("data_dir") else None,
    }
    over["engine"] = params.get("engine") or None
    over["sensitivity"] = params.get("sensitivity") if params.get("sensitivity") is not None else None
    cfg = cfg.with_overrides(**over)
    if params.get("min_coverage") is not None:
        cfg = replace(cfg, method=replace(cfg.method, min_coverage=float(params["min_coverage"])))
    return cfg


def require(res: StepResult) -> StepResult:
    """Raise StepFailed for a failed step (a scheduler task fails with its one-line error)."""
    if res.status == "failed":
        raise StepFailed(res.error)
    return res


def submit_jars(cfg: Config) -> str | None:
    """spark-submit's --jars for the compare on a cluster: S3A's, for an s3:// data dir (the
    driver's JVM is up before the job could name them)."""
    if not s3.is_s3(cfg.data_dir):
        return None
    from bgp_congruency.pipeline import s3a

    return ",".join(str(p) for p in s3a.jars())


def submit_args(cfg: Config, month: str, config_file: str | None = None) -> list[str]:
    """`cli/submit.py` arguments for the compare step on a cluster (spark-submit)."""
    args = ["run", "--only", "compare", "--month", month, "--data-dir", str(data_dir(cfg)),
            "--days", ",".join(map(str, cfg.days)), "--times", ",".join(cfg.times),
            "--collectors", ",".join(cfg.collectors), "--min-coverage", str(cfg.method.min_coverage)]
    # --min-coverage, the old name of --default-free-share: an older install on the cluster takes it too
    return args[:1] + (["--config", config_file] if config_file else []) + args[1:]
