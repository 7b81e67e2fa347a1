"""The monthly batch: every step of a month in order, each skipped when it is recorded done
on unchanged inputs (runner/state.py), run (runner/steps.py) and recorded otherwise.

The whole month runs under its lock (common/locks.py); a kill leaves nothing the next run
does not clean (the compare job's staging recovery, the writers' dot-temp files).
"""
from __future__ import annotations

import time
from datetime import datetime, timezone

from bgp_congruency.common import console, layout
from bgp_congruency.common.config import Config
from bgp_congruency.common.errors import BadInput
from bgp_congruency.common.locks import month_lock
from bgp_congruency.ingest import catalogue, manifest
from bgp_congruency.ingest import run as ingest_run
from bgp_congruency.lake import published
from bgp_congruency.pipeline.job import no_space
from bgp_congruency.runner import STEPS
from bgp_congruency.runner import state as S
from bgp_congruency.runner.state import MEASURED, READ, SHARED_STEPS, StepFailed, StepResult, data_dir, fingerprint
from bgp_congruency.runner.steps import REGISTRY, Step, StepWarning, cleanup, coverage, do_ingest


def run_step(cfg: Config, month: str, step: str, *, force: bool = False, progress=None,
             ctx: dict | None = None) -> StepResult:
    """Run one step unless its recorded completion is still valid; record what happened
    (the DAG's task for a step)."""
    with month_lock(data_dir(cfg), month):  # re-entrant: run_month holds it already
        return _run_step(cfg, month, REGISTRY[step], force, progress, ctx, S.read_state(cfg, month))[0]


def _run_step(cfg: Config, month: str, s: Step, force: bool, progress, ctx, st: dict) -> tuple[StepResult, dict]:
    step = s.name
    rec = st["steps"].get(step, {})
    # The inputs' fingerprint now: what a valid record must have been made on, and (but for
    # ingest, which makes its own inputs) what must not change while the step runs.
    before = fingerprint(cfg, month, step)
    if not force and S.valid(cfg, month, step, rec, before):
        return StepResult(step, "skipped", outputs=S.absolute(cfg, rec.get("outputs", {}))), st
    t0 = time.monotonic()
    try:
        outputs = s.run(cfg, month, progress=progress, ctx=ctx)
    except StepWarning as exc:
        res = StepResult(step, "warning", time.monotonic() - t0, error=str(exc))
        return res, S.record(cfg, month, res, None)
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
            st = S.record(cfg, month, res, None)
        except OSError:
            pass  # no room even for the state file: the next run redoes this step anyway
        except KeyboardInterrupt:  # a second Ctrl-C while recording: still an interrupt
            raise KeyboardInterrupt from None
        if res.status == "interrupted":
            raise KeyboardInterrupt from None
        return res, st
    read, measured = outputs.pop(READ, None), outputs.pop(MEASURED, None)
    res = StepResult(step, "done", time.monotonic() - t0, outputs=outputs)
    fp = before if step == "ingest" else fingerprint(cfg, month, step, read)
    if step != "ingest" and read is None and fp != before:
        # Another month's run changed what this step reads while it ran: which version it
        # read is unknown, so it is not recorded as done on either; the next run redoes it.
        res.error = "inputs changed while it ran (another month was published); the next run redoes it"
        fp = None
    st = S.record(cfg, month, res, fp, read, measured)
    if step in SHARED_STEPS and fp is not None:
        S.record_shared(cfg, step, fp)
    return res, st


def _one_line(step: str, month: str, exc: Exception, cfg: Config | None = None) -> str:
    """A step's failure as one line: the full-disk message, or the error's first line."""
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
        cleanup(cfg, month)
        st = S.read_state(cfg, month)  # read once; each step hands on the state it recorded
        for step in todo:
            if any(r.status in ("failed", "not run") for r in results):
                results.append(StepResult(step, "not run"))
                continue
            if progress is not None:
                progress.update(overall, description=f"run {month}: {step}")
            res, st = _run_step(cfg, month, REGISTRY[step], step in forced, progress, ctx, st)
            results.append(res)
            if progress is not None and res.status == "failed":  # said as failed, never "done (n/n)"
                progress.update(overall, description=f"run {month}: failed at {step}")
            elif progress is not None:
                progress.advance(overall)
    return summary(cfg, month, results, st)


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

    S.record_collector(cfg, month, collector, res)
    if res["error"]:
        raise StepFailed(res["error"])
    return outputs


def finish_ingest(cfg: Config, month: str) -> StepResult:
    """After every collector's task: record the ingest step as a whole (the DAG's join)."""
    cols = S.read_state(cfg, month)["steps"].get("ingest", {}).get("collectors", {})
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
            "routes": str(layout.routes_dir(data_dir(cfg), month)), "coverage": cov.to_dict()})
        fp = fingerprint(cfg, month, "ingest")

    def change(st):
        rec = st["steps"].setdefault("ingest", {})
        rec.update({"status": res.status, "error": res.error, "outputs": S.relative(cfg, res.outputs),
                    "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "fingerprint": fp})
    S.update_state(cfg, month, change)
    return res


# --- what a month has ---------------------------------------------------------------------

def summary(cfg: Config, month: str, results: list[StepResult] | None = None, st: dict | None = None) -> dict:
    """Files, entries, pairs, the non-congruent fraction and where each output is, read
    from the data dir itself (so a skipped step reports the same as a fresh one); `st`: the
    month's state as the run last wrote it (read here if None)."""
    root = data_dir(cfg)
    rows = list(manifest.read(root, month).values())
    ok = [r for r in rows if r["status"] == "ok"]
    st = S.read_state(cfg, month) if st is None else st
    cov = (st["steps"].get("ingest", {}).get("outputs") or {}).get("coverage")
    t = published.read(root, "month_summary", month)
    ms = t.to_pylist()[0] if t.num_rows else None
    steps = {name: {k: v for k, v in rec.items() if k in ("status", "at", "error", "seconds", "collectors")}
             for name, rec in st["steps"].items()}
    if results is None:  # `status`: a completion on inputs another run has changed since is stale
        for name, why in S.stale(cfg, month, st).items():
            steps[name].update(status="stale", error=f"{why}; the next run redoes it")
    for r in results or []:
        steps[r.step] = {**steps.get(r.step, {}), "status": r.status, "error": r.error,
                         "seconds": round(r.seconds, 1)}
    steps = {k: steps[k] for k in sorted(steps, key=lambda k: STEPS.index(k) if k in STEPS else 99)}
    outputs = {}
    for name in STEPS:
        outputs.update({k: v for k, v in st["steps"].get(name, {}).get("outputs", {}).items() if k != "coverage"})
    # Where each output is now (recorded relative to the data dir), wherever this runs.
    outputs = {**S.absolute(cfg, outputs), "state": str(S.state_path(cfg, month))}
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
