"""Readers in other processes while a month is re-published (issue 28): an analyst holding a
`lake.connect` connection open sees every re-publish whole, old or new, never a mix and never
an error; a publish killed before, in or after its commit leaves the old month or the new one,
the next run finishes it, and vacuum leaves no file that no snapshot needs.

The real 2026-07 sample (route-views2 + route-views6), compared with the DuckDB engine; the
two versions are min_coverage 0 (2,167 pairs) and 0.5 (2,159 pairs).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.data import needs_data

pytestmark = [needs_data, pytest.mark.slow]

MONTH = "2026-07"
#: min_coverage -> the month's pairs (tests/test_first_hour.py, `make demo`).
PAIRS = {0.0: 2167, 0.5: 2159}
BOUND_S = 300

#: The analyst's loop: one statement over four tables, on a connection held open (the hints
#: are published in the month's commit: a pair's hint is never missing or of another version).
READER = r"""
import json, sys, time
from pathlib import Path
from bgp_congruency import lake

con = lake.connect(sys.argv[1])
stop = Path(sys.argv[2])
q = ("SELECT (SELECT count(*) FROM pairs WHERE month = '2026-07'), "
     "(SELECT sum(pairs) FROM vps WHERE month = '2026-07'), "
     "(SELECT pairs FROM month_summary WHERE month = '2026-07'), "
     "(SELECT count(*) FROM hints WHERE month = '2026-07')")
seen, mixed, errors, n = {}, [], [], 0
print("ready", flush=True)
deadline = time.monotonic() + float(sys.argv[3])
while not stop.exists() and time.monotonic() < deadline:
    try:
        a, b, c, d = con.execute(q).fetchone()
    except Exception as exc:
        errors.append(str(exc).splitlines()[0])
        continue
    n += 1
    if a == b == c == d:
        seen[a] = seen.get(a, 0) + 1
    else:
        mixed.append([a, b, c, d])
print(json.dumps({"answers": n, "seen": seen, "mixed": mixed[:5], "n_mixed": len(mixed),
                  "errors": errors[:5], "n_errors": len(errors)}))
"""


def _env() -> dict:
    root = str(Path(__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _reader(data: Path, stop: Path, limit_s: float = BOUND_S) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", READER, str(data), str(stop), str(limit_s)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=_env())
    assert p.stdout.readline().strip() == "ready", p.stderr.read()
    return p


def _finish(p: subprocess.Popen, stop: Path) -> dict:
    stop.touch()
    out, err = p.communicate(timeout=BOUND_S)
    assert p.returncode == 0, err[-2000:]
    return json.loads(out)


@pytest.fixture
def month(ingested_2026, config, tmp_path):
    """The sample month compared once (min_coverage 0) in a data dir of the test's own."""
    from bgp_congruency.pipeline import job

    data = tmp_path / "data"
    for sub in ("rib_entries", "manifest"):
        shutil.copytree(ingested_2026 / sub / f"month={MONTH}", data / sub / f"month={MONTH}")
    cfg = config.with_overrides(data_dir=data, engine="duckdb")
    [res] = job.compare_months(cfg, [MONTH])
    assert res.error is None and res.summary["pairs"] == PAIRS[0.0], res.error
    return cfg


def _with_coverage(cfg, cov: float):
    return replace(cfg, method=replace(cfg.method, min_coverage=cov))


def test_an_analyst_holding_a_connection_sees_every_republish_whole(month, tmp_path):
    """The issue's loop: 12 re-publishes alternating min_coverage 0.5 and 0 while another
    process queries four tables over one connection (the hints among them): 0 errors, 0 mixed,
    both versions."""
    from bgp_congruency.pipeline import job

    stop = tmp_path / "stop"
    reader = _reader(month.data_dir, stop)
    try:
        for i in range(12):
            cov = 0.5 if i % 2 == 0 else 0.0
            [res] = job.compare_months(_with_coverage(month, cov), [MONTH])
            assert res.error is None and res.summary["pairs"] == PAIRS[cov], res.error
    finally:
        got = _finish(reader, stop)
    assert got["n_errors"] == 0, got["errors"]
    assert got["n_mixed"] == 0, got["mixed"]
    assert set(got["seen"]) == {str(n) for n in PAIRS.values()}, got
    assert got["answers"] > 12


