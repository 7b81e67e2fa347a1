"""Readers in other processes while a month is re-published (issue 28): an analyst holding a
`lake.connect` connection open sees every re-publish whole, old or new, never a mix and never
an error; a publish killed before, in or after its commit leaves the old month or the new one,
the next run finishes it, and vacuum leaves no file that no snapshot needs.

Readers are an analyst's held connection and `congruency query` calls (a new connection each).
The real 2026-07 sample (route-views2 + route-views6), compared with the DuckDB engine; the
two versions are min_coverage 0 (2,167 pairs) and 0.5 (2,159 pairs).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from bgp_congruency.runner.steps import STAGERS
from tests.support.cli import congruency, env, rows
from tests.support.computed import writable
from tests.support.data import needs_data

pytestmark = [needs_data, pytest.mark.slow]

MONTH = "2026-07"
#: min_coverage -> the month's pairs (`make demo` computes the 0.0 one; tests/test_compare.py checks
#: it against the pure-Python reference).
PAIRS = {0.0: 2167, 0.5: 2159}
BOUND_S = 300
#: Re-publishes under the readers: each version twice (the issue's loop ran 12; every
#: re-publish beyond the fourth adds ~12 s on a 2-core machine and no new interleaving).
REPUBLISHES = 4
#: A reader's pause between queries: each still sees every re-publish (one takes seconds) and
#: leaves the machine's second core to the compare.
PAUSE_S = 0.02

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
    time.sleep(float(sys.argv[4]))
print(json.dumps({"answers": n, "seen": seen, "mixed": mixed[:5], "n_mixed": len(mixed),
                  "errors": errors[:5], "n_errors": len(errors)}))
"""


#: A user's script calling `congruency query` in process, a new connection per call (the
#: query command opens the lake pinned to its current snapshot: three tables, one snapshot).
QUERY_READER = r"""
import contextlib, io, json, sys, time
from pathlib import Path
from bgp_congruency.cli.main import main

stop = Path(sys.argv[2])
q = ("SELECT (SELECT count(*) FROM pairs WHERE month = '2026-07') AS a, "
     "(SELECT sum(pairs) FROM vps WHERE month = '2026-07') AS b, "
     "(SELECT pairs FROM month_summary WHERE month = '2026-07') AS c")
seen, mixed, errors, n = {}, [], [], 0
print("ready", flush=True)
deadline = time.monotonic() + float(sys.argv[3])
while not stop.exists() and time.monotonic() < deadline:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["query", "--data-dir", sys.argv[1], "--sql", q, "--format", "json"])
    if rc != 0:
        errors.append(err.getvalue().strip()[-300:])
        continue
    n += 1
    [row] = json.loads(out.getvalue())
    a, b, c = row["a"], int(row["b"]), row["c"]
    if a == b == c:
        seen[a] = seen.get(a, 0) + 1
    else:
        mixed.append([a, b, c])
    time.sleep(float(sys.argv[4]))
print(json.dumps({"answers": n, "seen": seen, "mixed": mixed[:5], "n_mixed": len(mixed),
                  "errors": errors[:5], "n_errors": len(errors)}))
"""


