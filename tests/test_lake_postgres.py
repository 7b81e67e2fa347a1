"""The catalog in PostgreSQL (`catalog = "postgresql://..."`, for data dirs several hosts
publish to or read): the session's real server (tests/support/servers.py), a database of
this test's own.

The analyst's loop of tests/test_lake_readers.py with the reader and the writer in separate
processes: 0 errors, 0 mixed answers, both versions seen."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.support.data import needs_data
from tests.test_lake_readers import MONTH, PAIRS, REPUBLISHES, _answer, _env, _finish, _reader

pytestmark = [needs_data, pytest.mark.slow]

def test_an_analyst_with_the_catalog_in_postgresql(postgres, ingested_2026, tmp_path):
    conninfo = postgres.database("lake")
    data = tmp_path / "data"
    for sub in ("routes", "manifest"):
        shutil.copytree(ingested_2026 / sub / f"month={MONTH}", data / sub / f"month={MONTH}")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'catalog = "postgres:{conninfo}"\n')

    def compare(cov: float) -> None:
        r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "compare", "--month", MONTH, "--data-dir",
                            str(data), "--config", str(cfg), "--min-coverage", str(cov)], capture_output=True,
                           text=True, env=_env(), timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]

    compare(0.0)
    assert not (data / "catalog.sqlite").exists()  # the catalog is the server's
    stop = tmp_path / "stop"
    reader = _reader(data, stop)
    try:
        for i in range(REPUBLISHES):  # each version twice, as on SQLite (tests/test_lake_readers.py)
            compare(0.5 if i % 2 == 0 else 0.0)
    finally:
        got = _finish(reader, stop)
    assert got["n_errors"] == 0 and got["n_mixed"] == 0, got
    assert set(got["seen"]) == {str(n) for n in PAIRS.values()}, got
    assert _answer(data) == PAIRS[0.0]
