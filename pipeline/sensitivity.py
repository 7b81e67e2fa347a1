"""`congruency sensitivity`: how far the month's headline figures move under each open
choice of the method (METHOD.md "Sensitivity"), one choice at a time.

Each variant is a MethodParams value: the month's own parameters (read from its published
provenance, else the config's) with one field changed. The month's entries are read once
and kept by the engine (`pin`); each distinct parameter set is computed once on them, and
its month_summary row becomes a row of the `sensitivity` table, published like the other
tables (staged, then committed to the catalog under the month's lock).
"""
from __future__ import annotations

import json
import time
from dataclasses import replace

from bgp_congruency.common import layout
from bgp_congruency.common.config import Config
from bgp_congruency.common.errors import BadInput
from bgp_congruency.common.locks import month_lock
from bgp_congruency.common.params import REPRESENTATIVE, MethodParams
from bgp_congruency.common.tables import SENSITIVITY
from bgp_congruency.lake import published
from bgp_congruency.pipeline import job
from bgp_congruency.pipeline import steps as S

#: choice -> variant -> the change it makes to the month's parameters.
CHOICES: dict[str, dict[str, dict]] = {
    "min_coverage": {v: {"min_coverage": float(v)} for v in ("0.5", "0.8", "0.9", "0.95")},
    "first_as_rule": {"on": {"first_as_rule": True}, "off": {"first_as_rule": False}},
    "reserved_asns": {"dropped": {"reserved_asns": MethodParams().reserved_asns}, "kept": {"reserved_asns": ()}},
    "grouping": {"grouped": {"groups": "base"}, "per_collector": {"groups": {}}},
    "representative": {v: {"representative": v} for v in REPRESENTATIVE},
    "comparison": {v: {"comparison": v} for v in ("representative", "any", "share")},
    "snapshots": {"all": {"snapshots": "all"}, "first": {"snapshots": "first"}},
    "as_set": {"dropped": {"as_set": "dropped"}, "hop": {"as_set": "hop"}},
    "destination": {"origin": {"destination": "origin"}, "prefix": {"destination": "prefix"}},
}


class SensitivityError(BadInput):
    """A bad --variants name or a month without published results; one line."""


def names() -> list[str]:
    """Every `choice=variant` name, in table order."""
    return [f"{c}={v}" for c, vs in CHOICES.items() for v in vs]


def month_params(root, month: str, fallback: MethodParams) -> MethodParams:
    """The parameters the month was published with (its provenance row), else `fallback`."""
    if layout.is_cluster(root):
        return fallback
    rows = published.read(root, "provenance", month).to_pylist()
    if not rows:
        return fallback
    p = json.loads(rows[0]["method_params"])
    p.update(min_coverage=float(p["min_coverage"]), reserved_asns=tuple(tuple(r) for r in p["reserved_asns"]),
             groups=dict(p["groups"]))
    # a month published before a field existed was computed with its default
    return MethodParams(**{k: v for k, v in p.items() if k in MethodParams.__dataclass_fields__})


def variants(base: MethodParams, wanted: list[str] | None = None) -> list[tuple[str, str, MethodParams]]:
    """(choice, variant, params) for each wanted `choice=variant` (all by default); a variant
    equal to `base` is named 'default'."""
    out = []
    known = names()
    for name in wanted or known:
        if name not in known and name.split("=")[0] not in CHOICES:
            raise SensitivityError(f"--variants: unknown variant {name!r} (known: {', '.join(known)}; "
                                   f"or a choice alone: {', '.join(CHOICES)})")
        choice, _, variant = name.partition("=")
        for v in ([variant] if variant else list(CHOICES[choice])):
            change = dict(CHOICES[choice][v])
            if change.get("groups") == "base":
                change["groups"] = dict(base.groups)
            p = replace(base, **change)
            out.append((choice, "default" if p == base else v, p))
    return out


def _by_cleaning(params: list[MethodParams], engine) -> list[MethodParams]:
    """The distinct parameter sets in an order that lets the engine reuse the most: by the
    rendered SQL of each step in turn (steps.MONTH_STEPS, each text numbered as first seen),
    so sets whose partition steps render the same come together (each cleaning computed
    once; on Spark, whose per_path also chooses the representative paths, those sets share
    `paths` too, and the later steps each kept run computes alike: steps.kept_steps). Every
    variant of a month with VP groups cleans 7 ways on DuckDB: its own, and one for each of
    first_as_rule, reserved_asns, grouping, snapshots, as_set and destination (in table
    order, 8 cleanings: the representative variants follow the grouping's). Spark's per_path
    also ranks the paths for the representative, so its 3 other representatives clean again:
    10."""
    distinct = list({repr(p): p for p in params}.values())
    texts = {repr(p): [S.render(s, engine.name, p, engine.plan) for s in S.MONTH_STEPS] for p in distinct}
    seen: list[dict[str, int]] = [{} for _ in S.MONTH_STEPS]
    key = {r: tuple(seen[i].setdefault(t, len(seen[i])) for i, t in enumerate(ts)) for r, ts in texts.items()}
    return sorted(distinct, key=lambda p: key[repr(p)])


def run(cfg: Config, month: str, wanted: list[str] | None = None, progress=None, spark=None) -> dict:
    """Compute every wanted variant of the month and publish the `sensitivity` table
    (on `spark`, a session of the caller's, when given)."""
    root = cfg.data_dir if isinstance(cfg.data_dir, str) else str(cfg.data_dir.resolve())
    try:
        published.require(root, month)
    except published.NoResults as exc:
        raise SensitivityError(str(exc)) from None
    base = month_params(root, month, cfg.method)
    todo = variants(base, wanted)
    t0 = time.perf_counter()
    engine = job.open_engine(cfg, spark)
    store = staged = None
    try:
        with month_lock(cfg.data_dir, month):
            store = engine.store(root)
            src = store.month("routes", month)
            staged = store.staging(month)
            engine.open(store, src, staged)
            k = job.partitions(engine, cfg, src)
            engine.pin()
            done: dict[str, dict] = {}
            task = progress.add_task(f"sensitivity {month}", total=len(todo)) if progress is not None else None
            for i, p in enumerate(_by_cleaning([p for _c, _v, p in todo], engine)):
                out = f"{staged}/_v{i}"
                engine.run(p, out, None, lambda name: None, keep=True, partitions=k)
                done[repr(p)] = engine.summary(out)  # staged/_v*: removed with the staging folder
                if task is not None:
                    progress.advance(task, sum(repr(q) == repr(p) for _c, _v, q in todo))
            rows = [{"choice": choice, "variant": variant, **{k: v for k, v in done[repr(p)].items() if k != "month"}}
                    for choice, variant, p in todo]
            engine.write_rows(staged, "sensitivity", rows, SENSITIVITY)
            [path] = store.publish(staged, ["sensitivity"], month)
            staged = None
    finally:
        if staged is not None and store is not None and store.exists(staged):
            store.delete(staged)
        engine.close()

    published_row = published.read(root, "month_summary", month).to_pylist()[0] \
        if not layout.is_cluster(root) else None
    return {"month": month, "path": path, "variants": len(rows), "computed": len(done),
            "cleanings": engine.computed["per_path"], "steps": dict(engine.computed), "published": published_row,
            "seconds": round(time.perf_counter() - t0, 2), "rows": rows}