def _env() -> dict:
    root = str(Path(__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _reader(data: Path, stop: Path, limit_s: float = BOUND_S, script: str = READER) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", script, str(data), str(stop), str(limit_s), str(PAUSE_S)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=_env())
    assert p.stdout.readline().strip() == "ready", p.stderr.read()
    return p


def _finish(p: subprocess.Popen, stop: Path) -> dict:
    stop.touch()
    out, err = p.communicate(timeout=BOUND_S)
    assert p.returncode == 0, err[-2000:]
    return json.loads(out)


@pytest.fixture
def month(sample, config, tmp_path):
    """The sample month (min_coverage 0, the session's `congruency run`) in a data dir of the
    test's own."""
    data = writable(sample.data, tmp_path / "data")
    return config.with_overrides(data_dir=data, engine="duckdb")


def _with_coverage(cfg, cov: float):
    return replace(cfg, method=replace(cfg.method, min_coverage=cov))


def test_readers_see_every_republish_whole(month, tmp_path):
    """The issue's loop: 4 re-publishes alternating min_coverage 0.5 and 0 while two other
    processes read: an analyst querying four tables over one connection held open (the hints
    among them), and a script calling `congruency query` in process (a new connection per
    call): 0 errors, 0 mixed, both versions seen by each. Over 60 s: four compares of the real
    month beside two busy readers."""
    _republish_under_readers(month, tmp_path, REPUBLISHES)


def test_readers_see_every_republish_whole_on_s3(ingested_2026, config, s3_server, postgres, tmp_path,
                                                 monkeypatch):
    """The same loop with the data dir on the session's S3 server and the catalog in its
    PostgreSQL (issue 57): each reader sees the month whole through httpfs, old or new. Two
    re-publishes (each version once) after the first publish: each one uploads, then commits."""
    import uuid

    from bgp_congruency.pipeline import job
    from tests.test_s3 import _upload

    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    db = f"readers_{uuid.uuid4().hex[:8]}"
    root = f"s3://lake/{db}"
    _upload(s3_server, ingested_2026, root)  # what an ingest onto S3 writes (tests/test_s3.py)
    cfg = config.with_overrides(data_dir=root, engine="duckdb", catalog=f"postgres:{postgres.database(db)}")
    [res] = job.compare_months(_with_coverage(cfg, 0.0), [MONTH], stagers=STAGERS)  # readers find a month
    assert res.error is None and res.summary["pairs"] == PAIRS[0.0], res.error
    _republish_under_readers(cfg, tmp_path, 2)


def _republish_under_readers(month, tmp_path: Path, times: int) -> None:
    """`times` re-publishes of the month, alternating min_coverage 0.5 and 0, under the two
    readers; each saw both versions, whole, and no error."""
    from bgp_congruency.pipeline import job

    stop = tmp_path / "stop"
    readers = {"held connection": _reader(month.data_dir, stop),
               "congruency query": _reader(month.data_dir, stop, script=QUERY_READER)}
    try:
        for i in range(times):
            cov = 0.5 if i % 2 == 0 else 0.0
            [res] = job.compare_months(_with_coverage(month, cov), [MONTH], stagers=STAGERS)
            assert res.error is None and res.summary["pairs"] == PAIRS[cov], res.error
    finally:
        got = {name: _finish(p, stop) for name, p in readers.items()}
    for name, g in got.items():
        assert g["n_errors"] == 0, (name, g["errors"])
        assert g["n_mixed"] == 0, (name, g["mixed"])
        assert set(g["seen"]) == {str(n) for n in PAIRS.values()}, (name, g)
        assert g["answers"] > times, (name, g)


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
    reads. Each run publishes the version other than the one published, so no run only
    restores a version. Over 60 s: six compares of the real month, each a process of its own."""
    from bgp_congruency.lake import attach, published, upkeep

    data = month.data_dir
    stop = tmp_path / "stop"
    reader = _reader(data, stop)
    try:
        cur = 0.0  # the coverage of the version published (the fixture's)
        for point in ("publish", "commit", "published"):
            flag = tmp_path / f"paused-{point}"
            new = 0.5 if cur == 0.0 else 0.0  # each killed run publishes the other version
            p = _compare(data, new, CONGRUENCY_PAUSE_AT=point, CONGRUENCY_PAUSE_FILE=str(flag))
            _wait(flag, p)
            seen = new if point == "published" else cur
            assert _answer(data) == PAIRS[seen]  # paused: nothing committed yet, or (published) committed
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate(timeout=60)
            assert _answer(data) == PAIRS[seen], point
            left = upkeep.orphans(data, MONTH)
            if point != "published":
                assert left, point  # what the kill left, invisible
            # the next run of the month cleans up and publishes the other version
            cur = 0.5 if seen == 0.0 else 0.0
            done = _compare(data, cur)
            out, err = done.communicate(timeout=BOUND_S)
            assert done.returncode == 0, err[-2000:]
            assert _answer(data) == PAIRS[cur] and not any(d.exists() for d in left)
    finally:
        got = _finish(reader, stop)
    assert got["n_errors"] == 0 and got["n_mixed"] == 0, got
    assert set(got["seen"]) == {str(n) for n in PAIRS.values()}, got
    # vacuum down to the current snapshot: every Parquet file left is one it reads, or a file
    # without rows of the current publish of a table that has none (transitions: no month before)
    import pyarrow.parquet as pq

    upkeep.vacuum(data, keep=1, grace_s=0)
    with attach.opened(data) as con:
        live = {f for t in attach.tables() for f in published.table_files(con, t)}
    left = {str(f) for t in attach.tables() for f in (data / t).rglob("*.parquet")}
    assert live and live <= left
    assert all(pq.read_metadata(f).num_rows == 0 and os.path.dirname(f) in upkeep.registered_folders(data)
               for f in left - live), left - live
    assert not [d for t in attach.tables() for d in (data / t).glob("month=*/*") if not any(d.iterdir())]
    assert published.read(data, "pairs", MONTH).num_rows == _answer(data)


# --- a read-only data dir (a mount, a snapshot, a container volume) ---------------------------

READERS = (
    ("query", "vp_congruency", "--month", "2026-02", "--format", "csv"),
    ("advise", "--from", "{vp}", "--to", "{dest}", "--month", "2026-02", "--json"),
    ("export", "--format", "jsonl", "--from", "{vp}", "--to", "{dest}", "--month", "2026-02"),
    ("report", "--month", "2026-02", "--out", "{out}/month.html"),
    ("report", "--trend", "--out", "{out}/trend.html"),
    ("status", "--month", "2026-02", "--json"),
)


def _readonly(data: Path, *args: str) -> subprocess.CompletedProcess:
    """`congruency ARGS` in a mount namespace where the data dir is a read-only bind mount
    (as an NFS export mounted read-only or a `:ro` volume is: writes fail with EROFS)."""
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    return subprocess.run(["unshare", "--mount", "sh", "-c", script, str(data), sys.executable, "-m", "bgp_congruency.cli.main",
                           *args, "--data-dir", str(data)], capture_output=True, text=True, timeout=BOUND_S,
                          env=env())


@pytest.fixture(scope="module")
def readonly_ok(tmp_path_factory):
    probe = tmp_path_factory.mktemp("probe")
    r = subprocess.run(["unshare", "--mount", "sh", "-c",
                        'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && ! touch "$0/x"', str(probe)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"no mount namespace here (root and unshare needed): {r.stderr.strip()[:200]}")


@pytest.mark.kernel
@pytest.mark.parametrize("args", READERS, ids=lambda a: " ".join(a[:2]))
def test_readers_on_a_read_only_mount(readonly_ok, two_months, tmp_path, args):
    """Each reader answers from a read-only data dir exactly what it answers from the
    writable one (before issue 30: `error: .../_tables.gate.lock: Read-only file system`)."""
    pairs = rows(two_months.data, "pairs", "2026-02")
    vp, dest = str(pairs[0]["vp_asn"]), str(pairs[0]["dest_asn"])
    ro_out, rw_out = tmp_path / "ro", tmp_path / "rw"
    ro_out.mkdir(), rw_out.mkdir()
    fill = lambda out: [a.format(vp=vp, dest=dest, out=out) for a in args]  # noqa: E731
    ro = _readonly(two_months.data, *fill(ro_out))
    assert ro.returncode == 0, ro.stderr
    rw = congruency(*fill(rw_out), "--data-dir", str(two_months.data), env=env())
    assert rw.returncode == 0, rw.stderr
    assert ro.stdout == rw.stdout
    for f in rw_out.iterdir():
        assert (ro_out / f.name).stat().st_size > 0


@pytest.mark.kernel
def test_writer_on_a_read_only_mount_says_so(readonly_ok, two_months):
    r = _readonly(two_months.data, "sensitivity", "--month", "2026-02", "--variants", "min_coverage=0.8")
    assert r.returncode == 1
    (line,) = r.stderr.strip().splitlines()[-1:]
    assert "read-only file system: `congruency sensitivity` writes there" in line, r.stderr
    assert "Traceback" not in r.stderr


# --- a read-only copy of a data dir at another path (issue 46) ----------------------------------

ATLAS = "traceroute/atlas-traceroute-results.jsonl"
#: Every reader, as the command a person types (DATA: the data dir, OUT: a folder outside it),
#: with what it reads on standard input.
RO_READERS = {
    "query": (["query", "vp_congruency", "--month", "2026-07", "--format", "csv"], None),
    "sql": (["sql"], "SELECT month, pairs FROM month_summary;\n"),
    "status": (["status", "--month", "2026-07", "--json"], None),
    "advise": (["advise", "--from", "1403", "--to", "8.8.8.8", "--json"], None),
    "trace": (["trace", "--atlas", "SHARED/" + ATLAS, "--to", "78.46.48.134", "--from", "1403", "--json"], None),
    "export": (["export", "--format", "jsonl", "--month", "2026-07"], None),
    "report": (["report", "--month", "2026-07", "--out", "OUT/month.html"], None),
    "report --trend": (["report", "--trend", "--out", "OUT/trend.html"], None),
}
#: lake.connect from Python, as an analyst's script opens it.
CONNECT = ("from bgp_congruency import lake; import sys; con = lake.connect(sys.argv[1]); "
           "print(con.execute('SELECT count(*), sum(pairs) FROM vps').fetchall(), "
           "con.execute('SELECT count(*) FROM hints').fetchall())")


def _ro_script(src: Path, dst: Path, out: Path) -> str:
    """A shell script run in a mount namespace of its own: `dst` (elsewhere) a read-only bind
    mount of `src`, every reader run on it, each one's output and exit code in `out`."""
    from tests.support.data import DATA

    lines = ['set -u', f'mount --bind "{src}" "{dst}"', f'mount -o remount,bind,ro "{dst}"',
             f'touch "{dst}/x" 2>/dev/null && exit 97']  # it must be read-only
    for name, (args, stdin) in RO_READERS.items():
        cmd = [sys.executable, "-m", "bgp_congruency.cli.main", *args, "--data-dir", str(dst)]
        cmd = [c.replace("SHARED", str(DATA)).replace("OUT", str(out / "ro")) for c in cmd]
        feed = f' < "{out / (name + ".in")}"' if stdin else ""
        lines.append("(" + " ".join(f"'{c}'" for c in cmd) + f'{feed} > "{out}/ro-{name}.out" 2> "{out}/ro-{name}.err"; '
                     f'echo $? > "{out}/ro-{name}.rc") &')  # the readers at once: they only read
    lines.append(f'("{sys.executable}" -c "{CONNECT}" "{dst}" > "{out}/ro-connect.out" 2> "{out}/ro-connect.err"; '
                 f'echo $? > "{out}/ro-connect.rc") &')
    for action in UPKEEP:  # writers: each says read-only (issue 58: "copied or moved?", "readonly database")
        lines.append(f"('{sys.executable}' -m bgp_congruency.cli.main lake {action} --data-dir '{dst}' "
                     f'> /dev/null 2> "{out}/ro-{action}.err"; echo $? > "{out}/ro-{action}.rc") &')
    return "\n".join(lines) + "\n"


#: The catalog's upkeep, which writes: refused on a read-only mount as such.
UPKEEP = ("vacuum", "relocate")


def _every_reader_on_a_read_only_mount(src: Path, tmp_path: Path) -> None:
    """Every reader (RO_READERS, lake.connect, every kept snapshot) on a read-only bind mount
    of `src` at another path (an NFS mount, a container volume, a snapshot) answers exactly
    what it answers on `src`, writing nothing (paths in the answers spelled with the
    original's), and `report --out` writes its page outside the mount. Before issue 46 every
    reader refused with "the catalog of <old path>, not of <new path>"."""
    from tests.support.data import DATA

    dst, out = tmp_path / "mnt" / "copy", tmp_path / "out"
    dst.mkdir(parents=True)
    (out / "ro").mkdir(parents=True)
    (out / "rw").mkdir()
    for name, (_args, stdin) in RO_READERS.items():
        if stdin:
            (out / f"{name}.in").write_text(stdin)
    script = _ro_script(src, dst, out) + (
        f'"{sys.executable}" -c "$(cat {out}/snap.py)" "{dst}" > "{out}/ro-snap.out" 2> "{out}/ro-snap.err"; '
        f'echo $? > "{out}/ro-snap.rc"\nwait\n')
    (out / "snap.py").write_text(EVERY_SNAPSHOT)
    (tmp_path / "ro.sh").write_text(script)
    r = subprocess.run(["unshare", "--mount", "sh", str(tmp_path / "ro.sh")], capture_output=True, text=True,
                       timeout=600, env=env())
    assert r.returncode == 0, r.stderr
    for name, (args, stdin) in RO_READERS.items():
        cmd = [c.replace("SHARED", str(DATA)).replace("OUT", str(out / "rw")) for c in args]
        want = congruency(*cmd, "--data-dir", str(src), input=stdin)
        assert want.returncode == 0, (name, want.stderr)
        got = (out / f"ro-{name}.out").read_text().replace(str(dst), str(src))
        err = (out / f"ro-{name}.err").read_text()
        assert (out / f"ro-{name}.rc").read_text().strip() == "0", (name, err)
        assert got == want.stdout, name
        assert "Traceback" not in err and "relocate" not in err, (name, err)
    import re

    for page in ("month.html", "trend.html"):  # the same page but for the minute it was made
        ro, rw = ((out / d / page).read_text() for d in ("ro", "rw"))
        ro, rw = (re.sub(r"Generated \d{4}-\d\d-\d\dT\d\d:\d\dZ", "Generated T", x) for x in (ro, rw))
        if ro.replace(str(dst), str(src)) != rw:  # say where (the pages are 5 MB)
            import difflib

            diff = list(difflib.unified_diff(rw.split("><"), ro.replace(str(dst), str(src)).split("><"), lineterm="", n=0))
            raise AssertionError(f"{page}: " + "\n".join(x[:300] for x in diff[:12]))
    for action in UPKEEP:
        err = (out / f"ro-{action}.err").read_text()
        assert (out / f"ro-{action}.rc").read_text().strip() == "1", err
        assert err == f"error: {dst}: read-only file system: `congruency lake` writes there (query, advise, export " \
                      "and report --out FILE read a read-only data dir)\n", err
    for name, script_ in (("connect", CONNECT), ("snap", EVERY_SNAPSHOT)):
        want = subprocess.run([sys.executable, "-c", script_, str(src)], capture_output=True, text=True, timeout=120,
                              env=env())
        assert want.returncode == 0, want.stderr[-2000:]
        assert (out / f"ro-{name}.rc").read_text().strip() == "0", (out / f"ro-{name}.err").read_text()
        assert (out / f"ro-{name}.out").read_text() == want.stdout


# --- a relative data dir (issue 58) -------------------------------------------------------------

#: Every command that publishes, as a person types it with a relative data dir (`data`) from
#: the folder above it; SHARED the shared data, SELECTION the month's ingest options.
WRITERS = (
    ["evaluate", "--month", MONTH],
    ["evaluate", "--month", MONTH, "--reveal", "first-hop"],
    ["evaluate", "--month", MONTH, "--reveal", "neighbours"],
    ["trace", "--atlas", "SHARED/" + ATLAS, "--to", "78.46.48.134", "--from", "1403", "--store"],
    ["sensitivity", "--month", MONTH, "--variants", "min_coverage=0.8"],
    ["relationships", "--month", MONTH, "--infer"],
    ["run", "--month", MONTH, "SELECTION"],  # every step skipped: its sweep must keep every snapshot's files
)
#: Every kept snapshot, every published table, every row read (DuckDB reads each file).
EVERY_SNAPSHOT = ("from bgp_congruency import lake; from bgp_congruency.lake import attach; import sys\n"
                  "for n in attach.snapshots(sys.argv[1]):\n"
                  "    con = lake.connect(sys.argv[1], snapshot=n)\n"
                  "    ts = [t for (t,) in con.execute(\"SELECT view_name FROM duckdb_views() WHERE NOT internal "
                  "AND view_name NOT IN ('rib_entries', 'manifest', 'routes', 'route_snapshots')\").fetchall()]\n"
                  "    print(n, sum(len(con.execute(f'SELECT * FROM \"{t}\"').fetchall()) for t in ts))\n")


def _catalog_paths(data: Path) -> list[tuple[str, int]]:
    import sqlite3

    with sqlite3.connect(data / "catalog.sqlite") as db:
        return db.execute("SELECT path, path_is_relative FROM ducklake_data_file UNION ALL "
                          "SELECT path, path_is_relative FROM ducklake_files_scheduled_for_deletion").fetchall()


@pytest.mark.kernel
def test_writers_with_a_relative_data_dir_then_readers_elsewhere(readonly_ok, sample, tmp_path):
    """Issue 58: every command that publishes, run as `--data-dir data` from the folder above,
    registers its files relative to the data dir; then every reader from another folder and
    through a read-only mount at another path answers, and every kept snapshot reads whole.
    Before: `evaluate` and `trace --store` registered `data/selector_eval/...` as the caller
    spelled it, `advise` ended in a traceback elsewhere, and the plain `run` after them deleted
    the folders kept snapshots still named. (`run --force` publishes through the compare's
    publish, which resolved the data dir before: tests/test_run.py runs it.)"""
    from tests.support.data import ARCHIVE, DATA

    work = tmp_path / "work"
    data = writable(sample.data, work / "data")
    selection = ["--days", "30", "--times", "14:00", "--collectors", "route-views2,route-views6",
                 "--archive-root", str(ARCHIVE), "--default-free-share", "0"]
    for args in WRITERS:
        cmd = [a.replace("SHARED", str(DATA)) for a in args]
        cmd = [x for a in cmd for x in (selection if a == "SELECTION" else [a])]
        r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", *cmd, "--data-dir", "data",
                            "--config", str(sample.config_file)], cwd=work, capture_output=True, text=True,
                           timeout=BOUND_S, env=env())
        assert r.returncode == 0, (cmd, r.stderr[-2000:])
    paths = _catalog_paths(data)
    assert [p for p, rel in paths if not rel or p.startswith("/")] == []
    assert any("selector_eval" in p or p.startswith("month=") for p, _ in paths)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = subprocess.run([sys.executable, "-c", EVERY_SNAPSHOT, str(data)], cwd=elsewhere, capture_output=True,
                       text=True, timeout=BOUND_S, env=env())
    assert r.returncode == 0, r.stderr[-2000:]
    assert len(r.stdout.splitlines()) >= 8
    for name in ("advise", "status"):  # spelled relative from there too (the mount below runs every reader)
        args, stdin = RO_READERS[name]
        cmd = [c.replace("SHARED", str(DATA)).replace("OUT", str(elsewhere)) for c in args]
        r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", *cmd, "--data-dir", "../work/data"],
                           cwd=elsewhere, capture_output=True, text=True, timeout=BOUND_S, env=env(), input=stdin)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (name, r.stderr[-2000:])
    assert "reports failed" not in congruency("status", "--month", MONTH, "--data-dir", str(data)).stdout
    _every_reader_on_a_read_only_mount(data, tmp_path / "ro")


