"""The fast loop checks itself: a session selected with exactly FAST (`make check`, `make
fast`, the README's loop) must import no pyspark and start no browser, or it fails naming
which. A test that needs either and is not marked so is caught the first time the loop runs
it (tests/test_suite.py shows the check failing on such a test)."""
from __future__ import annotations

import sys

FAST = "not spark and not kernel and not browser and not slow"


def pytest_sessionfinish(session, exitstatus):
    expr = " ".join((session.config.getoption("markexpr") or "").split())
    if expr != FAST:
        return
    from tests.support import chromium

    problems = []
    if "pyspark" in sys.modules:
        problems.append("pyspark was imported (mark the test that needs Spark `spark`)")
    if chromium.STARTED:
        problems.append(f"Chromium was started {chromium.STARTED} time(s) (mark the test `browser`)")
    for p in problems:
        print(f"\nerror: the fast loop: {p}", file=sys.stderr)
    if problems:
        session.exitstatus = 1
