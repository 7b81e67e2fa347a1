"""The monthly batch: every step of a month, each recorded with the fingerprint of its inputs.

DATA_DIR/_runs/month=M/state.json says, per step, when it last finished and from which
inputs. A re-run skips a step whose inputs are unchanged and whose outputs are still there,
and redoes one whose inputs changed (a new dump, other method parameters, the month before
re-published). Inputs per step:
- ingest: the selection (collectors, days, times, tolerance, archive roots);
- compare: the manifest's sha256s of the month's ingested files, the method parameters,
  the engine, and the month before's published tables (transitions read them);
- hints, warehouse, reports: the published tables they read.
The whole month runs under its lock (common/locks.py); a kill leaves nothing the next run
does not clean (the compare job's staging recovery, the writers' dot-temp files).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from common import atomic, console, layout
from common.config import Config
from common.errors import BadInput, CongruencyError
from common.locks import month_lock
from pipeline.job import TABLE_ORDER

#: The steps of a month, in order; a step may read what the ones before it wrote.
STEPS = ("ingest", "compare", "sensitivity", "hints", "warehouse", "reports")
#: Tables the compare step publishes per month: the job's own list (one owner).
MONTH_TABLES = TABLE_ORDER


class StepFailed(CongruencyError):
    """A step could not finish; the message is one line naming what failed."""


@dataclass
class StepResult:
    step: str
    status: str  # done | skipped (complete and valid) | failed | interrupted (Ctrl-C) | not run
    seconds: float = 0.0
    error: str | None = None
    outputs: dict = field(default_factory=dict)


# --- where things are -----------------------------------------------------------------

def data_dir(cfg: Config) -> Path:
    return layout.local(cfg.data_dir, "the monthly run")


def state_path(cfg: Config, month: str) -> Path:
    return layout.state_file(data_dir(cfg), month)


def read_state(cfg: Config, month: str) -> dict:
    p = state_path(cfg, month)
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        return {"month": month, "steps": {}}


def _update_state(cfg: Config, month: str, change: Callable[[dict], None]) -> None:
    """Read-modify-write of the state file, atomic and safe for concurrent tasks."""
    with month_lock(data_dir(cfg), month, part="state", wait_s=300):
        st = read_state(cfg, month)
        change(st)
        atomic.write_text(state_path(cfg, month), json.dumps(st, indent=1, sort_keys=True, default=str))


def _record(cfg: Config, month: str, res: StepResult, fingerprint: str | None, read: dict | None = None) -> None:
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")

    def change(st):
        st["steps"][res.step] = {  # a whole-month ingest replaces the DAG's per-collector records
            "status": res.status, "at": now, "seconds": round(res.seconds, 1), "error": res.error,
            "outputs": res.outputs, "fingerprint": fingerprint if res.status == "done" else None,
            **({READ: read} if read is not None and res.status == "done" else {})}
    _update_state(cfg, month, change)


def _stale(cfg: Config, month: str, st: dict) -> dict[str, str]:
    """Steps recorded done whose inputs from other months' runs changed since: the compare
    whose month before was re-published after it read it, a step whose inputs changed while
    it ran. (The rest of a fingerprint, the run's own selection and method, is the run's.)"""
    from common.months import previous_month
    from pipeline.job import PREVIOUS_TABLES

    out = {}
    for name, rec in st["steps"].items():
        if rec.get("status") != "done":
            continue
        if name != "ingest" and rec.get("fingerprint") is None and "collectors" not in rec:
            out[name] = rec.get("error") or "recorded without its inputs"
        prev = (rec.get(READ) or {}).get("previous")
        if name == "compare" and prev is not None:
            now = tables_listing(data_dir(cfg), PREVIOUS_TABLES, [previous_month(month)])
            if [list(f) for f in now] != [list(f) for f in prev]:
                out[name] = f"{previous_month(month)} was published after this compare read it"
    return out


# --- fingerprints ---------------------------------------------------------------------

def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def tables_listing(root: Path, tables=MONTH_TABLES, months: list[str] | None = None) -> list:
    """(path, size, mtime_ns) of every published data file of these tables (and months)."""
    from common.published import listing

    return listing(root, tables, months)


def engine(cfg: Config) -> str:
    """The engine the compare job will use (a named Spark cluster implies Spark)."""
    from pipeline import job

    return job.effective_engine(cfg)


def _manifest_ok(cfg: Config, month: str) -> list[dict]:
    from ingest import manifest

    return [r for r in manifest.read(data_dir(cfg), month).values() if r["status"] == "ok"]


def _selection(cfg: Config, month: str) -> dict:
    from ingest import catalogue

    cat = catalogue.load(cfg.catalogue)
    cols = {n: [cat[n].active_from, cat[n].active_until, cat[n].evidence_from, cat[n].path, cat[n].legacy_paths]
            for n in catalogue.expand(cfg.collectors, cfg.catalogue)}
    return {"collectors": cols, "days": list(cfg.days), "times": list(cfg.times),
            "tolerance_minutes": cfg.tolerance_minutes, "archive_root": cfg.archive_root,
            "archive_roots": dict(sorted(cfg.archive_roots.items())), "bgpstream_csv": cfg.bgpstream_csv}


#: The key of a step body's outputs that carries what it read of inputs other runs can
#: change (the compare: the month before's files it linked); it replaces the fingerprint's
#: own listing of them, so a step is recorded on exactly the inputs it saw.
READ = "_read"


def fingerprint(cfg: Config, month: str, step: str, read: dict | None = None) -> str:
    root = data_dir(cfg)
    if step == "ingest":
        return _digest(_selection(cfg, month))
    if step == "compare":
        files = sorted((r["slot"], r["sha256"], Path(r["output"]).name) for r in _manifest_ok(cfg, month))
        from common.months import previous_month
        from pipeline.job import PREVIOUS_TABLES

        prev = (read or {}).get("previous")
        if prev is None:
            prev = tables_listing(root, PREVIOUS_TABLES, [previous_month(month)])
        return _digest({"files": files, "method": repr(cfg.method), "engine": engine(cfg),
                        "previous": [list(f) for f in prev]})
    if step == "sensitivity":
        return _digest({"on": cfg.sensitivity, "engine": engine(cfg),
                        "tables": tables_listing(root, ("month_summary", "provenance"), [month])})
    if step == "hints":
        return _digest(tables_listing(root, months=[month]))
    if step == "warehouse":
        return _digest(tables_listing(root, MONTH_TABLES + ("hints",)))
    if step == "reports":
        return _digest({"tables": tables_listing(root, MONTH_TABLES + ("hints",)),
                        "warehouse": _outputs_listing(cfg, month, "warehouse")})
    raise KeyError(step)


def _outputs_listing(cfg: Config, month: str, step: str) -> list:
    outs = read_state(cfg, month)["steps"].get(step, {}).get("outputs", {})
    return [(k, os.stat(v).st_mtime_ns if os.path.exists(v) else None) for k, v in sorted(outs.items())
            if isinstance(v, str)]


# --- the steps ------------------------------------------------------------------------

def _cleanup_ingest(cfg: Config, month: str) -> None:
    """Remove the dot-temp Parquet files killed ingests left (never a live writer's)."""
    atomic.clean_dead_under(layout.month_dir(data_dir(cfg), "rib_entries", month))


def _cleanup(cfg: Config, month: str) -> None:
    """What killed runs of the month left: staged tables (finished or removed, see
    pipeline/publish.py) and the writers' dot-temp files. Hold the month lock. The
    warehouse and trend report are shared by every month: only temps of dead writers go."""
    from pipeline.publish import LocalStore
    from reports import html, warehouse

    root = data_dir(cfg)
    LocalStore(root).recover(month)
    _cleanup_ingest(cfg, month)
    atomic.clean_stale(warehouse.path(cfg), html.trend_path(cfg), html.month_path(cfg, month), _tunnels_path(cfg, month))


def _tunnels_path(cfg: Config, month: str) -> Path:
    return layout.export_file(data_dir(cfg), month)


def coverage(cfg: Config, month: str, keys: set[str] | None = None):
    """The month's coverage under the config's policy (ingest/policy.py), from the manifest
    rows of the selection's slots (all of the selection's collectors if keys is None)."""
    from ingest import catalogue, manifest, policy

    names = set(catalogue.expand(cfg.collectors, cfg.catalogue))
    rows = [r for k, r in manifest.read(data_dir(cfg), month).items()
            if (k in keys if keys is not None else r["collector"] in names)]
    return policy.for_config(rows, cfg)


def do_ingest(cfg: Config, month: str, progress=None, collector: str | None = None) -> dict:
    """Ingest the month's selected snapshots (or one collector's: the DAG's mapped task).
    The whole month goes on when its coverage meets the policy; one collector's task fails
    when any of its active snapshots did (the scheduler retries it), the month's join
    (finish_ingest) then applies the policy."""
    from ingest import run as ingest_run

    if collector:
        cfg = cfg.with_overrides(collectors=(collector,))

    def report(row):
        if row.status not in ("ok", "inactive"):
            console.error(f"{row.collector} {row.target_time:%Y-%m-%d %H:%M}: {row.error}")

    out = ingest_run.run(cfg, month, progress=progress, on_row=report)
    outputs = {"manifest": str(out.manifest_path),
               "rib_entries": str(layout.month_dir(data_dir(cfg), "rib_entries", month))}
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


def do_compare(cfg: Config, month: str, progress=None, ctx: dict | None = None) -> dict:
    from pipeline import job

    if not _manifest_ok(cfg, month):
        raise StepFailed(f"compare {month}: no snapshot of the month was ingested")
    if engine(cfg) == "spark":
        from pipeline import spark_session as sparkmod

        if problem := sparkmod.java_problem():
            raise StepFailed(problem)
        ctx = {} if ctx is None else ctx
        if ctx.get("spark") is None:
            ctx["spark"] = sparkmod.session(cfg.spark_master, cfg.spark_conf)
        (res,) = job.run_months(cfg, [month], spark=ctx["spark"])
    else:
        (res,) = job.run_months(cfg, [month])
    if res.error:
        raise StepFailed(res.error)
    root = data_dir(cfg)
    return {**{t: str(layout.month_dir(root, t, month)) for t in MONTH_TABLES}, READ: {"previous": res.previous}}


def do_sensitivity(cfg: Config, month: str, progress=None, ctx=None) -> dict:
    """The sensitivity table and page (config `sensitivity = true`); nothing when off."""
    if not cfg.sensitivity:
        return {}
    from pipeline import sensitivity
    from reports import sensitivity as page

    out = sensitivity.run(cfg, month, progress=progress)
    return {"sensitivity": out["path"], "sensitivity_report": str(page.write(cfg, month))}


def do_hints(cfg: Config, month: str, progress=None, ctx=None) -> dict:
    """The month's hints table, and its JSON Lines export for tunnel tools."""
    from selector import table as hints
    from selector.exports import jsonl

    out = hints.publish(cfg, month, progress=progress)
    export = jsonl.write(cfg, _tunnels_path(cfg, month), month)
    return {"hints": out["path"], "tunnels_jsonl": str(export)}


class StepWarning(CongruencyError):
    """A step that could not do its work now, which no later step needs: the month goes on,
    the step is redone by the next run (its completion is not recorded)."""


def do_warehouse(cfg: Config, month: str, progress=None, ctx=None) -> dict:
    """The warehouse file; held open for writing elsewhere (the duckdb client), it is left as
    it is with a warning: the reports read the tables themselves."""
    from reports import warehouse

    try:
        return {"warehouse": str(warehouse.refresh(cfg))}
    except warehouse.WarehouseLocked as exc:
        raise StepWarning(f"warehouse {month}: {exc}; not refreshed (the reports do not need it)") from None


def do_reports(cfg: Config, month: str, progress=None, ctx=None) -> dict:
    """Both reports, holding the tables still (another month may be re-published meanwhile)."""
    from common.locks import reading
    from reports import html

    with reading(data_dir(cfg)):
        return {"month_report": str(html.write_month_report(cfg, month)),
                "trend_report": str(html.write_trend_report(cfg))}


@dataclass(frozen=True)
class Step:
    name: str
    run: Callable


REGISTRY = {
    "ingest": Step("ingest", lambda cfg, m, progress=None, ctx=None: do_ingest(cfg, m, progress)),
    "compare": Step("compare", do_compare),
    "sensitivity": Step("sensitivity", do_sensitivity),
    "hints": Step("hints", do_hints),
    "warehouse": Step("warehouse", do_warehouse),
    "reports": Step("reports", do_reports),
}


#: Steps whose output is shared by every month (the warehouse, the trend report): their
#: inputs are every month's tables, so a later month's run changes them. The latest
#: fingerprint any month recorded is kept in DATA_DIR/_runs/shared.json: a re-run of an
#: earlier month skips them when that is still current (a backfill's re-run skips everything).
SHARED_STEPS = ("warehouse", "reports")


def _shared_path(cfg: Config) -> Path:
    return layout.runs_file(data_dir(cfg), "shared.json")


def _shared(cfg: Config) -> dict:
    try:
        return json.loads(_shared_path(cfg).read_text())
    except (FileNotFoundError, ValueError):
        return {}


def _record_shared(cfg: Config, step: str, fp: str) -> None:
    with month_lock(data_dir(cfg), "shared", part="state", wait_s=300):
        st = _shared(cfg)
        st[step] = fp
        atomic.write_text(_shared_path(cfg), json.dumps(st, indent=1, sort_keys=True))


def _valid(cfg: Config, month: str, step: str, rec: dict) -> bool:
    """A recorded completion still stands: same inputs, outputs still there."""
    if rec.get("status") != "done":
        return False
    fp = fingerprint(cfg, month, step)
    if rec.get("fingerprint") != fp and not (step in SHARED_STEPS and _shared(cfg).get(step) == fp):
        return False
    outs = [v for v in rec.get("outputs", {}).values() if isinstance(v, str)]
    if step == "ingest":
        return all(Path(r["output"]).exists() for r in _manifest_ok(cfg, month)) and bool(outs)
    return all(os.path.exists(v) for v in outs)


def run_step(cfg: Config, month: str, step: str, *, force: bool = False, progress=None,
             ctx: dict | None = None) -> StepResult:
    """Run one step unless its recorded completion is still valid; record what happened."""
    s = REGISTRY[step]
    with month_lock(data_dir(cfg), month):  # re-entrant: run_month holds it already
        return _run_step(cfg, month, s, force, progress, ctx)


def _run_step(cfg: Config, month: str, s: Step, force: bool, progress, ctx) -> StepResult:
    step = s.name
    rec = read_state(cfg, month)["steps"].get(step, {})
    if not force and _valid(cfg, month, step, rec):
        return StepResult(step, "skipped", outputs=rec.get("outputs", {}))
    t0 = time.monotonic()
    before = None if step == "ingest" else fingerprint(cfg, month, step)
    try:
        outputs = s.run(cfg, month, progress=progress, ctx=ctx)
    except StepWarning as exc:
        res = StepResult(step, "warning", time.monotonic() - t0, error=str(exc))
        _record(cfg, month, res, None)
        return res
    except BaseException as exc:  # every library's own error (WarehouseError, ReportError, ...), or Ctrl-C
        if console.interrupted(exc):
            at = datetime.now(timezone.utc).strftime("%H:%M:%S UTC")
            res = StepResult(step, "interrupted", time.monotonic() - t0,
                             error=f"Ctrl-C at {at}; the next run resumes it")
        elif isinstance(exc, Exception):
            res = StepResult(step, "failed", time.monotonic() - t0, error=_one_line(step, month, exc, cfg))
        else:
            raise
        try:  # what the step left is cleaned or finished by the next run, as after a kill
            _record(cfg, month, res, None)
        except OSError:
            pass  # no room even for the state file: the next run redoes this step anyway
        except KeyboardInterrupt:  # a second Ctrl-C while recording: still an interrupt
            raise KeyboardInterrupt from None
        if res.status == "interrupted":
            raise KeyboardInterrupt from None
        return res
    read = outputs.pop(READ, None)
    res = StepResult(step, "done", time.monotonic() - t0, outputs=outputs)
    fp = fingerprint(cfg, month, step, read)
    if read is None and before is not None and fp != before:
        # Another month's run changed what this step reads while it ran: which version it
        # read is unknown, so it is not recorded as done on either; the next run redoes it.
        res.error = "inputs changed while it ran (another month was published); the next run redoes it"
        fp = None
    _record(cfg, month, res, fp, read)
    if step in SHARED_STEPS and fp is not None:
        _record_shared(cfg, step, fp)
    return res


def _one_line(step: str, month: str, exc: Exception, cfg: Config | None = None) -> str:
    """A step's failure as one line: the full-disk message, or the error's first line."""
    from pipeline.job import no_space

    if cfg is not None and (msg := no_space(str(data_dir(cfg)), month, exc)):
        return msg
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return first if isinstance(exc, StepFailed) or first.startswith(f"{step} ") else f"{step} {month}: {first}"


def steps_to_force(force: str | None) -> set[str]:
    """`--force` (all steps) or `--force STEP` (that step and every one after it)."""
    if force is None:
        return set()
    if force == "all":
        return set(STEPS)
    if force not in STEPS:
        raise BadInput(f"--force: unknown step {force!r} (one of {', '.join(STEPS)})")
    return set(STEPS[STEPS.index(force):])


def run_month(cfg: Config, month: str, *, force: str | None = None, only: str | None = None,
              progress=None, ctx: dict | None = None, wait_s: float = 0.0) -> dict:
    """Every step of the month in order (or `only` one), under the month lock; stops at the
    first failure. Returns the month's summary (see `summary`)."""
    forced = steps_to_force(force)
    todo = (only,) if only else tuple(s for s in STEPS if s != "sensitivity" or cfg.sensitivity)
    results: list[StepResult] = []
    overall = progress.add_task(f"run {month}", total=len(todo)) if progress is not None else None
    with month_lock(data_dir(cfg), month, wait_s=wait_s):
        _cleanup(cfg, month)
        for step in todo:
            if progress is not None:
                progress.update(overall, description=f"run {month}: {step}")
            if any(r.status in ("failed", "not run") for r in results):
                results.append(StepResult(step, "not run"))
            else:
                results.append(run_step(cfg, month, step, force=step in forced, progress=progress, ctx=ctx))
            if progress is not None:
                progress.advance(overall)
    return summary(cfg, month, results)


def run_months(cfg: Config, months: list[str], *, force: str | None = None, only: str | None = None,
               progress=None, wait_s: float = 0.0) -> list[dict]:
    """Months in calendar order (transitions read the month before); one Spark session."""
    ctx: dict = {}
    out = []
    full = None
    try:
        for m in sorted(months):
            if full is not None:  # a full disk stops the backfill: later months are not started
                out.append(summary(cfg, m, [StepResult(s, "not run", error=f"not started: {full}")
                                            for s in ((only,) if only else STEPS)]))
                continue
            out.append(run_month(cfg, m, force=force, only=only, progress=progress, ctx=ctx, wait_s=wait_s))
            full = next((st["error"] for st in out[-1]["steps"].values()
                         if st.get("status") == "failed" and "no space left on device" in (st.get("error") or "")),
                        None)
    finally:
        if ctx.get("spark") is not None:
            ctx["spark"].stop()
    return out


def planned_collectors(cfg: Config, month: str) -> list[str]:
    """The selection's collectors that may have data in the month (the DAG maps its ingest
    over these; finish_ingest records the others' `inactive` rows)."""
    from ingest import catalogue

    return [n for n, st in catalogue.active(cfg.collectors, month, cfg.catalogue).items() if st != "inactive"]


def ingest_collector(cfg: Config, month: str, collector: str) -> dict:
    """One collector's ingest (the DAG maps this over the collectors). Shares the month with
    the other collectors' tasks, excludes a whole-month run; records its outcome."""
    root = data_dir(cfg)
    t0 = time.monotonic()
    with month_lock(root, month, shared=True), month_lock(root, month, part=f"ingest.{collector}"):
        try:
            outputs = do_ingest(cfg, month, collector=collector)
            res = {"status": "done", "error": None}
        except Exception as exc:  # recorded for `status`, then the task fails with it
            outputs, res = {}, {"status": "failed", "error": _one_line("ingest", month, exc, cfg)}
    res["seconds"] = round(time.monotonic() - t0, 1)

    def change(st):
        st["steps"].setdefault("ingest", {}).setdefault("collectors", {})[collector] = res
    _update_state(cfg, month, change)
    if res["error"]:
        raise StepFailed(res["error"])
    return outputs


def finish_ingest(cfg: Config, month: str) -> StepResult:
    """After every collector's task: record the ingest step as a whole (the DAG's join)."""
    from ingest import catalogue, manifest
    from ingest import run as ingest_run

    cols = read_state(cfg, month)["steps"].get("ingest", {}).get("collectors", {})
    planned = planned_collectors(cfg, month)
    notrun = [c for c in planned if c not in cols]
    idle = [c for c in catalogue.expand(cfg.collectors, cfg.catalogue) if c not in planned]
    if idle:  # their slots are all inactive: no archive is asked
        ingest_run.run(cfg.with_overrides(collectors=tuple(idle)), month)

    cov = coverage(cfg, month)
    if notrun:
        res = StepResult("ingest", "failed", error=f"ingest {month}: " + "; ".join(f"{c}: not run" for c in notrun))
        fp = None
    elif not cov.go_on:
        res = StepResult("ingest", "failed", error=f"ingest {month}: {cov.reason}")
        fp = None
    else:
        res = StepResult("ingest", "done", outputs={
            "manifest": str(manifest.path(data_dir(cfg), month)),
            "rib_entries": str(layout.month_dir(data_dir(cfg), "rib_entries", month)), "coverage": cov.to_dict()})
        fp = fingerprint(cfg, month, "ingest")

    def change(st):
        rec = st["steps"].setdefault("ingest", {})
        rec.update({"status": res.status, "error": res.error, "outputs": res.outputs,
                    "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "fingerprint": fp})
    _update_state(cfg, month, change)
    return res


# --- what a month has ---------------------------------------------------------------------

def summary(cfg: Config, month: str, results: list[StepResult] | None = None) -> dict:
    """Files, entries, pairs, the non-congruent fraction and where each output is, read
    from the data dir itself (so a skipped step reports the same as a fresh one)."""
    import pyarrow.parquet as pq

    from ingest import manifest as mf

    root = data_dir(cfg)
    rows = list(mf.read(root, month).values())
    ok = [r for r in rows if r["status"] == "ok"]
    st_ingest = read_state(cfg, month)["steps"].get("ingest", {})
    cov = (st_ingest.get("outputs") or {}).get("coverage")
    ms_dir = layout.month_dir(root, "month_summary", month)
    ms = None
    if any(p.suffix == ".parquet" for p in ms_dir.glob("*.parquet")):
        t = pq.read_table(ms_dir)
        ms = t.to_pylist()[0] if t.num_rows else None
    st = read_state(cfg, month)
    steps = {name: {k: v for k, v in rec.items() if k in ("status", "at", "error", "seconds", "collectors")}
             for name, rec in st["steps"].items()}
    if results is None:  # `status`: a completion on inputs another run has changed since is stale
        for name, why in _stale(cfg, month, st).items():
            steps[name].update(status="stale", error=f"{why}; the next run redoes it")
    for r in results or []:
        steps[r.step] = {**steps.get(r.step, {}), "status": r.status, "error": r.error,
                         "seconds": round(r.seconds, 1)}
    steps = {k: steps[k] for k in sorted(steps, key=lambda k: STEPS.index(k) if k in STEPS else 99)}
    outputs = {}
    for name in STEPS:
        outputs.update({k: v for k, v in st["steps"].get(name, {}).get("outputs", {}).items() if k != "coverage"})
    outputs["state"] = str(state_path(cfg, month))
    # One spelling for every output (steps record some relative, some absolute).
    outputs = {k: os.path.abspath(v) if isinstance(v, str) and not layout.is_cluster(v) else v
               for k, v in outputs.items()}
    if results is not None and len(results) == 1:  # --only STEP: it succeeds when that step does
        good = results[0].status not in ("failed", "not run")
    else:
        good = all(s.get("status") not in ("failed", "not run") for s in steps.values()) and ms is not None
    return {
        "month": month,
        "ok": good,
        "files": len(ok),
        "inactive_slots": sum(r["status"] == "inactive" for r in rows),
        "coverage": cov,
        "failed_slots": [{"slot": r["slot"], "collector": r["collector"], "status": r["status"],
                          "error": r["error"]} for r in rows if r["status"] not in ("ok", "inactive")],
        "entries": sum((r["entries_v4"] or 0) + (r["entries_v6"] or 0) for r in ok),
        "pairs": ms["pairs"] if ms else None,
        "noncongruent_fraction": ms["noncongruent_fraction"] if ms else None,
        "steps": steps,
        "outputs": outputs,
    }


# --- the scheduler's view (dags/congruency_monthly.py) ------------------------------------

def month_for(logical_date, explicit: str | None = None) -> str:
    """The month a scheduled run covers: the DAG fires on day 6 of month M (its five-day
    window closed), so M is the logical date's month; an explicit month wins."""
    if explicit:
        from common.months import parse_month_range

        (m,) = parse_month_range(explicit, "month")
        return m
    return f"{logical_date.year}-{logical_date.month:02d}"


def config_from_params(params: dict) -> Config:
    """The Config a DAG run's params describe (same fields and defaults as the command line)."""
    from common.config import load
    from ingest import discovery

    cfg = load(params.get("config") or None)
    over = {
        "collectors": tuple(params["collectors"]) if params.get("collectors") else None,
        "days": discovery.parse_days(params["days"]) if params.get("days") else None,
        "times": discovery.parse_times(params["times"]) if params.get("times") else None,
        "archive_root": params.get("archive_root") or None,
        "spark_master": params.get("spark_master") or None,
        "data_dir": Path(params["data_dir"]) if params.get("data_dir") else None,
    }
    over["engine"] = params.get("engine") or None
    over["sensitivity"] = params.get("sensitivity") if params.get("sensitivity") is not None else None
    cfg = cfg.with_overrides(**over)
    if params.get("min_coverage") is not None:
        from dataclasses import replace

        cfg = replace(cfg, method=replace(cfg.method, min_coverage=float(params["min_coverage"])))
    return cfg


def require(res: StepResult) -> StepResult:
    """Raise StepFailed for a failed step (a scheduler task fails with its one-line error)."""
    if res.status == "failed":
        raise StepFailed(res.error)
    return res


def submit_args(cfg: Config, month: str, config_file: str | None = None) -> list[str]:
    """`cli/submit.py` arguments for the compare step on a cluster (spark-submit)."""
    args = ["run", "--only", "compare", "--month", month, "--data-dir", str(data_dir(cfg)),
            "--days", ",".join(map(str, cfg.days)), "--times", ",".join(cfg.times),
            "--collectors", ",".join(cfg.collectors), "--min-coverage", str(cfg.method.min_coverage)]
    # --min-coverage, the old name of --default-free-share: an older install on the cluster takes it too
    return args[:1] + (["--config", config_file] if config_file else []) + args[1:]