def test_a_catalog_with_misspelled_paths_is_repaired_and_its_files_kept(sample, tmp_path):
    """Issue 58: a catalog where an earlier version registered a file as a relative data dir
    was spelled (`data/selector_eval/month=M/ID/part-0.parquet`, not relative): a reader
    elsewhere says so in one line naming the repair, vacuum keeps the folder however it is
    spelled, and `lake relocate` (as any publish) repairs the path, after which it reads."""
    import sqlite3

    data = writable(sample.data, tmp_path / "data")
    with sqlite3.connect(data / "catalog.sqlite") as db:  # the month's pairs file, as the old publish registered it
        fid, path = db.execute("SELECT data_file_id, path FROM ducklake_data_file WHERE end_snapshot IS NULL AND "
                               "table_id = (SELECT table_id FROM ducklake_table WHERE table_name = 'pairs' AND "
                               "end_snapshot IS NULL) ORDER BY 1 DESC LIMIT 1").fetchone()
        db.execute("UPDATE ducklake_data_file SET path = ?, path_is_relative = 0 WHERE data_file_id = ?",
                   ["data/pairs/" + path, fid])
    pub = (data / "pairs" / path).parent
    r = congruency("advise", "--from", "1403", "--to", "8.8.8.8", "--data-dir", str(data))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith(f"error: {data / 'catalog.sqlite'}: 1 files registered")
    assert "congruency lake relocate --data-dir" in r.stderr
    r = congruency("lake", "vacuum", "--keep", "1", "--grace", "0", "--data-dir", str(data))
    assert r.returncode == 0, r.stderr
    assert pub.is_dir() and any(pub.iterdir())  # the folder the misspelled path names stays
    assert [p for p, ok in _catalog_paths(data) if not ok or p.startswith("data/")] == []  # a writer repairs
    with sqlite3.connect(data / "catalog.sqlite") as db:  # misspelled again: `lake relocate` repairs it too
        db.execute("UPDATE ducklake_data_file SET path = ?, path_is_relative = 0 WHERE data_file_id = ?",
                   ["data/pairs/" + path, fid])
    r = congruency("lake", "relocate", "--data-dir", str(data))
    assert r.returncode == 0 and "1 paths registered by another folder repaired" in r.stderr, r.stderr
    assert [p for p, ok in _catalog_paths(data) if not ok or p.startswith("data/")] == []
    assert rows(data, "pairs", MONTH) == rows(sample.data, "pairs", MONTH)


