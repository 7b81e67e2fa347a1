"""Fixtures shared by the suite: a real Spark session and the real 2026-07 pair, ingested once."""
from __future__ import annotations

import os
import sys
from dataclasses import replace

import pytest

from tests.shared import RV2_2026

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    from pipeline import spark_session as sparkmod

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
    from common.config import load

    cfg = load()
    return replace(cfg, method=replace(cfg.method, min_coverage=0.0))


@pytest.fixture(scope="session")
def ingested_2026(tmp_path_factory, config):
    """A data dir holding the real 2026-07-30 14:00 route-views2 + route-views6 RIB entries."""
    if not RV2_2026.is_file():
        pytest.skip("shared data not present")
    from ingest import run as ingest_run
    from tests.shared import ARCHIVE

    data = tmp_path_factory.mktemp("data-2026-07")
    cfg = config.with_overrides(archive_root=str(ARCHIVE), data_dir=data, days=(30,), times=("14:00",),
                                backend=fast_backend())
    out = ingest_run.run(cfg, "2026-07")
    assert [r.status for r in out.rows] == ["ok", "ok"], [r.error for r in out.rows]
    return data
