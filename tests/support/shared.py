"""What the session's processes compute once for all of them: under pytest-xdist the first
worker that needs a value builds it under a lock in the workers' shared base folder and the
others read its pickle (written whole, last); a failed build is retried by the next."""
from __future__ import annotations

import fcntl
import os
import pickle
from pathlib import Path

#: The shared folder, for helpers that have no pytest fixture (tests/conftest.py sets it).
SHARED_ENV = "CONGRUENCY_TEST_SHARED"


def folder(basetemp: Path) -> Path:
    """The folder the session's processes share: the workers' base under pytest-xdist."""
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp


def once(root: Path, name: str, build):
    """`build()` once for the session's processes, its value pickled as `root`/`name`.pickle."""
    done = root / f"{name}.pickle"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_file():
            return pickle.loads(done.read_bytes())
        value = build()
        part = done.with_suffix(".part")  # whole or absent: a killed writer leaves no half pickle
        part.write_bytes(pickle.dumps(value))
        os.replace(part, done)
        return value