#: A reader and a table it reads (a file of it gone, the reader must say which, issue 58).
UNREADABLE = (
    ("paths", ["advise", "--from", "1403", "--to", "8.8.8.8"]),
    ("paths", ["query", "--sql", "SELECT * FROM paths"]),
    ("paths", ["evaluate", "--month", MONTH]),
    ("hints", ["export", "--format", "jsonl", "--month", MONTH]),
    ("pairs", ["report", "--month", MONTH, "--out", "OUT/month.html"]),
    ("vps", ["query", "vp_congruency", "--month", MONTH]),
)


def test_a_published_file_that_cannot_be_read_is_one_line(sample, tmp_path):
    """Issue 58: a reader that meets a published file it cannot read (deleted or moved by hand)
    says so in one line naming the table, the file and the snapshot, and exits 1; before,
    `advise` and `evaluate` ended in a traceback and `query --sql` named neither table nor snapshot."""
    import sqlite3

    data = writable(sample.data, tmp_path / "data")
    with sqlite3.connect(data / "catalog.sqlite") as db:
        (snap,) = db.execute("SELECT max(snapshot_id) FROM ducklake_snapshot").fetchone()
    for table, args in UNREADABLE:
        [f] = [p for p in (data / table).glob(f"month={MONTH}/*/*.parquet")
               if str(p.relative_to(data / table)) in {r[0] for r in _catalog_paths(data)}]
        f.rename(tmp_path / "away")
        try:
            r = congruency(*[a.replace("OUT", str(tmp_path)) for a in args], "--data-dir", str(data))
        finally:
            (tmp_path / "away").rename(f)
        assert r.returncode == 1 and "Traceback" not in r.stderr, (args, r.stderr[-3000:])
        line = r.stderr.strip().splitlines()[-1]
        assert line.startswith(f"error: {table}: cannot read {f} (snapshot {snap} of "), (args, line)
        assert "the file is missing" in line, line