def _compare(data: Path, cov: float, **env) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bgp_congruency.cli.main", "compare", "--month", MONTH, "--data-dir",
                             str(data), "--min-coverage", str(cov)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**_env(), **env}, start_new_session=True)


def _wait(flag: Path, p: subprocess.Popen) -> None:
    deadline = time.monotonic() + BOUND_S
    while not flag.exists():
        if p.poll() is not None:
            pytest.fail(f"the compare ended (rc {p.returncode}) before pausing: {p.communicate()[1][-2000:]}")
        assert time.monotonic() < deadline, "the compare never paused"
        time.sleep(0.05)


def _answer(data: Path) -> int:
    """The four-table answer a new reader gets now (they must agree)."""
    from bgp_congruency import lake

    con = lake.connect(data)
    try:
        a, b, c, d = con.execute(
            f"SELECT (SELECT count(*) FROM pairs WHERE month = '{MONTH}'), (SELECT sum(pairs) FROM vps WHERE "
            f"month = '{MONTH}'), (SELECT pairs FROM month_summary WHERE month = '{MONTH}'), "
            f"(SELECT count(*) FROM hints WHERE month = '{MONTH}')").fetchone()
    finally:
        con.close()
    assert a == b == c == d, (a, b, c, d)
    return a


def test_a_publish_killed_before_in_and_after_its_commit(month, tmp_path):
    """SIGKILL with the tables moved but not committed, in the open transaction, and right
    after the commit, while a reader loops: the old month, the old month, the new month; no
    mix, no error; the next compare finishes; vacuum leaves only the files the kept snapshot
    reads."""
    from bgp_congruency.common import published
    from bgp_congruency.lake import catalog

    data = month.data_dir
    stop = tmp_path / "stop"
    reader = _reader(data, stop)
    try:
        for point, after in (("publish", 0.0), ("commit", 0.0), ("published", 0.5)):
            flag = tmp_path / f"paused-{point}"
            p = _compare(data, 0.5, CONGRUENCY_PAUSE_AT=point, CONGRUENCY_PAUSE_FILE=str(flag))
            _wait(flag, p)
            assert _answer(data) == PAIRS[after]  # paused: nothing committed yet, or (published) committed
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate(timeout=60)
            assert _answer(data) == PAIRS[after], point
            left = catalog.orphans(data, MONTH)
            if point != "published":
                assert left, point  # what the kill left, invisible
            # the next run of the month cleans up and publishes the other version
            cov = 0.0 if after == 0.5 else 0.5
            done = _compare(data, cov)
            out, err = done.communicate(timeout=BOUND_S)
            assert done.returncode == 0, err[-2000:]
            assert _answer(data) == PAIRS[cov] and not any(d.exists() for d in left)
            if cov == 0.5:  # back to the first version for the next kill
                done = _compare(data, 0.0)
                assert done.wait(timeout=BOUND_S) == 0
    finally:
        got = _finish(reader, stop)
    assert got["n_errors"] == 0 and got["n_mixed"] == 0, got
    assert set(got["seen"]) == {str(n) for n in PAIRS.values()}, got
    # vacuum down to the current snapshot: every Parquet file left is one it reads, or a file
    # without rows of the current publish of a table that has none (transitions: no month before)
    import pyarrow.parquet as pq

    catalog.vacuum(data, keep=1, grace_s=0)
    with catalog.opened(data) as con:
        live = {f for t in catalog.tables() for f in catalog.files(con, t)}
    left = {str(f) for t in catalog.tables() for f in (data / t).rglob("*.parquet")}
    assert live and live <= left
    assert all(pq.read_metadata(f).num_rows == 0 and os.path.dirname(f) in catalog.registered_folders(data)
               for f in left - live), left - live
    assert not [d for t in catalog.tables() for d in (data / t).glob("month=*/*") if not any(d.iterdir())]
    assert published.read(data, "pairs", MONTH).num_rows == _answer(data)
