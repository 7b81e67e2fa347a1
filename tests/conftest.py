"""Fixtures shared by the suite: one real Spark session, the real 2026-07 pair ingested once,
and the months computed once per session (tests/support/computed.py), each read only.

Markers are written on the tests, never guessed: `spark` (a Spark session, spark-submit or a
standalone cluster), `kernel` (network namespaces, mounts, `ip mptcp` on the real kernel),
`browser` (headless Chromium), `slow` (over a second on a 2-core machine: a real month end to
end, or a fixture that computes one). The fast loop,

    pytest -m "not spark and not kernel and not browser and not slow"

imports no pyspark and starts no browser (tests/test_suite.py checks it).
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
from dataclasses import replace

import pytest

from tests.support import computed, jvm, shared
from tests.support.data import RV2_2026

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
# A suite started in the background by a non-interactive shell (`bash .ci/run &`) inherits
# SIGINT ignored, and so would every command it starts: the Ctrl-C tests would then send a
# signal nobody hears. A terminal's foreground process has it at its default; so do the
# suite's children (a caught signal is reset to the default in an exec'd child).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
pytest_plugins = ["tests.support.fastloop"]
# No test reaches the real AWS: an S3 client without an endpoint of its own (a test's server)
# gets a loopback port nothing listens on.
os.environ.setdefault("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
# Every JVM the suite starts reads the suite's Spark conf dir: the JIT's first tier only
# (tests/support/jvm.py says why). Set before any test starts one, for every subprocess too.
os.environ["SPARK_CONF_DIR"] = str(jvm.conf_dir())

#: The session's data dirs that tests only read, checked unchanged when the session ends.
_WATCHED: list[computed.Untouched] = []


@pytest.fixture(scope="session")
def spark():
    from bgp_congruency.pipeline import spark_session as sparkmod

    problem = sparkmod.java_problem()
    if problem:
        pytest.fail(problem) if os.environ.get("CI") else pytest.skip(problem)
    conf = dict(jvm.SESSION_CONF)  # the suite's settings, and why: tests/support/jvm.py
    # S3A on the driver's class path (local mode: no copy of the jars), not bound to s3://: a
    # test that reaches its S3 server through this session binds it and sets the endpoint and
    # keys on the running session's Hadoop configuration, then unsets them (tests/test_s3.py).
    from bgp_congruency.pipeline import s3a

    try:
        conf["spark.driver.extraClassPath"] = ":".join(str(j) for j in s3a.jars())
    except Exception:  # no jars: that test fails naming them (make s3a-jars)
        pass
    s = sparkmod.session("local[2]", conf, app="bgp-congruency-tests")
    jvm.check(s)
    yield s
    s.stop()


def fast_backend() -> str:
    """The native decoder: the default and the fastest; it equals bgpdump row for row
    (tests/test_native.py)."""
    return "native"


@pytest.fixture(scope="session")
def postgres():
    """The session's PostgreSQL server (tests/support/servers.py): each test makes its own database."""
    from tests.support import servers

    with servers.postgres_server() as pg:
        yield pg


@pytest.fixture(scope="session")
def s3_server():
    """The session's S3 server on loopback (tests/support/servers.py), with a bucket `lake`."""
    from tests.support import servers

    with servers.s3_server() as srv:
        yield srv


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

    def build(data):
        cfg = config.with_overrides(archive_root=str(ARCHIVE), data_dir=data, days=(30,), times=("14:00",),
                                    backend=fast_backend())
        out = ingest_run.run(cfg, "2026-07")
        assert [r.status for r in out.rows] == ["ok", "ok"], [r.error for r in out.rows]
        return data

    data = _once(tmp_path_factory, "data-2026-07", build)
    _WATCHED.append(computed.Untouched(data))
    return data


# --- the months computed once per session (read only) ------------------------------------


@pytest.fixture(scope="session", autouse=True)
def _shared_folder(tmp_path_factory):
    """The shared folder named for helpers without fixtures (tests/support/month.reference_of)."""
    os.environ[shared.SHARED_ENV] = str(shared.folder(tmp_path_factory.getbasetemp()))
    yield
    os.environ.pop(shared.SHARED_ENV, None)


