"""A month's recorded state and the fingerprints of step inputs: what `run` reads to skip a
step whose inputs are unchanged and whose outputs are still there, and what `status` shows.

DATA_DIR/_runs/month=M/state.json says, per step, when it last finished and from which
inputs (common/layout.py); DATA_DIR/_runs/shared.json keeps the latest fingerprint of the
steps every month shares. Inputs per step:
- ingest: the selection (collectors, days, times, tolerance, archive roots);
- compare: the manifest's sha256s of the month's ingested files, the method parameters,
  the engine, and the month before's published tables (transitions read them);
- hints, lake, reports: the published tables they read.

Nothing recorded depends on how the data dir was spelled or where the command ran: the
data dir is taken canonical (`data_dir`: absolute, symlinks resolved), a step's outputs are
recorded relative to it (`relative`), and a local archive root enters the ingest fingerprint
canonical too. A month run from another folder, through a symlink or with an absolute path
where a relative one was given skips what is done.

On an s3:// data dir the state files are objects in the bucket, each written whole in one
PUT (a reader sees the old file or the new): every host sees them, so a month started on
one host is resumed on another. The lock around a read-modify-write is the host's
(common/locks.py): across hosts, one run of a month at a time is the scheduler's to keep.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from bgp_congruency.common import atomic, layout, routes, s3
from bgp_congruency.common.config import Config
from bgp_congruency.common.errors import CongruencyError
from bgp_congruency.common.locks import month_lock
from bgp_congruency.common.months import previous_month
from bgp_congruency.common.tables import MONTH_TABLES
from bgp_congruency.ingest import catalogue, manifest
from bgp_congruency.ingest.run import canonical_root
from bgp_congruency.lake.published import listing
from bgp_congruency.pipeline import job


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

def data_dir(cfg: Config) -> Path | str:
    """The data dir, canonical: absolute, symlinks resolved (a DAG's absolute path and a
    person's relative one, or a link to it, are one data dir); an s3:// one as its URL."""
    if s3.is_s3(cfg.data_dir):
        return layout.home(cfg.data_dir)
    return layout.local(cfg.data_dir, "the monthly run").resolve()


def state_path(cfg: Config, month: str) -> Path | str:
    return layout.state_file(data_dir(cfg), month)


def relative(cfg: Config, outputs: dict) -> dict:
    """A step's outputs as recorded: each path under the data dir relative to it."""
    root = data_dir(cfg)
    out = {}
    for k, v in outputs.items():
        if isinstance(v, str) and s3.is_s3(root) and v.startswith(f"{root}/"):
            v = v[len(root) + 1:]
        elif isinstance(v, str) and not layout.is_cluster(v) and not s3.is_s3(root):
            p = Path(v).resolve()
            v = str(p.relative_to(root)) if p.is_relative_to(root) else str(p)
        out[k] = v
    return out


def absolute(cfg: Config, outputs: dict) -> dict:
    """Recorded outputs as paths of the data dir where it is now (relative ones under it;
    absolute ones, from earlier versions, as they are)."""
    root = data_dir(cfg)
    return {k: (f"{root}/{v}" if s3.is_s3(root) else str(root / v))
            if isinstance(v, str) and not layout.is_cluster(v) and not os.path.isabs(v) else v
            for k, v in outputs.items()}


def _read_json(p) -> dict | None:
    """A state file's contents, local or in the bucket; None when there is none."""
    if s3.is_s3(p):
        bucket = s3.Bucket(p)
        try:
            return json.loads(bucket.read_text(p)) if bucket.exists(p) else None
        except OSError as exc:
            raise StepFailed(f"{p}: cannot read it at {s3.access(p).where()} ({s3.why(exc)})") from None
    try:
        return json.loads(Path(p).read_text())
    except FileNotFoundError:
        return None


def _write_json(p, obj: dict) -> None:
    """Whole or not at all: a rename on local disk, one PUT in a bucket."""
    text = json.dumps(obj, indent=1, sort_keys=True, default=str)
    if not s3.is_s3(p):
        atomic.write_text(p, text)
        return
    try:
        s3.Bucket(p).write_text(p, text)
    except OSError as exc:
        raise StepFailed(f"{p}: cannot write it at {s3.access(p).where()} ({s3.why(exc)})") from None


def exists(p) -> bool:
    """Whether a recorded output (a file or folder, local or in the bucket) is there."""
    return s3.Bucket(p).exists(p) if s3.is_s3(p) else os.path.exists(p)


def has_state(cfg: Config, month: str) -> bool:
    """The month's state, or a DAG ingest task's outcome before its join wrote the state."""
    return exists(state_path(cfg, month)) or bool(_collector_files(cfg, month))


def _collector_files(cfg: Config, month: str) -> dict[str, Path | str]:
    """collector -> its ingest outcome's file (ingest_collector's), for those there."""
    folder = str(state_path(cfg, month)).rsplit("/", 1)[0]
    if s3.is_s3(folder):
        try:
            names = s3.Bucket(folder).children(folder)
        except OSError as exc:
            raise StepFailed(f"{folder}: cannot list it at {s3.access(folder).where()} ({s3.why(exc)})") from None
    else:
        names = os.listdir(folder) if os.path.isdir(folder) else []
    pre, post = "ingest.collector=", ".json"
    return {n[len(pre):-len(post)]: layout.state_file(data_dir(cfg), month, n[len(pre):-len(post)])
            for n in sorted(names) if n.startswith(pre) and n.endswith(post)}


def read_state(cfg: Config, month: str) -> dict:
    """The month's state, with the DAG's per-collector ingest outcomes (each its own file, as its
    task may run on another host: none rewrites another's) in steps.ingest.collectors."""
    st = _read_json(state_path(cfg, month)) or {"month": month, "steps": {}}
    for c, p in _collector_files(cfg, month).items():
        got = _read_json(p)
        if got is not None:
            st["steps"].setdefault("ingest", {}).setdefault("collectors", {})[c] = got
    return st


def record_collector(cfg: Config, month: str, collector: str, res: dict) -> None:
    """One collector's ingest outcome (the DAG's mapped task), written whole in its own file."""
    _write_json(layout.state_file(data_dir(cfg), month, collector), res)


def update_state(cfg: Config, month: str, change: Callable[[dict], None]) -> dict:
    """Read-modify-write of the state file, atomic and safe for concurrent tasks; returns
    the state as written."""
    with month_lock(data_dir(cfg), month, part="state", wait_s=300):
        st = read_state(cfg, month)
        change(st)
        _write_json(state_path(cfg, month), st)
    return st


def record(cfg: Config, month: str, res: StepResult, fingerprint: str | None, read: dict | None = None,
           measured: dict | None = None) -> dict:
    """A step's outcome in the month's state (outputs relative to the data dir); returns the state."""
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")

    def change(st):
        st["steps"][res.step] = {  # a whole-month ingest replaces the DAG's per-collector records
            "status": res.status, "at": now, "seconds": round(res.seconds, 1), "error": res.error,
            "outputs": relative(cfg, res.outputs), "fingerprint": fingerprint if res.status == "done" else None,
            **({READ: read} if read is not None and res.status == "done" else {}),
            **({"measured": measured} if measured and res.status == "done" else {})}
    with month_lock(data_dir(cfg), month, part="state", wait_s=300):  # re-entrant: update_state's own
        st = update_state(cfg, month, change)
        if res.step == "ingest":
            for p in _collector_files(cfg, month).values():
                if s3.is_s3(p):
                    try:
                        s3.Bucket(p).delete(p)
                    except OSError as exc:
                        raise StepFailed(f"{p}: cannot delete it at {s3.access(p).where()} ({s3.why(exc)})") from None
                else:
                    Path(p).unlink(missing_ok=True)
    return st


def stale(cfg: Config, month: str, st: dict) -> dict[str, str]:
    """Steps recorded done whose inputs from other months' runs changed since: the compare
    whose month before was re-published after it read it, a step whose inputs changed while
    it ran. (The rest of a fingerprint, the run's own selection and method, is the run's.)"""
    out = {}
    for name, rec in st["steps"].items():
        if rec.get("status") != "done":
            continue
        if name != "ingest" and rec.get("fingerprint") is None and "collectors" not in rec:
            out[name] = rec.get("error") or "recorded without its inputs"
        prev = (rec.get(READ) or {}).get("previous")
        if name == "compare" and prev is not None:
            now = tables_listing(data_dir(cfg), job.PREVIOUS_READ, [previous_month(month)])
            if [list(f) for f in now] != [list(f) for f in prev]:
                out[name] = f"{previous_month(month)} was published after this compare read it"
    return out


# --- fingerprints ---------------------------------------------------------------------

def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def tables_listing(root: Path, tables=MONTH_TABLES, months: list[str] | None = None) -> list:
    """Every published file of these tables (and months), as lake.published.listing gives them."""
    return listing(root, tables, months)


def engine(cfg: Config) -> str:
    """The engine the compare job will use (a named Spark cluster implies Spark)."""
    return job.effective_engine(cfg)


def manifest_ok(cfg: Config, month: str) -> list[dict]:
    """The month's manifest rows of snapshots ingested `ok`."""
    return [r for r in manifest.read(data_dir(cfg), month).values() if r["status"] == "ok"]


def _selection(cfg: Config, month: str) -> dict:
    cat = catalogue.load(cfg.catalogue)
    cols = {n: [cat[n].active_from, cat[n].active_until, cat[n].evidence_from, cat[n].path, cat[n].legacy_paths]
            for n in catalogue.expand(cfg.collectors, cfg.catalogue)}
    return {"collectors": cols, "days": list(cfg.days), "times": list(cfg.times),
            "tolerance_minutes": cfg.tolerance_minutes, "archive_root": canonical_root(cfg.archive_root),
            "archive_roots": {k: canonical_root(v) for k, v in sorted(cfg.archive_roots.items())},
            "bgpstream_csv": canonical_root(cfg.bgpstream_csv)}


#: The key of a step body's outputs that carries what it read of inputs other runs can
#: change (the compare: the month before's files it linked); it replaces the fingerprint's
#: own listing of them, so a step is recorded on exactly the inputs it saw.
READ = "_read"
#: The key of a step body's outputs that carries what it measured of itself (the compare:
#: its staging's peak bytes), recorded beside its outputs as `measured`: what
#: runner/plan.py learns from.
MEASURED = "_measured"


def fingerprint(cfg: Config, month: str, step: str, read: dict | None = None) -> str:
    root = data_dir(cfg)
    if step == "ingest":
        return _digest(_selection(cfg, month))
    if step == "compare":
        files = sorted((r["slot"], r["sha256"], Path(r["output"]).name) for r in manifest_ok(cfg, month))
        prev = (read or {}).get("previous")
        if prev is None:
            prev = tables_listing(root, job.PREVIOUS_READ, [previous_month(month)])
        return _digest({"files": files, "method": repr(cfg.method), "relationships": repr(cfg.relationships),
                        "engine": engine(cfg),
                        "previous": [list(f) for f in prev]})
    if step == "sensitivity":
        return _digest({"on": cfg.sensitivity, "engine": engine(cfg),
                        "tables": tables_listing(root, ("month_summary", "provenance"), [month])})
    if step == "hints":  # what the compare published with the month; not the hints this step may build
        listing_ = tables_listing(root, tuple(t for t in MONTH_TABLES if t != "hints"), months=[month])
        if cfg.source.asn is not None:  # the site's own advice in the export follows its [source]
            return _digest({"tables": listing_, "tunnels_export": cfg.tunnels_export, "source": repr(cfg.source)})
        return _digest(listing_ if cfg.tunnels_export else {"tables": listing_, "tunnels_export": False})
    if step == "lake":
        return _digest(tables_listing(root, MONTH_TABLES))
    if step == "reports":
        return _digest({"tables": tables_listing(root, MONTH_TABLES)})
    raise KeyError(step)


#: Steps whose work is shared by every month (the catalog's upkeep, the trend report): their
#: inputs are every month's tables, so a later month's run changes them. The latest
#: fingerprint any month recorded is kept in DATA_DIR/_runs/shared.json: a re-run of an
#: earlier month skips them when that is still current (a backfill's re-run skips everything).
SHARED_STEPS = ("lake", "reports")


def _shared_path(cfg: Config) -> Path | str:
    return layout.runs_file(data_dir(cfg), "shared.json")


def _shared(cfg: Config) -> dict:
    try:
        return _read_json(_shared_path(cfg)) or {}
    except ValueError:
        return {}


def record_shared(cfg: Config, step: str, fp: str) -> None:
    with month_lock(data_dir(cfg), "shared", part="state", wait_s=300):
        st = _shared(cfg)
        st[step] = fp
        _write_json(_shared_path(cfg), st)


def would_run(cfg: Config, month: str, step: str, force: bool = False) -> bool:
    """Whether `run` would run the month's step: forced, or its recorded completion no longer
    stands (the check runner/month._run_step makes)."""
    rec = read_state(cfg, month)["steps"].get(step, {})
    return force or not valid(cfg, month, step, rec, fingerprint(cfg, month, step))


def valid(cfg: Config, month: str, step: str, rec: dict, fp: str) -> bool:
    """A recorded completion still stands: recorded on inputs whose fingerprint is `fp` (the
    inputs now), and its outputs still there."""
    if rec.get("status") != "done":
        return False
    if rec.get("fingerprint") != fp and not (step in SHARED_STEPS and _shared(cfg).get(step) == fp):
        return False
    outs = [v for v in absolute(cfg, rec.get("outputs", {})).values() if isinstance(v, str)]
    if step == "ingest":
        root = data_dir(cfg)
        # Each dump in its collector's routes, whatever path an earlier version recorded.
        rows = manifest_ok(cfg, month)
        have = {c: {s.source_file for s in routes.current_snapshots(root, month, c)} for c in {r["collector"] for r in rows}}
        return bool(outs) and all(manifest.merged(root, r, have) for r in rows)
    return all(exists(v) for v in outs)
