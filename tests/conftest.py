"""Fixtures shared by the suite (a real Spark session, the real 2026-07 pair ingested once)
and the markers that make the fast loop: a test is marked from what it uses, so

    pytest -m "not spark and not kernel and not browser"

runs everything that needs no JVM, no network namespaces or mounts and no Chromium, and
adding `and not slow` (tests marked by hand that take over a second: a real month end to
end, and every test using a fixture that runs months, _SLOW_FIXTURES) leaves the loop of
under two minutes a change is checked with first."""
from __future__ import annotations

import inspect
import os
import sys
from dataclasses import replace

import pytest

from tests.support.data import RV2_2026

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    from bgp_congruency.pipeline import spark_session as sparkmod

    problem = sparkmod.java_problem()
    if problem:
        pytest.fail(problem) if os.environ.get("CI") else pytest.skip(problem)
    s = sparkmod.session("local[2]", {"spark.sql.shuffle.partitions": "4"}, app="bgp-congruency-tests")
    yield s
    s.stop()


def fast_backend() -> str:
    """The native decoder: the default and the fastest; it equals bgpdump row for row
    (tests/test_native.py)."""
    return "native"


@pytest.fixture(scope="session")
def config():
    from bgp_congruency.common.config import load

    cfg = load()
    return replace(cfg, method=replace(cfg.method, min_coverage=0.0))


@pytest.fixture(scope="session")
def ingested_2026(tmp_path_factory, config):
    """A data dir holding the real 2026-07-30 14:00 route-views2 + route-views6 RIB entries."""
    if not RV2_2026.is_file():
        pytest.skip("shared data not present")
    from bgp_congruency.ingest import run as ingest_run
    from tests.support.data import ARCHIVE

    data = tmp_path_factory.mktemp("data-2026-07")
    cfg = config.with_overrides(archive_root=str(ARCHIVE), data_dir=data, days=(30,), times=("14:00",),
                                backend=fast_backend())
    out = ingest_run.run(cfg, "2026-07")
    assert [r.status for r in out.rows] == ["ok", "ok"], [r.error for r in out.rows]
    return data


#: marker -> what in a test's source or fixtures means it needs that part.
_USES = {
    "spark": ("spark", "SparkEngine", "engine=\"spark\"", "--engine\", \"spark", "spark-submit", "cluster"),
    "kernel": ("unshare", "netns", "ip mptcp", "namespace("),
    "browser": ("Chromium(",),
}


#: Fixtures that run months end to end (tests/test_backfill.py's multi-month backfill, 20 s;
#: tests/test_run.py's real month, 8 s): a test using one is `slow`, whichever test runs it first.
_SLOW_FIXTURES = {"backfill", "reference"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        fn = getattr(item, "function", None)
        try:
            src = inspect.getsource(fn) if fn else ""
        except (OSError, TypeError):
            src = ""
        names = set(getattr(item, "fixturenames", ()))
        for marker, needles in _USES.items():
            if item.get_closest_marker(marker) is None and (marker in names or any(n in src for n in needles)):
                item.add_marker(marker)
        if names & _SLOW_FIXTURES and item.get_closest_marker("slow") is None:
            item.add_marker("slow")