def _once(tmp_path_factory, name: str, build):
    """`build(folder)` run once for the whole run (tests/support/shared.once), in a folder
    beside its result in the workers' shared base folder."""
    where = shared.folder(tmp_path_factory.getbasetemp()) / f"once-{name}"

    def in_fresh_folder():
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir()
        return build(where)

    return shared.once(where.parent, f"once-{name}", in_fresh_folder)


def _watched(c: computed.Computed) -> computed.Computed:
    _WATCHED.append(computed.Untouched(c.data))
    return c


@pytest.fixture(scope="session")
def sample(tmp_path_factory, ingested_2026) -> computed.Computed:
    """The real sample month through `congruency run` (the demo's): read only."""
    return _watched(_once(tmp_path_factory, "sample", lambda d: computed.build_sample(d, ingested_2026)))


@pytest.fixture(scope="session")
def sample_evaluated(tmp_path_factory, sample) -> computed.Computed:
    """The sample month with the selector's held-out evaluation: read only."""
    return _watched(_once(tmp_path_factory, "sample-evaluated", lambda d: computed.build_evaluated(d, sample)))


@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> computed.Computed:
    """The generated 400-AS month, run and evaluated: read only."""
    return _watched(_once(tmp_path_factory, "generated", computed.build_generated))


@pytest.fixture(scope="session")
def two_months(tmp_path_factory) -> computed.Computed:
    """Two small generated months run in order: read only."""
    return _watched(_once(tmp_path_factory, "two-months", computed.build_two_months))


@pytest.fixture(scope="session")
def hint_month(tmp_path_factory) -> computed.Computed:
    """The path selector's hand-made month: read only."""
    return _watched(_once(tmp_path_factory, "hint-month", computed.build_hint_month))


#: The files that take longest (seconds on the 2-core CI machine, `make test`'s durations),
#: handed to the xdist workers first: whole files go to whichever worker is free, so a long
#: file started last would leave the other worker idle at the end. (`make test` passes
#: --no-loadscope-reorder: xdist would otherwise hand out the files with the most tests first.)
LONGEST_FIRST = ("test_compare", "test_run", "test_sensitivity", "test_engines", "test_backfill", "test_lake_readers",
                 "test_s3", "test_lake", "test_reveal", "test_pybgpstream", "test_ingest", "test_export", "test_selector")


def pytest_collection_modifyitems(config, items):
    """LONGEST_FIRST's files first, each file's tests in their order (a stable sort by file)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda it: rank.get(it.module.__name__.rsplit(".", 1)[-1], len(rank)))


def pytest_configure(config):
    """Each pytest process gets a temp folder of its own (an xdist worker's inside the
    controller's), removed when it ends (pytest_unconfigure, which puts the old one back): what the code under test leaves in the temp folder
    (an s3:// data dir's local folder, common/s3.local_dir, one per bucket the tests make; the
    servers' folders) goes there, not into the machine's /tmp. pytest's own tmp_path folders stay
    where they were (PYTEST_DEBUG_TEMPROOT), kept for a failure's inspection. Short: the
    PostgreSQL server's socket is in it (107 bytes at most)."""
    import tempfile

    base = tempfile.gettempdir()
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", base)
    mine = tempfile.mkdtemp(prefix="cgt-", dir=base)
    os.chmod(mine, 0o711)  # the PostgreSQL server's user (nobody) reaches its folder in it
    config.stash[_OWN_TMP] = (mine, os.environ.get("TMPDIR"), tempfile.tempdir)
    os.environ["TMPDIR"] = tempfile.tempdir = mine


def pytest_unconfigure(config):
    import tempfile

    got = config.stash.get(_OWN_TMP, None)
    if got:
        mine, env, before = got
        if env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = env
        tempfile.tempdir = before
        shutil.rmtree(mine, ignore_errors=True)


_OWN_TMP = pytest.StashKey[tuple]()


def pytest_sessionfinish(session, exitstatus):
    """A computed month some test wrote into fails the session, naming the files."""
    touched = {str(w.data): w.changed() for w in _WATCHED}
    touched = {d: f for d, f in touched.items() if f}
    if touched:
        for d, files in touched.items():
            print(f"\nerror: a test wrote into the read-only month {d}: {', '.join(files[:8])}", file=sys.stderr)
        session.exitstatus = 1
