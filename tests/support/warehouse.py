from __future__ import annotations

import json
from pathlib import Path

from bgp_congruency.cli.main import main as cli
from bgp_congruency.lake import published
from tests.support.month import publish_rows, read_published

MONTHS = ("2026-01", "2026-02", "2026-03", "2026-04", "2026-05", "2026-06")


def build_published(root: Path, months=MONTHS, seed: int = 7, ases: int = 150, vps: int = 24) -> Path:
    """A data dir with `months` of a synthetic archive (growing IPv6 adoption) ingested and compared."""
    from dataclasses import replace

    from bgp_congruency.common.config import load
    from bgp_congruency.synth.generate import generate

    archive, data = root / "archive", root / "data"
    generate(archive, seed=seed, ases=ases, vps=vps, months=months, snapshots_per_month=1,
             min_coverage=MIN_COVERAGE)
    collectors = ",".join(c["name"] for c in json.loads((archive / "SYNTH.json").read_text())["collectors"])
    cfg = load()
    params = replace(cfg.method, min_coverage=MIN_COVERAGE)
    for month in months:
        assert cli(["ingest", "--month", month, "--days", "1", "--collectors", collectors,
                    "--archive-root", str(archive), "--data-dir", str(data)]) == 0
        publish_reference(data, month, params)
    return data


def published_multi_month(tmp_path_factory) -> Path:
    """Built once per session, shared by test_warehouse and test_reports."""
    if "multi" not in _BUILT:
        _BUILT["multi"] = build_published(tmp_path_factory.mktemp("multi-month"))
    return _BUILT["multi"]


MIN_COVERAGE = 0.5


_BUILT: dict[str, Path] = {}


def publish_reference(data: Path, month: str, params) -> dict[str, list[dict]]:
    """The reference's tables of `month` from its ingested entries (each dump decoded again:
    tests.support.month.entry_rows), published as the job publishes them
    (tests.support.month.publish_rows)."""
    from bgp_congruency.common.months import previous_month
    from bgp_congruency.congruency import reference
    from tests.support.month import entry_rows

    out = reference.compute_month(entry_rows(data, month), month, params)
    prev = previous_month(month)
    if prev in published.months(data):
        before = {t: read_published(data, t, prev).to_pylist() for t in ("pairs", "vps", "paths")}
        out["transitions"] = reference.transitions(month, out["pairs"], before["pairs"], before["vps"], before["paths"])
    else:
        out["transitions"] = []
    publish_rows(data, month, out)
    return out
