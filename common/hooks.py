"""Named pause points for crash tests: CONGRUENCY_PAUSE_AT=point stops the process there.

A test sets CONGRUENCY_PAUSE_AT (a point name) and CONGRUENCY_PAUSE_FILE (a path); when the
code reaches that point it writes the file and sleeps (at most CONGRUENCY_PAUSE_S seconds,
default 120) so the test can SIGKILL it at a known place, or let it go on by deleting the
file (a test that needs another process's work done first, however slow the machine). Unset, a point costs one dict
lookup. Points: ingest (a snapshot about to be fetched: ingest/run.py), merge (a bucket range
of a collector's new routes written into its temporary generation, not renamed:
ingest/routes.py), merged (every collector's new generation in place, the manifest not yet
written, the decoded files not yet deleted: ingest/run.py), upload (an s3:// data dir's ingest:
a collector's new generation uploaded but its snapshots.json: ingest/onto_s3.py), compare (the month's tables staged, none published: pipeline/job.py),
partition (one VP partition's tables staged, the next not begun: pipeline/engines/duckdb.py),
mid-partition (a VP partition after the first begun, its first table staged: the same),
publish (between two tables' moves to their publish folders, nothing committed:
pipeline/publish.py), commit (the catalog transaction open, every table registered, not yet
committed: lake/commit.py), published (committed, the staging folder not yet removed:
pipeline/publish.py), report (a page written under its temp name, not yet renamed:
reports/page.py).
"""
from __future__ import annotations

import os
import time
from pathlib import Path


def pause(point: str) -> None:
    if os.environ.get("CONGRUENCY_PAUSE_AT") != point:
        return
    flag = os.environ.get("CONGRUENCY_PAUSE_FILE")
    if flag:
        Path(flag).write_text(f"{os.getpid()} {point}\n")
    deadline = time.monotonic() + float(os.environ.get("CONGRUENCY_PAUSE_S", "120"))
    while time.monotonic() < deadline and (not flag or Path(flag).exists()):  # bounded
        time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
