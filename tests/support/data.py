"""Where the shared real MRT data lives (../shared/data beside the project), for every test."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the project root (tests/support/data.py)
DATA = Path(os.environ.get("CONGRUENCY_SHARED_DATA", ROOT.parent / "shared" / "data"))
ARCHIVE = DATA / "archive"
FAULTY = DATA / "faulty"
EDGE = DATA / "edge"

RV2_2026 = ARCHIVE / "route-views2/bgpdata/2026.07/RIBS/rib.20260730.1400.bz2"
RV6_2026 = ARCHIVE / "route-views6/bgpdata/2026.07/RIBS/rib.20260730.1400.bz2"
#: Every RIB in the archive (updates files are not RIBs).
ARCHIVE_RIBS = sorted(p for p in ARCHIVE.rglob("*") if p.name.startswith(("rib.", "bview.")))
EDGE_RIBS = sorted(p for p in EDGE.glob("*") if p.is_file())
#: The 13 peer ASes with routes in both 2026-07-30 files (MANIFEST.md of the shared data).
PEERS_IN_BOTH_2026 = {1403, 2497, 2914, 3130, 3257, 6939, 7018, 7660, 20130, 22652, 37100, 49788, 57866}

needs_data = pytest.mark.skipif(not RV2_2026.is_file(), reason=f"shared data not found at {DATA}")


def require_tool(name: str) -> str:
    """The tool's path; a skip on a developer machine, a failure in CI (it must be installed)."""
    path = shutil.which(name)
    if path:
        return path
    if os.environ.get("CI"):
        pytest.fail(f"{name} is not installed but CI must have it (.ci/run installs it)")
    pytest.skip(f"{name} is not installed")
