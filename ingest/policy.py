"""Whether a month's ingest is complete enough to compare: the documented coverage policy.

A backfill across every collector always has some snapshot missing somewhere; failing the
whole month for one of 40 collectors would leave no month at all, and going on silently
would hide it. The policy (Config.min_snapshot_share, min_project_share,
tolerate_failures) is applied to the month's manifest rows of the selection; the result,
with what was missing, is recorded in the month's run state (`congruency status`).
Slots of collectors not active at their time are `inactive` and count nowhere.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Coverage:
    planned: int  # slots of active collectors
    ok: int
    inactive: int
    missing: list[str] = field(default_factory=list)  # slot keys
    failed: list[str] = field(default_factory=list)
    projects: dict[str, dict] = field(default_factory=dict)  # project -> planned, ok, share
    policy: dict = field(default_factory=dict)
    go_on: bool = False
    reason: str = ""

    @property
    def share(self) -> float:
        return self.ok / self.planned if self.planned else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "share": round(self.share, 4)}


def assess(rows: list[dict], *, min_snapshot_share: float = 1.0, min_project_share: float = 1.0,
           tolerate_failures: bool = False) -> Coverage:
    """The coverage of these manifest rows (one per slot) and the policy's decision."""
    cov = Coverage(planned=0, ok=0, inactive=0,
                   policy={"min_snapshot_share": min_snapshot_share, "min_project_share": min_project_share,
                           "tolerate_failures": tolerate_failures})
    for r in sorted(rows, key=lambda r: r["slot"]):
        if r["status"] == "inactive":
            cov.inactive += 1
            continue
        cov.planned += 1
        p = cov.projects.setdefault(r["project"], {"planned": 0, "ok": 0})
        p["planned"] += 1
        if r["status"] == "ok":
            cov.ok += 1
            p["ok"] += 1
        elif r["status"] == "missing":
            cov.missing.append(r["slot"])
        else:
            cov.failed.append(r["slot"])
    for p in cov.projects.values():
        p["share"] = round(p["ok"] / p["planned"], 4)
    short = [n for n, p in sorted(cov.projects.items()) if p["ok"] / p["planned"] < min_project_share]
    if cov.planned == 0:
        cov.reason = "no collector of the selection was active in the month's window"
    elif cov.ok == 0:
        cov.reason = f"none of {cov.planned} planned snapshots is ok"
    elif tolerate_failures:
        cov.go_on, cov.reason = True, "tolerate_failures: at least one snapshot is ok"
    elif cov.share < min_snapshot_share:
        cov.reason = (f"{cov.ok} of {cov.planned} planned snapshots ok ({cov.share:.0%}), "
                      f"below min_snapshot_share {min_snapshot_share:g}")
    elif short:
        p = cov.projects[short[0]]
        cov.reason = (f"{short[0]}: {p['ok']} of {p['planned']} planned snapshots ok ({p['share']:.0%}), "
                      f"below min_project_share {min_project_share:g}")
    else:
        cov.go_on = True
        cov.reason = f"{cov.ok} of {cov.planned} planned snapshots ok"
    return cov


def for_config(rows: list[dict], cfg) -> Coverage:
    return assess(rows, min_snapshot_share=cfg.min_snapshot_share, min_project_share=cfg.min_project_share,
                  tolerate_failures=cfg.tolerate_failures)
