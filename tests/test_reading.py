"""Readers see each month whole while it is re-published.

The real 2026-07 month is re-published 24 times, alternating two coverage thresholds (2,167
and 1,803 pairs: the month has two distinguishable versions), while two reader processes
loop over a three-table read through `congruency query` (in-process calls of the command,
as a user's script would make them): pairs' row count, month_summary's `pairs` and the sum
of vps' `pairs` must agree in every answer (a mixed answer has them differ), and no call
may fail. Every loop is bounded and stops by itself.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

from tests.support.data import ARCHIVE, needs_data

pytestmark = needs_data

SQL = ("SELECT (SELECT count(*) FROM pairs WHERE month = '2026-07') AS n, "
       "(SELECT pairs FROM month_summary WHERE month = '2026-07') AS s, "
       "(SELECT sum(pairs) FROM vps WHERE month = '2026-07') AS v")
READER = textwrap.dedent('''
    import io, json, sys, time, contextlib
    from pathlib import Path
    from bgp_congruency.cli.main import main
    data, stop, out = sys.argv[1], Path(sys.argv[2]), open(sys.argv[3], "w")
    deadline = time.monotonic() + 400
    while not stop.exists() and time.monotonic() < deadline:
        buf, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
            rc = main(["query", "--data-dir", data, "--sql", sys.argv[4], "--format", "json"])
        out.write(json.dumps({"rc": rc, "out": buf.getvalue(), "err": err.getvalue()[-500:]}) + "\\n")
        out.flush()
''')


@pytest.mark.slow
def test_readers_see_each_month_whole_through_24_republishes(tmp_path):
    data = tmp_path / "data"
    base = [sys.executable, "-m", "bgp_congruency.cli.main"]
    r = subprocess.run(base + ["run", "--month", "2026-07", "--days", "30", "--times", "14:00", "--archive-root",
                               str(ARCHIVE), "--data-dir", str(data), "--min-coverage", "0"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    stop = tmp_path / "stop"
    readers = [subprocess.Popen([sys.executable, "-c", READER, str(data), str(stop), str(tmp_path / f"r{i}.jsonl"), SQL],
                                stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        time.sleep(2)
        for i in range(24):
            r = subprocess.run(base + ["compare", "--month", "2026-07", "--data-dir", str(data), "--min-coverage",
                                       "0.95" if i % 2 == 0 else "0"], capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, r.stderr[-2000:]
    finally:
        stop.touch()
        for p in readers:
            p.communicate(timeout=120)
    answers, errors = [], []
    for i in range(2):
        for line in (tmp_path / f"r{i}.jsonl").read_text().splitlines():
            rec = json.loads(line)
            if rec["rc"] != 0:
                errors.append(rec["err"])
            else:
                [row] = json.loads(rec["out"])
                answers.append((row["n"], row["s"], int(row["v"])))
    assert errors == [], errors[:3]
    mixed = [a for a in answers if len(set(a)) != 1]
    assert mixed == [], mixed[:5]
    seen = {a[0] for a in answers}
    assert seen == {2167, 1803}, seen  # both versions were read: the reads overlapped the re-publishes
    assert len(answers) >= 40
