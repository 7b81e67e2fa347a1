"""The catalog in PostgreSQL (`catalog = "postgresql://..."`, for data dirs several hosts
publish to or read): a real server the test starts itself (initdb, pg_ctl) on a Unix socket in
a temp dir, as an unprivileged user; skipped with one line where the binaries are missing.

The analyst's loop of tests/test_lake_readers.py with the reader and the writer in separate
processes: 0 errors, 0 mixed answers, both versions seen."""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.data import needs_data
from tests.test_lake_readers import MONTH, PAIRS, REPUBLISHES, _answer, _env, _finish, _reader

pytestmark = [needs_data, pytest.mark.slow]

BINARIES = ("initdb", "pg_ctl", "postgres")


def _as_user(user: str | None):
    """A preexec that drops to `user` (PostgreSQL refuses to run as root), or None."""
    if user is None:
        return None
    pw = pwd.getpwnam(user)

    def drop():
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    return drop


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server of the test's own on a Unix socket; yields its libpq conninfo."""
    import tempfile

    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        pytest.skip(f"PostgreSQL binaries not installed ({', '.join(missing)}: apt-get install postgresql)")
    # Not under pytest's tmp (0700, root's): the server's user must reach it.
    base = Path(tempfile.mkdtemp(prefix="congruency-pg-"))
    base.chmod(0o755)
    user = "nobody" if os.geteuid() == 0 else None
    if user:
        os.chown(base, pwd.getpwnam(user).pw_uid, -1)
    run = lambda *a: subprocess.run(a, capture_output=True, text=True, timeout=120,  # noqa: E731
                                    preexec_fn=_as_user(user), cwd=base)
    r = run("initdb", "-D", str(base / "data"), "-A", "trust", "-U", "congruency")
    assert r.returncode == 0, r.stderr[-2000:]
    port = "54329"
    r = run("pg_ctl", "-D", str(base / "data"), "-o", f"-k {base} -c listen_addresses= -p {port}", "-l",
            str(base / "log"), "-w", "start")
    assert r.returncode == 0, (r.stderr + (base / "log").read_text())[-2000:]
    try:
        r = subprocess.run(["psql", "-h", str(base), "-p", port, "-U", "congruency", "-d", "postgres", "-c",
                            "CREATE DATABASE lake"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        yield f"host={base} port={port} user=congruency dbname=lake"
    finally:
        run("pg_ctl", "-D", str(base / "data"), "-m", "fast", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)


def test_an_analyst_with_the_catalog_in_postgresql(postgres, ingested_2026, tmp_path):
    data = tmp_path / "data"
    for sub in ("routes", "manifest"):
        shutil.copytree(ingested_2026 / sub / f"month={MONTH}", data / sub / f"month={MONTH}")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'catalog = "postgres:{postgres}"\n')

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
