"""The `congruency` command as a user runs it: a process of its own (its stdout, stderr and exit
code are what a person or a script sees), and what the tests read back from its data dir."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

#: No single command in the suite runs longer (the generated months are small).
BOUND_S = 180
ROOT = Path(__file__).resolve().parents[2]


def environment(**extra) -> dict:
    """The test's environment without pause hooks (common/hooks.py), plus `extra`; the checkout
    on PYTHONPATH, so a command started in another folder imports this code."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("CONGRUENCY_PAUSE")}
    out["PYTHONPATH"] = str(ROOT) + (os.pathsep + out["PYTHONPATH"] if out.get("PYTHONPATH") else "")
    out.update(extra)
    return out


env = environment


def congruency(*args: str, env: dict | None = None, timeout: float = BOUND_S, **kw) -> subprocess.CompletedProcess:
    """`congruency ARGS` in a process of its own (`env`: its environment, else environment());
    its output as text."""
    return subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=env or environment(), **kw)


def start(*args: str, **extra_env) -> subprocess.Popen:
    """`congruency ARGS` started, in a process group of its own (SIGINT/SIGKILL reach all of it)."""
    return subprocess.Popen([sys.executable, "-m", "bgp_congruency.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=environment(**extra_env), start_new_session=True)


def steps(out: str) -> dict:
    """The steps of the last month a `run --json` or `status --json` printed."""
    return json.loads(out.splitlines()[-1])["steps"]


def wait_for(path: Path, proc: subprocess.Popen, limit: float = BOUND_S) -> None:
    """Until `path` exists (a pause hook's flag), or fail when the process ends first."""
    deadline = time.monotonic() + limit
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def rows(data: Path, table: str, month: str) -> list[dict]:
    """A published table's rows of a month, in a canonical order (empty without a catalog)."""
    from bgp_congruency.lake import published

    got = published.read(data, table, month).to_pylist() if (data / "catalog.sqlite").is_file() else []
    return sorted(got, key=lambda r: json.dumps(r, sort_keys=True, default=str))
