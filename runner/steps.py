"""The body of each step of a month (ingest, compare, sensitivity, hints, lake,
reports): each calls its room's library and returns the outputs to record; the executor
(runner/month.py) records them with their inputs' fingerprints (runner/state.py)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bgp_congruency.common import atomic, console, layout, s3
from bgp_congruency.common.config import Config
from bgp_congruency.common.errors import CongruencyError
from bgp_congruency.ingest import catalogue, manifest, policy
from bgp_congruency.ingest import run as ingest_run
from bgp_congruency.lake import attach, published, upkeep
from bgp_congruency.lake.attach import pinned
from bgp_congruency.pipeline import job, sensitivity
from bgp_congruency.pipeline import spark_session as sparkmod
from bgp_congruency.pipeline.engines.duckdb import DuckDBEngine
from bgp_congruency.pipeline.publish import store_for
from bgp_congruency.relationships import table as relationships_table
from bgp_congruency.reports import month_report, trend_report
from bgp_congruency.reports import sensitivity as page
from bgp_congruency.runner.state import MEASURED, READ, StepFailed, data_dir, engine, manifest_ok
from bgp_congruency.selector import origins, reveal
from bgp_congruency.selector import table as hints
from bgp_congruency.selector.exports import jsonl
from bgp_congruency.selector.question import evidence_of

# --- the steps ------------------------------------------------------------------------

def _cleanup_ingest(cfg: Config, month: str) -> None:
    """Remove the dot-temp Parquet files killed ingests left (never a live writer's)."""
    atomic.clean_dead_under(Path(layout.staging_dir(data_dir(cfg))) / f"ingest-{month}")


def cleanup(cfg: Config, month: str) -> None:
    """What killed runs of the month left: staged tables and publishes never committed (see
    pipeline/publish.py; but a killed DuckDB compare's staging folder, which the compare
    resumes) and the writers' dot-temp files. Hold the month lock. The trend
    report is shared by every month: only temps of dead writers go. On S3 there are no
    dot-temps (an object is written whole) and the ingest's mirror cleans up after itself."""
    root = data_dir(cfg)
    store = store_for(root)
    store.recover(month, keep=DuckDBEngine.resumable(store, month))  # a killed compare's finished partitions
    if s3.is_s3(root):
        return
    _cleanup_ingest(cfg, month)
    atomic.clean_stale(trend_report.trend_path(cfg), month_report.month_path(cfg, month), _tunnels_path(cfg, month))


def _tunnels_path(cfg: Config, month: str) -> Path | str:
    return layout.export_file(data_dir(cfg), month)


def coverage(cfg: Config, month: str, keys: set[str] | None = None):
    """The month's coverage under the config's policy (ingest/policy.py), from the manifest
    rows of the selection's slots (all of the selection's collectors if keys is None)."""
    names = set(catalogue.expand(cfg.collectors, cfg.catalogue))
    rows = [r for k, r in manifest.read(data_dir(cfg), month).items()
            if (k in keys if keys is not None else r["collector"] in names)]
    return policy.for_config(rows, cfg)


def do_ingest(cfg: Config, month: str, progress=None, collector: str | None = None) -> dict:
    """Ingest the month's selected snapshots (or one collector's: the DAG's mapped task).
    The whole month goes on when its coverage meets the policy; one collector's task fails
    when any of its active snapshots did (the scheduler retries it), the month's join
    (finish_ingest) then applies the policy."""
    if collector:
        cfg = cfg.with_overrides(collectors=(collector,))

    def report(row):
        if row.status not in ("ok", "inactive"):
            console.error(f"{row.collector} {row.target_time:%Y-%m-%d %H:%M}: {row.error}")

    out = ingest_run.run(cfg, month, progress=progress, on_row=report)
    outputs = {"manifest": str(out.manifest_path),
               "routes": str(layout.routes_dir(data_dir(cfg), month))}
    if collector:
        if out.failed and not cfg.tolerate_failures:
            names = ", ".join(f"{r.collector} {r.target_time:%Y-%m-%d %H:%M}" for r in out.failed)
            raise StepFailed(f"ingest {month}: {len(out.failed)} snapshot(s) failed or missing ({names}); "
                             f"see {out.manifest_path}")
        return outputs
    cov = coverage(cfg, month, out.keys)
    if not cov.go_on:
        names = ", ".join(cov.failed + cov.missing)
        raise StepFailed(f"ingest {month}: {cov.reason}" + (f" ({names})" if names else "") +
                         f"; see {out.manifest_path}")
    return {**outputs, "coverage": cov.to_dict()}


#: What the compare computes from its own staged tables and publishes with them (pipeline/job.Stager).
STAGERS = (relationships_table.stage_month, origins.stage_month, hints.stage_month)


def do_compare(cfg: Config, month: str, progress=None, ctx: dict | None = None) -> dict:
    if not manifest_ok(cfg, month):
        raise StepFailed(f"compare {month}: no snapshot of the month was ingested")
    if engine(cfg) == "spark":
        if problem := sparkmod.java_problem():
            raise StepFailed(problem)
        ctx = {} if ctx is None else ctx
        if ctx.get("spark") is None:
            ctx["spark"] = job.spark_session(cfg)
        (res,) = job.compare_months(cfg, [month], spark=ctx["spark"], stagers=STAGERS)
    else:
        (res,) = job.compare_months(cfg, [month], stagers=STAGERS)
    if res.error:
        raise StepFailed(res.error)
    # The publish's own folders: a later vacuum that deletes them (the month re-published
    # since) makes this completion stale (runner/state.valid).
    measured = {"staging_peak_bytes": res.staging_peak_bytes} if res.staging_peak_bytes is not None else None
    return {**res.published, READ: {"previous": res.previous}, MEASURED: measured}


def do_sensitivity(cfg: Config, month: str, progress=None, ctx=None) -> dict:
    """The sensitivity table and page (config `sensitivity = true`); nothing when off."""
    if not cfg.sensitivity:
        return {}

    out = sensitivity.run(cfg, month, progress=progress)
    return {"sensitivity": out["path"], "sensitivity_report": str(page.write(cfg, month))}


def do_hints(cfg: Config, month: str, progress=None, ctx=None) -> dict:
    """The JSON Lines export of the month's hints for tunnel tools (config tunnels_export;
    when off, an earlier run's export goes: it would not match a re-published month). The
    compare publishes the hints in the month's own commit; a month published before that was
    so gets them here."""
    root = data_dir(cfg)
    if month not in published.months(root, "hints"):
        hints.publish(cfg, month, progress=progress)
    files = published.files(root, ["hints"], month)["hints"]
    where = files[0].rsplit("/", 1)[0] if files else layout.month_dir(root, "hints", month)
    if not cfg.tunnels_export:
        store_for(root).delete(str(_tunnels_path(cfg, month)))
        return {"hints": str(where)}
    site = None
    if cfg.source.asn is not None and (cfg.source.via4 or cfg.source.via6):
        ev = evidence_of(list(cfg.source.via4) or None, list(cfg.source.via6) or None, what="[source] ")
        site = reveal.site_hints(cfg, month, cfg.source.asn, ev.via)
        if site is None:
            console.note(f"[source] AS{cfg.source.asn} is a vantage point of {month}: its own rows of the hints "
                         "table are its advice; no site rows are added")
    out = {"hints": str(where), "tunnels_jsonl": str(jsonl.write(cfg, _tunnels_path(cfg, month), month, site))}
    if site is not None:
        out["site_hints"] = site.num_rows
    return out


class StepWarning(CongruencyError):
    """A step that could not do its work now, which no later step needs: the month goes on,
    the step is redone by the next run (its completion is not recorded)."""


def do_lake(cfg: Config, month: str, progress=None, ctx=None) -> dict:
    """The catalog's upkeep: once it holds more than `lake_keep_snapshots` snapshots, expire
    the older ones and delete the files none of the rest needs (lake/catalog.vacuum)."""
    root = data_dir(cfg)
    with attach.opened(root) as con:
        have = con.execute(f"SELECT count(*) FROM {attach.ALIAS}.snapshots()").fetchone()[0]
    if have <= cfg.lake_keep_snapshots:
        return {"snapshots": have}
    try:
        done = upkeep.vacuum(root, cfg.lake_keep_snapshots, cfg.lake_vacuum_grace_s)
    except attach.LakeError as exc:  # e.g. another publish holding the catalog: nothing waits for this
        raise StepWarning(f"lake {month}: {exc}; the next run tries again") from None
    return {"snapshots": done["snapshots_kept"], "expired": done["snapshots_expired"], "files_deleted": done["files_deleted"]}


def do_reports(cfg: Config, month: str, progress=None, ctx=None) -> dict:
    """Both reports, from one snapshot of the catalog (another month may be re-published meanwhile)."""
    with pinned(data_dir(cfg)):
        return {"month_report": str(month_report.write_month_report(cfg, month)),
                "trend_report": str(trend_report.write_trend_report(cfg))}


@dataclass(frozen=True)
class Step:
    name: str
    run: Callable


REGISTRY = {
    "ingest": Step("ingest", lambda cfg, m, progress=None, ctx=None: do_ingest(cfg, m, progress)),
    "compare": Step("compare", do_compare),
    "sensitivity": Step("sensitivity", do_sensitivity),
    "hints": Step("hints", do_hints),
    "lake": Step("lake", do_lake),
    "reports": Step("reports", do_reports),
}
