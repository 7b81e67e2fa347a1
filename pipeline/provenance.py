"""The `provenance` row of a month: which snapshots, method and code produced its tables.

Built from the month's manifest and the configuration when the compare job stages the
month, and published with its other tables (so it always describes the tables beside it).
An analyst can then tell a `--min-coverage 0` month of 8-pair VPs from a strict one, and a
month missing half its collectors from a whole one.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import asdict
from datetime import datetime, timezone
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from bgp_congruency.common.config import Config

METHOD_MD = Path(__file__).resolve().parents[1] / "congruency" / "METHOD.md"


@lru_cache(maxsize=1)
def project_version() -> str:
    """`git describe --always --dirty` of the checkout the code runs from, else the package's version."""
    root = Path(__file__).resolve().parents[1]
    if (root / ".git").exists():
        try:
            out = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--tags"],
                                 capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                return f"git {out.stdout.strip()}"
        except (OSError, subprocess.SubprocessError):
            pass

    try:
        return version("bgp-congruency")
    except PackageNotFoundError:
        return "unknown"


@lru_cache(maxsize=1)
def method_version() -> str:
    text = METHOD_MD.read_text(encoding="utf-8")
    title = text.splitlines()[0] if text else ""
    v = title[title.rfind("(") + 1:title.rfind(")")] if "(" in title else "?"
    return f"{v} sha256:{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def row(cfg: Config, month: str, engine: str, manifest_rows: list[dict], coverage: dict | None) -> dict:
    """The month's provenance row (PROVENANCE's columns but `month`)."""
    rows = sorted(manifest_rows, key=lambda r: r["slot"])
    ok = [r for r in rows if r["status"] == "ok"]
    params = asdict(cfg.method)
    return {
        "published_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "engine": engine,
        "project_version": project_version(),
        "method_version": method_version(),
        "min_coverage": float(cfg.method.min_coverage),
        "method_params": json.dumps(params, sort_keys=True),
        "collectors": sorted({r["collector"] for r in ok}),
        "snapshots_used": [r["slot"] for r in ok],
        "snapshots_missing": [r["slot"] for r in rows if r["status"] == "missing"],
        "snapshots_failed": [r["slot"] for r in rows if r["status"] == "failed"],
        "snapshots_inactive": sum(r["status"] == "inactive" for r in rows),
        "entries": sum((r["entries_v4"] or 0) + (r["entries_v6"] or 0) for r in ok),
        "input_files": [r["url"] if "://" in (r["url"] or "") else str(Path(r["url"]).resolve()) for r in ok],
        "input_sha256": [r["sha256"] for r in ok],
        "coverage_policy": json.dumps(coverage, sort_keys=True) if coverage is not None else None,
    }
