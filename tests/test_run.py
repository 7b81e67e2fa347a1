"""`congruency run` as a user runs it: real processes, real SIGKILLs, a real lock, a real full disk.

Every run here is a separate `python -m bgp_congruency.cli.main run` process on the real 2026-07-30 sample
(route-views2 + route-views6), on the DuckDB engine. Evidence: the entry counts are
bgpdump's (shared data MANIFEST.md), the pair VPs are the 13 peer ASes of MANIFEST.md, and
an interrupted month's tables are compared row for row with an uninterrupted run's.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bgp_congruency.lake import published, upkeep
from tests.support.cli import congruency, env, steps
from tests.support.cli import rows as table_rows
from tests.support.cli import wait_for as wait_for_file
from tests.support.computed import writable
from tests.support.data import ARCHIVE, PEERS_IN_BOTH_2026, RV2_2026, needs_data
from tests.support.month import publish_rows

pytestmark = needs_data

MONTH = "2026-07"
TABLES = ("cleaning_stats", "paths", "vps", "pairs", "transitions", "month_summary")
#: bgpdump -m lines of the two sample RIBs (shared data MANIFEST.md).
ENTRIES = 679_347 + 164_279
SELECT = ["--days", "30", "--times", "14:00", "--collectors", "route-views2,route-views6",
          "--min-coverage", "0"]
BOUND_S = 120  # no single wait in this file lasts longer


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONGRUENCY_PAUSE")}
    env.update(extra)
    return env


def _cmd(data: Path, archive: str, *more: str) -> list[str]:
    month = [] if "--months" in more else ["--month", MONTH]
    return [sys.executable, "-m", "bgp_congruency.cli.main", "run", *month, *SELECT,
            "--archive-root", archive, "--data-dir", str(data), "--config", str(data.parent / "cfg.toml"), *more]


def _config(tmp: Path) -> None:
    (tmp / "cfg.toml").write_text('engine = "duckdb"\nduckdb_memory_limit = "1GB"\nduckdb_threads = 2\n'
                                  "retries = 1\nbackoff_s = 0.2\n")


def run(data: Path, archive: str = str(ARCHIVE), *more: str, env=None, timeout=BOUND_S):
    return subprocess.run(_cmd(data, archive, *more, "--json"), capture_output=True, text=True,
                          env=env or _env(), timeout=timeout)


def start(data: Path, archive: str = str(ARCHIVE), *more: str, **env) -> subprocess.Popen:
    return subprocess.Popen(_cmd(data, archive, *more, "--json"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(**env), start_new_session=True)


def kill(p: subprocess.Popen) -> str:
    """SIGKILL the run's process group; what it wrote on stderr."""
    os.killpg(p.pid, signal.SIGKILL)
    _out, err = p.communicate(timeout=30)
    assert p.returncode == -signal.SIGKILL
    return err


def wait_for(cond, what: str, p: subprocess.Popen | None = None, limit: float = BOUND_S):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        if p is not None and p.poll() is not None:
            out, err = p.communicate()
            pytest.fail(f"the run ended (rc {p.returncode}) before {what}: {err[-2000:]}")
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def rows(data: Path, table: str, month: str = MONTH) -> list[dict]:
    return every_rows(data, [table], month)[table]


def every_rows(data: Path, tables=TABLES, month: str = MONTH) -> dict[str, list[str]]:
    """table -> its rows of `month` as sorted JSON lines, every table from one snapshot (one
    catalog attach for all)."""
    from tests.support.month import published_tables

    return {t: sorted(json.dumps(r, sort_keys=True, default=str) for r in got)
            for t, got in published_tables(data, tables, month).items()}


def seed_previous(src: Path, dst: Path) -> None:
    """A published 2026-06 (2026-07's tables under the month before, its congruent pairs
    left out): the state a crash must leave intact, and the month `transitions` of 2026-07
    is computed against (so it has rows: the pairs that became congruent)."""
    tables = {t: published.read(src, t, MONTH).to_pylist() for t in TABLES}
    tables["pairs"] = [r for r in tables["pairs"] if not r["congruent"]]
    publish_rows(dst, "2026-06", tables)


def previous_state(data: Path, month: str = "2026-06") -> str:
    """What the catalog publishes of a month: its files (names and bytes) and their rows."""
    got = published.files(data, TABLES, month)
    h = hashlib.sha256()
    for t in TABLES:  # readable, not only unchanged
        h.update("|".join(rows(data, t, month)).encode())
        for f in got[t]:
            h.update(f.encode())
            h.update(Path(f).read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def with_previous(sample, tmp_path_factory):
    """The sample month (the session's `congruency run` of it) computed again with a month
    published before it: 2026-06, the sample's tables with its congruent pairs left out."""
    tmp = tmp_path_factory.mktemp("run-prev")
    _config(tmp)
    data = writable(sample.data, tmp / "data")
    seed_previous(sample.data, data)
    r = run(data, str(ARCHIVE), "--force", "compare")
    assert r.returncode == 0, r.stderr
    return {"data": data, "summary": json.loads(r.stdout)}


@pytest.mark.slow
def test_run_summary_and_outputs(sample, with_previous):
    """What `run` (and `status`) says of the sample month: files and entries (bgpdump's line
    counts), pairs as published, the 13 VPs of the shared data's MANIFEST.md, each output where
    the layout puts it; with the month before published, transitions lists the pairs that
    became congruent."""
    r = congruency("status", "--month", MONTH, "--data-dir", str(sample.data), "--config", str(sample.config_file),
                   "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["ok"] and s["month"] == MONTH and s["files"] == 2 and s["entries"] == ENTRIES
    assert [n for n, st in s["steps"].items() if st["status"] == "done"][:2] == ["ingest", "compare"]
    assert s["failed_slots"] == []
    data = sample.data
    ms = published.read(data, "month_summary", MONTH).to_pylist()[0]
    assert s["pairs"] == ms["pairs"] == published.read(data, "pairs", MONTH).num_rows > 0
    assert s["noncongruent_fraction"] == ms["noncongruent_fraction"]
    vps = {r["vp_asn"] for r in published.read(data, "pairs", MONTH).select(["vp_asn"]).to_pylist()}
    assert vps == PEERS_IN_BOTH_2026
    for t in TABLES:
        assert Path(s["outputs"][t]).parent == data / t / f"month={MONTH}"  # this publish's folder
    assert Path(s["outputs"]["manifest"]).is_dir() and Path(s["outputs"]["state"]).is_file()
    # with the month before published, transitions lists the pairs that became congruent
    assert with_previous["summary"]["steps"]["compare"]["status"] == "done"
    tr = published.read(with_previous["data"], "transitions", MONTH)
    assert tr.num_rows == sum(1 for r in rows(data, "pairs") if json.loads(r)["congruent"]) > 0


@pytest.mark.slow
def test_rerun_skips_then_force_redoes(sample, tmp_path):
    """A finished month is skipped; other inputs or --force redo only the compare; a range
    goes on past a failed month; the export follows tunnels_export. Up to 60 s under the
    suite's load: eight runs as processes, two of them the real month's compare."""
    _config(tmp_path)
    data = writable(sample.data, tmp_path / "data")
    before = published.listing(data, ["pairs"])
    r = run(data)
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)["steps"]
    assert st["ingest"]["status"] == st["compare"]["status"] == "skipped"
    assert published.listing(data, ["pairs"]) == before  # nothing re-published
    # other inputs (a method parameter) -> compare is redone, ingest is not
    r = run(data, str(ARCHIVE), "--min-coverage", "0.0001")
    st = json.loads(r.stdout)["steps"]
    assert (st["ingest"]["status"], st["compare"]["status"]) == ("skipped", "done"), r.stderr
    r = run(data, str(ARCHIVE), "--force", "compare")
    st = json.loads(r.stdout)["steps"]
    assert (st["ingest"]["status"], st["compare"]["status"]) == ("skipped", "done"), r.stderr
    assert rows(data, "pairs") == rows(sample.data, "pairs")
    # a range runs in order and a failed month does not stop the next: 2026-06 has no dumps
    r = run(data, str(ARCHIVE), "--months", "2026-06..2026-07")
    assert r.returncode == 1
    june, july = (json.loads(line) for line in r.stdout.splitlines())
    assert (june["month"], june["ok"], june["steps"]["ingest"]["status"]) == ("2026-06", False, "failed")
    assert [f["status"] for f in june["failed_slots"]] == ["missing", "missing"]
    assert (july["month"], july["ok"], july["steps"]["compare"]["status"]) == ("2026-07", True, "skipped")
    # bad arguments: one line, exit 2
    for bad in (["--force", "nonsense"], ["--months", "2026-07..2026-01"]):
        p = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "run", "--data-dir", str(data),
                            *(["--month", MONTH] if bad[0] == "--force" else []), *bad],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stderr.startswith("error: "), p.stderr
    # tunnels_export = false: the hints step is redone without the export, and the earlier export goes
    export = data / "exports" / f"month={MONTH}" / "tunnels.jsonl"
    assert export.is_file()
    with (tmp_path / "cfg.toml").open("a") as f:
        f.write("tunnels_export = false\n")
    r = run(data)
    s = json.loads(r.stdout)
    assert r.returncode == 0 and s["steps"]["hints"]["status"] == "done" and "tunnels_jsonl" not in s["outputs"], r.stderr
    assert not export.exists() and Path(s["outputs"]["hints"]).is_dir()
    r = run(data)
    assert json.loads(r.stdout)["steps"]["hints"]["status"] == "skipped", r.stderr


@pytest.mark.slow
def test_kills_at_every_stage_then_resume(sample, with_previous, tmp_path):
    """SIGKILL mid-download, mid-decode, mid-compare, mid-publish; a second run of the month
    meanwhile is refused (the lock); the last run waits for the lock and finishes the month
    with tables identical to the uninterrupted run's; nothing is left behind. Over 60 s: seven
    runs of the real month, each to its kill or to the end."""
    from tests.support.archive_server import serve

    _config(tmp_path)
    data = tmp_path / "data"
    seed_previous(sample.data, data)
    prev = previous_state(data)
    rv2 = "/" + str(RV2_2026.relative_to(ARCHIVE))
    pause = tmp_path / "paused"

    with serve(ARCHIVE, {rv2: "slow:60"}) as url:  # headers, then a stall: mid-download
        p = start(data, url)
        wait_for(lambda: url.hits(rv2) > 0 and list((data / "cache").rglob(".*.part")), "the download", p)
        kill(p)
    assert previous_state(data) == prev
    decoded = data / "_staging" / f"ingest-{MONTH}"
    assert not list(decoded.rglob("*.parquet")) and not (data / "routes" / f"month={MONTH}").exists()

    p = start(data)  # mid-decode: a dot-temp Parquet file is growing
    wait_for(lambda: [f for f in decoded.rglob(".*.tmp") if f.stat().st_size > 0]
             if decoded.exists() else None, "the decoder", p)
    kill(p)
    assert previous_state(data) == prev

    p = start(data, CONGRUENCY_PAUSE_AT="compare", CONGRUENCY_PAUSE_FILE=str(pause))
    wait_for(pause.exists, "the compare pause", p)
    staged = list((data / "_staging").glob(f"{MONTH}-*"))
    assert staged
    second = run(data, timeout=60)  # the month is held: refused at once, one line
    assert second.returncode == 1, second.stderr
    err = [line for line in second.stderr.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and f"month {MONTH} is being run by another process (pid {p.pid})" in err[0]
    alone = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "compare", "--month", MONTH, "--data-dir", str(data),
                            "--min-coverage", "0"], capture_output=True, text=True, timeout=60)
    assert alone.returncode == 1 and "is being run by another process" in alone.stderr, alone.stderr
    kill(p)
    pause.unlink()
    assert previous_state(data) == prev
    assert all(s.exists() for s in staged)  # left by the kill ...

    # Killed before the commit (tables moved, nothing committed) and in it (the transaction
    # open): 2026-07 is not published, 2026-06 is intact; the next run removes what they left.
    for point in ("publish", "commit"):
        p = start(data, CONGRUENCY_PAUSE_AT=point, CONGRUENCY_PAUSE_FILE=str(pause))
        wait_for(pause.exists, f"the {point} pause", p)
        # ... resumed by the next run (the compare's one partition was done: nothing is
        # computed again), which publishes from it; the publish kill's folder is deleted
        assert not any((s / "_work").exists() for s in staged)
        err = kill(p)
        resumed = [ln for ln in err.splitlines() if "resuming" in ln]
        assert resumed == ([f"note: {staged[0]}: resuming what a stopped run of the month finished with the same "
                            "inputs: 1 of 1 partitions' cleaning and 1 of 1 partitions' tables are reused"]
                           if point == "publish" else []), err[-2000:]
        assert not any(s.exists() for s in staged) or point == "publish"
        pause.unlink()
        assert previous_state(data) == prev
        assert published.months(data) == ["2026-06"] and upkeep.orphans(data, MONTH)
    # queues behind the lock; runs only the (skipped) ingest; the month's cleanup goes first
    waiting = start(data, str(ARCHIVE), "--wait", "120", "--only", "ingest")
    out, err = waiting.communicate(timeout=BOUND_S)
    assert waiting.returncode == 0, err
    assert json.loads(out)["steps"]["ingest"]["status"] == "skipped"
    assert not upkeep.orphans(data, MONTH) and not [p for p in (data / "_staging").iterdir() if p.is_dir()]
    assert previous_state(data) == prev
    # Killed after the commit: the new month is published whole, the staging folder is left
    p = start(data, CONGRUENCY_PAUSE_AT="published", CONGRUENCY_PAUSE_FILE=str(pause))
    wait_for(pause.exists, "the published pause", p)
    kill(p)
    pause.unlink()
    assert published.months(data) == ["2026-06", MONTH]
    got, want = every_rows(data), every_rows(with_previous["data"])
    for t in TABLES:
        assert got[t] == want[t], t
    assert previous_state(data) == prev
    r = run(data)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["ok"] and s["entries"] == ENTRIES
    got, want = every_rows(data), every_rows(with_previous["data"])
    for t in TABLES:
        assert got[t] == want[t], t
    assert previous_state(data) == prev
    assert not [p for p in (data / "_staging").iterdir() if p.is_dir()]  # only the lock files
    assert not [f for f in data.rglob("*.tmp")]


@pytest.mark.kernel
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_full_disk_while_publishing(sample, tmp_path):
    """A data dir on a small tmpfs, filled up: `run --force compare` is refused before it
    writes anything (the plan: what the compare adds and stages does not fit the free space);
    `congruency compare`, which plans nothing, fails with one line while it stages the
    month's tables, and the month's published tables are unchanged; a run once there is room
    finishes it."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    need = sum(f.stat().st_size for f in sample.data.rglob("*") if f.is_file())
    size = need // 1024 + 64_000  # KiB: the month as it is, and room for what the plan says a compare needs
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}k", "tmpfs", str(mnt)], check=True)
    try:
        data = mnt / "data"
        writable(sample.data, data)
        _config(mnt)
        before = previous_state(data, MONTH)
        free = shutil.disk_usage(mnt).free
        filler = mnt / "filler"
        with open(filler, "wb") as fh:  # leave ~200 KiB: the paths table alone needs more
            fh.write(b"\0" * max(0, free - 200_000))
        r = subprocess.run(_cmd(data, str(ARCHIVE), "--force", "compare"), capture_output=True, text=True,
                           env=_env(), timeout=BOUND_S)
        assert r.returncode == 1
        [err] = [line for line in r.stderr.splitlines() if line.startswith("error:")]
        assert "the run needs about" in err and "is free" in err and "staged at once" in err, r.stderr
        assert not list((data / "_staging").glob(f"{MONTH}-*"))
        r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "compare", "--month", MONTH, "--data-dir",
                            str(data), "--config", str(mnt / "cfg.toml"), "--min-coverage", "0"],
                           capture_output=True, text=True, env=_env(), timeout=BOUND_S)
        assert r.returncode == 1
        err = [line for line in r.stderr.splitlines() if line.startswith("error:")]
        assert len(err) == 1 and "no space left on device" in err[0], r.stderr
        assert previous_state(data, MONTH) == before
        filler.unlink()
        r = run(data, str(ARCHIVE), "--force", "compare")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["steps"]["compare"]["status"] == "done"
        got, want = every_rows(data), every_rows(sample.data)
        for t in TABLES:
            assert got[t] == want[t], t
        assert not [p for p in (data / "_staging").iterdir() if p.is_dir()]
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.slow
def test_collectors_ingested_at_once_share_one_manifest(tmp_path):
    """The DAG's mapped ingest tasks: one process per collector, at the same time, merging
    into one manifest (its own lock); the month's ingest is then complete."""
    code = ("import sys; from bgp_congruency.runner import month as r, schedule; cfg = schedule.config_from_params({'days': '30', "
            "'times': '14:00', 'archive_root': sys.argv[1], 'data_dir': sys.argv[2]}); "
            "r.ingest_collector(cfg, '2026-07', sys.argv[3])")
    data = tmp_path / "data"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(ARCHIVE), str(data), c], stderr=subprocess.PIPE,
                              text=True) for c in ("route-views2", "route-views6")]
    for p in procs:
        _, err = p.communicate(timeout=BOUND_S)
        assert p.returncode == 0, err
    from bgp_congruency.ingest import manifest
    from bgp_congruency.runner import month as r
    from bgp_congruency.runner import schedule, state

    m = manifest.read(data, MONTH)
    assert sorted((v["collector"], v["status"]) for v in m.values()) == [("route-views2", "ok"), ("route-views6", "ok")]
    assert sum(v["entries_v4"] + v["entries_v6"] for v in m.values()) == ENTRIES
    cfg = schedule.config_from_params({"days": "30", "times": "14:00", "archive_root": str(ARCHIVE), "data_dir": str(data)})
    assert r.finish_ingest(cfg, MONTH).status == "done"
    st = state.read_state(cfg, MONTH)["steps"]["ingest"]
    assert {c: v["status"] for c, v in st["collectors"].items()} == {"route-views2": "done", "route-views6": "done"}


@pytest.mark.slow
def test_a_collector_s_task_leaves_another_collector_s_decoded_dumps_alone(tmp_path):
    """The DAG's per-collector tasks run at once: route-views2's task must neither merge nor
    delete a dump route-views6's task has decoded and not merged yet (it did, and route-views6's
    merge then found its file gone: a fresh clone's CI run, 2026-11-30). That task then merges
    it, and the month equals the two collectors ingested one after the other."""
    from bgp_congruency.common import routes as stored
    from bgp_congruency.ingest import backends, manifest
    from bgp_congruency.ingest import run as ingest_run
    from bgp_congruency.runner import month as r
    from bgp_congruency.runner import schedule

    data = tmp_path / "data"
    cfg = schedule.config_from_params({"days": "30", "times": "14:00", "archive_root": str(ARCHIVE), "data_dir": str(data)})
    cfg6 = cfg.with_overrides(collectors=("route-views6",))
    (slot,) = [s for s in ingest_run.slots_of(cfg6, MONTH) if s.url]
    ingest_run.ingest_slot(slot, cfg6, backends.get(cfg6.backend))  # decoded, not merged: a task mid-way
    staged = sorted((data / "_staging" / f"ingest-{MONTH}" / "collector=route-views6").glob("[!._]*.parquet"))
    assert len(staged) == 1
    before = staged[0].read_bytes()
    r.ingest_collector(cfg, MONTH, "route-views2")
    assert staged[0].read_bytes() == before  # left alone: neither merged nor deleted
    assert set(stored.month_generations(data, MONTH)) == {"route-views2"}
    r.ingest_collector(cfg, MONTH, "route-views6")  # its own task merges what it decoded
    assert not staged[0].exists()
    m = manifest.read(data, MONTH)
    assert sorted((v["collector"], v["status"]) for v in m.values()) == [("route-views2", "ok"), ("route-views6", "ok")]
    assert sum(v["entries_v4"] + v["entries_v6"] for v in m.values()) == ENTRIES


@pytest.mark.slow
def test_a_step_that_cannot_import_fails(sample, tmp_path, monkeypatch, capsys):
    """An ImportError while a step runs (a lazily imported module: pyspark, pybgpstream) is that
    step's failure (one line, exit 1), not 'unavailable'."""
    from bgp_congruency.cli.main import main as cli
    from bgp_congruency.runner import steps

    _config(tmp_path)
    data = writable(sample.data, tmp_path / "data")

    def broken(*a, **k):
        raise ImportError("No module named 'bgp_congruency.selector.exports'", name="bgp_congruency.selector.exports")

    monkeypatch.setattr(steps.jsonl, "write", broken)
    rc = cli(["run", "--month", MONTH, *SELECT, "--archive-root", str(ARCHIVE), "--data-dir", str(data),
              "--config", str(tmp_path / "cfg.toml"), "--only", "hints", "--force", "hints", "--json"])
    out, err = capsys.readouterr()
    s = json.loads(out)
    assert rc == 1 and not s["ok"] and s["steps"]["hints"]["status"] == "failed", err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "hints" in errors[0] and "bgp_congruency.selector.exports" in errors[0], err


@pytest.mark.slow
def test_a_failed_run_says_failed_and_status_says_why(sample, tmp_path):
    """Issue 58: `run --force reports` whose reports step fails printed `run M: done (5/5, ...)`
    before its error, and the human `status` said `reports failed` without the reason. The log
    (off a terminal) now says where it failed and never `done`, and `status` prints the error."""
    _config(tmp_path)
    data = writable(sample.data, tmp_path / "data")
    page = data / "reports" / f"month={MONTH}" / "report.html"
    page.unlink()
    page.mkdir()  # a folder where the page goes: the reports step fails
    r = subprocess.run(_cmd(data, str(ARCHIVE), "--force", "reports"), capture_output=True, text=True,
                       timeout=BOUND_S, env=_env())
    assert r.returncode == 1, r.stderr
    log = r.stderr.splitlines()
    assert not [x for x in log if f"run {MONTH}: done" in x], r.stderr
    assert any(x.endswith(f"run {MONTH}: failed at reports") for x in log), r.stderr
    [err] = [x for x in log if x.startswith("error: ")]
    assert "report.html" in err and "reports" in err
    st = congruency("status", "--month", MONTH, "--data-dir", str(data))
    assert st.returncode == 1
    [line] = [x for x in st.stderr.splitlines() if x.strip().startswith("reports")]
    assert line.split() [:2] == ["reports", "failed:"] and err.removeprefix("error: ") in line, st.stderr


@pytest.mark.slow
def test_status_and_bad_data_dirs_are_one_line(sample, tmp_path, capsys):
    """A data dir that is a file: exit 2; a month never run: exit 1; an OSError: one line,
    exit 1; a closed stdout (`| head`): quiet exit 141, no traceback."""
    from bgp_congruency.cli.main import main as cli

    for cmd in (["status", "--month", MONTH], ["run", "--month", MONTH, *SELECT]):
        assert cli([*cmd, "--data-dir", "/etc/passwd"]) == 2
        err = capsys.readouterr().err
        assert err == "error: --data-dir: /etc/passwd is not a folder\n", err
    # a misspelled data dir: one message and exit 2 in every command that only reads it, and
    # nothing created under the wrong name
    typo = tmp_path / "dtaa"
    for cmd in (["query", "trend"], ["report", "--month", MONTH], ["advise", "--from", "1", "--to", "2"],
                ["export", "--format", "jsonl", "--from", "1", "--to", "2"], ["sql", "--print"], ["lake", "snapshots"],
                ["sensitivity", "--month", MONTH], ["compare", "--month", MONTH]):
        assert cli([*cmd, "--data-dir", str(typo)]) == 2, cmd
        err = capsys.readouterr().err
        assert err == f"error: --data-dir: {typo} does not exist (congruency run or ingest creates it; " \
                      "is it misspelled?)\n", (cmd, err)
    assert not typo.exists()
    assert cli(["query", "--list", "--data-dir", str(typo)]) == 0  # needs no data
    capsys.readouterr()
    data = writable(sample.data, tmp_path / "data")
    assert cli(["status", "--month", "2026-05", "--data-dir", str(data)]) == 1
    out, err = capsys.readouterr()
    assert not out and err.startswith("error: month 2026-05: never run") and err.count("\n") == 1, err
    r, w = os.pipe()
    os.close(r)  # the reader is gone before anything is written
    p = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "status", "--month", MONTH, "--json",
                        "--data-dir", str(data)], stdout=w, stderr=subprocess.PIPE, text=True, timeout=60)
    os.close(w)
    assert (p.returncode, p.stderr) == (141, "")
    state = data / "_runs" / f"month={MONTH}" / "state.json"
    state.unlink()
    state.mkdir()  # a folder where the state file belongs: an OSError deep in the runner
    assert cli(["status", "--month", MONTH, "--data-dir", str(data)]) == 1
    err = capsys.readouterr().err
    assert err == f"error: {state}: Is a directory\n", err


@pytest.mark.slow
def test_temp_files_of_a_killed_step_are_cleaned_by_the_next_run(sample, tmp_path):
    """SIGKILL while the month's report is written under its temp name: the next run of the
    month removes it (its writer is dead) and finishes; a live writer's temp file is kept."""
    from bgp_congruency.common import atomic

    _config(tmp_path)
    data = writable(sample.data, tmp_path / "data")
    pause = tmp_path / "paused"
    p = start(data, str(ARCHIVE), "--force", "reports", CONGRUENCY_PAUSE_AT="report",
              CONGRUENCY_PAUSE_FILE=str(pause))
    wait_for(pause.exists, "the report pause", p)
    page = data / "reports" / f"month={MONTH}" / "report.html"
    left = list(page.parent.glob(".report.html.*.tmp"))
    assert left and atomic.stale(page) == []  # its writer is alive
    kill(p)
    assert atomic.stale(page) == left
    mine = atomic.temp_name(data / "exports" / f"month={MONTH}" / "tunnels.jsonl")
    mine.write_text("")  # a live writer's (this process): kept
    r = run(data)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ok"]
    assert [f for f in data.rglob("*.tmp*")] == [mine]


def test_atomic_write_keeps_the_old_file_and_cleans_only_dead_writers(tmp_path):
    from bgp_congruency.common import atomic

    f = tmp_path / "a.txt"
    atomic.write_text(f, "old")
    with pytest.raises(RuntimeError):
        with atomic.replacing(f) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed half way")
    assert f.read_text() == "old" and list(tmp_path.iterdir()) == [f]
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, timeout=60)
    dead = tmp_path / f".a.txt.{int(gone.stdout)}.0123abcd.tmp"
    older = tmp_path / ".a.txt.0123abcd.tmp"  # the names before common/atomic.py: no pid
    live = atomic.temp_name(f)
    other = tmp_path / ".b.txt.1.0123abcd.tmp"  # another file's
    for p in (dead, older, live, other, dead.with_name(dead.name + ".wal")):
        p.write_text("")
    assert atomic.clean_stale(f) == sorted([dead, dead.with_name(dead.name + ".wal"), older])
    assert sorted(tmp_path.iterdir()) == sorted([f, live, other])


def test_threads_taking_a_month_at_once_all_hold_it_and_another_process_waits(tmp_path, monkeypatch):
    """Ingest's collector merges take the month side by side: a thread that finds another of
    its process taking the lock re-enters it (each opened the file, and the second flock
    failed against the first's: LockBusy, and the older generations were left unpruned);
    another process still finds the month busy while any of them holds it."""
    import threading
    import time as _time

    from bgp_congruency.common import locks

    acquire = locks._acquire

    def slow(p, shared):  # the window between opening the file and holding its flock, widened
        _time.sleep(0.05)
        return acquire(p, shared)

    monkeypatch.setattr(locks, "_acquire", slow)
    start, held, errors = threading.Barrier(4), threading.Barrier(4), []
    probe = [sys.executable, "-c", "from bgp_congruency.common.locks import month_lock\n"
             f"with month_lock({str(tmp_path)!r}, '2026-07'): pass"]

    def take():
        try:
            start.wait(timeout=30)
            with locks.month_lock(tmp_path, "2026-07"):
                held.wait(timeout=30)
        except Exception as exc:  # noqa: BLE001 - the test lists them
            errors.append(repr(exc))
            held.abort()

    threads = [threading.Thread(target=take) for _ in range(3)]
    for t in threads:
        t.start()
    start.wait(timeout=30)
    with locks.month_lock(tmp_path, "2026-07"):
        other = subprocess.run(probe, capture_output=True, text=True, timeout=60)
        held.wait(timeout=30)
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert other.returncode != 0 and "is being run by another process" in other.stderr
    assert locks._held == {} and not locks.lock_path(tmp_path, "2026-07").exists()
    assert subprocess.run(probe, capture_output=True, text=True, timeout=60).returncode == 0


def test_streaming_writers_publish_whole_files_or_nothing(tmp_path):
    """The Parquet writer of ingest and the synthetic MRT writer go through common/atomic.py:
    while writing, only a dot-temp with the writer's pid exists; on failure, nothing is left
    and an older file under the final name is kept."""
    import pyarrow as pa

    from bgp_congruency.common import atomic
    from bgp_congruency.common.tables import DECODED_SCHEMA
    from bgp_congruency.ingest.writer import SnapshotWriter
    from bgp_congruency.synth.mrt_writer import MrtWriter

    final = tmp_path / "rib.parquet"
    final.write_text("older")
    w = SnapshotWriter(final)
    w.write(pa.RecordBatch.from_pylist([], schema=DECODED_SCHEMA))
    [tmp] = [p for p in tmp_path.iterdir() if p != final]
    assert tmp.name.startswith(f".rib.parquet.{os.getpid()}.") and atomic.stale(final) == []
    w.abort()
    assert sorted(tmp_path.iterdir()) == [final] and final.read_text() == "older"
    w = SnapshotWriter(final)
    assert w.publish() == final and pq.read_table(final).num_rows == 0
    assert sorted(tmp_path.iterdir()) == [final]

    mrt = tmp_path / "rib.20260701.0000.bz2"
    with pytest.raises(RuntimeError):
        with MrtWriter(mrt, 1_782_864_000) as m:
            m.peer_index("192.0.2.1", "v", [("192.0.2.1", "192.0.2.1", 65000)])
            assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".rib.2026")]
            raise RuntimeError("killed half way")
    assert sorted(tmp_path.iterdir()) == [final]
    with MrtWriter(mrt, 1_782_864_000) as m:
        m.peer_index("192.0.2.1", "v", [("192.0.2.1", "192.0.2.1", 65000)])
    assert sorted(tmp_path.iterdir()) == sorted([final, mrt]) and m.size == mrt.stat().st_size > 0


# === the months of a small generated archive (tests/support/computed.two_months) ===========

def _run_args(two, data: Path, month: str, *more: str) -> list[str]:
    """`run` of one month of the two-month archive, as the session computed them."""
    return ["run", "--month", month, "--days", "1", "--times", "00:00", "--collectors",
            "route-views2,route-views6", "--archive-root", str(two.archive), "--data-dir", str(data),
            "--config", str(two.config_file), "--min-coverage", "0.5", "--json", *more]


# --- 1. transitions are computed from the month before as it is, and recorded so -------

@pytest.mark.slow
def test_parallel_months_wait_for_the_month_before(two_months, tmp_path):
    """2026-01 and 2026-02 started together: 2026-02's compare waits for 2026-01's run
    (paused, holding its month, with its tables staged) and then reads its tables. Before
    issue 30 it compared against nothing and recorded done with 0 transitions."""
    data = tmp_path / "data"
    flag = tmp_path / "paused"
    jan = subprocess.Popen([sys.executable, "-m", "bgp_congruency.cli.main", *_run_args(two_months, data, "2026-01")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env(CONGRUENCY_PAUSE_AT="compare", CONGRUENCY_PAUSE_FILE=str(flag),
                                    CONGRUENCY_PAUSE_S="4"))
    try:
        wait_for_file(flag, jan)
        feb = congruency(*_run_args(two_months, data, "2026-02"))
        assert feb.returncode == 0, feb.stderr[-2000:]
        assert jan.wait(BOUND_S) == 0, jan.communicate()[1][-2000:]
    finally:
        jan.kill()
    assert table_rows(data, "transitions", "2026-02") == table_rows(two_months.data, "transitions", "2026-02")


@pytest.mark.slow
def test_republish_during_compare_is_redone(two_months, tmp_path):
    """2026-01 re-published while 2026-02's compare runs (paused after reading it, until
    2026-01's run is over: deleting the pause file lets it go on): 2026-02 is recorded on the
    files it read, so `status` calls it stale and the next run redoes it (before issue 30 the
    fingerprint was taken after the step, and the next run skipped it)."""
    data = writable(two_months.data, tmp_path / "data")  # both months run, as the session ran them
    flag = tmp_path / "paused"
    feb = subprocess.Popen([sys.executable, "-m", "bgp_congruency.cli.main", *_run_args(two_months, data, "2026-02", "--force", "compare")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env(CONGRUENCY_PAUSE_AT="compare", CONGRUENCY_PAUSE_FILE=str(flag),
                                    CONGRUENCY_PAUSE_S="120"))
    try:
        wait_for_file(flag, feb)
        jan = congruency(*_run_args(two_months, data, "2026-01", "--force", "compare"))
        flag.unlink()
        assert jan.returncode == 0, jan.stderr[-2000:]
        out, err = feb.communicate(timeout=BOUND_S)
        assert feb.returncode == 0, err[-2000:]
    finally:
        feb.kill()
    status = congruency("status", "--month", "2026-02", "--data-dir", str(data), "--config",
                        str(two_months.config_file), "--json")
    assert steps(status.stdout)["compare"]["status"] == "stale"
    again = congruency(*_run_args(two_months, data, "2026-02"))
    assert again.returncode == 0, again.stderr[-2000:]
    assert steps(again.stdout)["compare"]["status"] == "done"
    assert table_rows(data, "transitions", "2026-02") == table_rows(two_months.data, "transitions", "2026-02")
    status = congruency("status", "--month", "2026-02", "--data-dir", str(data), "--config",
                        str(two_months.config_file), "--json")
    assert {s["status"] for s in steps(status.stdout).values()} == {"done"}


# --- 5. data dirs whose names have glob characters -----------------------------------------

@pytest.mark.slow
def test_a_data_dir_with_glob_characters(two_months, tmp_path):
    """Every step and reader takes the folder literally (before issue 30: the hints step
    failed with "No files found that match the pattern", advise with a traceback): one name
    with every glob character, brackets, braces, a star and a question mark."""
    data = tmp_path / "run[1] a*b?{c,d}"
    r = congruency(*_run_args(two_months, data, "2026-01"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert {s["status"] for s in steps(r.stdout).values()} == {"done"}
    for table in ("pairs", "hints"):
        assert table_rows(data, table, "2026-01") == table_rows(two_months.data, table, "2026-01")
    pair = table_rows(data, "pairs", "2026-01")[0]
    for args in (("advise", "--from", str(pair["vp_asn"]), "--to", str(pair["dest_asn"]), "--month", "2026-01", "--json"),
                 ("query", "vp_congruency", "--month", "2026-01", "--format", "csv"),
                 ("export", "--format", "jsonl", "--month", "2026-01")):
        got = congruency(*args, "--data-dir", str(data))
        want = congruency(*args, "--data-dir", str(two_months.data))
        assert got.returncode == 0 and "Traceback" not in got.stderr, got.stderr
        assert got.stdout == want.stdout, args


# --- 6. Ctrl-C --------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("point", ["ingest", "compare"])
def test_ctrl_c_is_one_line_recorded_interrupted_and_resumed(two_months, tmp_path, point):
    """SIGINT to the command's process group (what a terminal's Ctrl-C does) while a step
    works: one line, exit 130, the step recorded `interrupted` (not failed), `status` exit 0,
    and the next run finishes the month with the tables a run without interruption gives
    (the compare's from the partitions the interrupted one finished)."""
    data, flag = tmp_path / "data", tmp_path / "paused"
    proc = subprocess.Popen([sys.executable, "-m", "bgp_congruency.cli.main", *_run_args(two_months, data, "2026-01")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=env(CONGRUENCY_PAUSE_AT=point, CONGRUENCY_PAUSE_FILE=str(flag), CONGRUENCY_PAUSE_S="3"))
    try:
        wait_for_file(flag, proc)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=BOUND_S)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "error: interrupted; `congruency run` stopped (run it again to resume)"
    assert "Traceback" not in err and out == ""
    st = congruency("status", "--month", "2026-01", "--data-dir", str(data), "--json")
    assert st.returncode == 0, st.stderr
    rec = steps(st.stdout)[point]
    assert rec["status"] == "interrupted" and rec["error"].startswith("Ctrl-C at "), rec
    again = congruency(*_run_args(two_months, data, "2026-01"))
    assert again.returncode == 0, again.stderr[-2000:]
    assert steps(again.stdout)[point]["status"] == "done"
    if point == "compare":  # interrupted with every partition done: the next run computes none again
        assert "partitions' cleaning and 1 of 1 partitions' tables are reused" in again.stderr, again.stderr[-2000:]
    for table in ("pairs", "paths", "month_summary"):
        assert table_rows(data, table, "2026-01") == table_rows(two_months.data, table, "2026-01")


# --- 11. logs that are not a terminal ---------------------------------------------------------

@pytest.mark.slow
def test_a_log_off_a_terminal_has_one_line_per_event_and_no_wrapping(two_months, tmp_path):
    """stderr to a pipe (cron, Airflow): every output's path on its label's line however long
    (before issue 30 the summary wrapped at 80 columns), and progress as one stamped line per
    event in the order things happened (rich drew every bar at the end)."""
    import re

    data = tmp_path / ("a-data-dir-whose-path-is-longer-than-eighty-columns-on-its-own-" + "x" * 40)
    r = congruency(*[a for a in _run_args(two_months, data, "2026-01") if a != "--json"], env=env(COLUMNS="80"))
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    for key in ("pairs", "month_report", "state"):
        [line] = [x for x in lines if x.split()[:1] == [key] and "/" in x]  # the output, not the status
        assert line.split()[1].startswith(str(data)), line
    events = [x for x in lines if re.match(r"\d\d:\d\d:\d\d ", x)]
    assert events and "━" not in r.stderr
    assert [x[:8] for x in events] == sorted(x[:8] for x in events)
    said = [x[9:] for x in events]
    for step in ("ingest", "compare", "hints", "lake", "reports"):
        assert f"run 2026-01: {step}" in said
    order = [said.index(x) for x in ("run 2026-01: compare", "compare 2026-01 (duckdb): started",
                                     "compare 2026-01 (duckdb): publishing", "run 2026-01: hints")]
    assert order == sorted(order)
    assert any(x.startswith("compare 2026-01 (duckdb): done (3/3, ") for x in said)


@pytest.mark.slow
def test_the_default_free_threshold_has_its_own_word(two_months, tmp_path):
    """`--default-free-share` (the VPs' threshold, METHOD.md 5); `--min-coverage` stays as its
    old name; "coverage" is the snapshot policy's word alone."""
    for cmd in ("run", "compare"):
        text = " ".join(congruency(cmd, "--help").stdout.split())
        assert "--default-free-share SHARE, --min-coverage SHARE" in text
    bad = congruency(*_run_args(two_months, tmp_path / "d", "2026-01")[:-3], "--default-free-share", "2")
    assert bad.stderr == "error: --default-free-share (--min-coverage): expected a number from 0 to 1, got 2.0\n"
    # the session's two months ran at min_coverage 0.5 (the old name's field; --min-coverage
    # sets it in the compare and sensitivity tests)
    a = congruency(*_run_args(two_months, tmp_path / "a", "2026-01")[:-3], "--default-free-share", "0.5", "--json")
    assert a.returncode == 0, a.stderr
    assert two_months.cfg.method.min_coverage == 0.5
    assert table_rows(tmp_path / "a", "pairs", "2026-01") == table_rows(two_months.data, "pairs", "2026-01")


def test_status_names_the_data_dir_it_looked_in(tmp_path):
    r = congruency("status", "--month", "2026-07", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr == (f"error: month 2026-07: never run in {tmp_path / 'data'} (no state, no manifest there; "
                        "another --data-dir? `make demo` writes data/demo)\n")




# --- a finished month is a finished month, however its data dir is spelled ------------------

@pytest.mark.slow
def test_a_finished_month_is_not_done_again_however_the_data_dir_is_spelled(sample, tmp_path):
    """Issue 46: the demo's month run again from another folder with the data dir absolute,
    from the clone's folder with it relative (and the archive root relative), and through a
    symlink: every step skipped each time, no Parquet file rewritten (the manifest's
    ingested_at kept), the state records its outputs relative to the data dir, and `status`
    from any folder prints paths that exist."""
    from bgp_congruency.ingest import manifest

    clone = tmp_path / "clone"
    data = writable(sample.data, clone / "data" / "demo")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(clone / "data")
    files = {p: p.stat().st_mtime_ns for p in data.rglob("*.parquet")}
    stamped = sorted((r["slot"], str(r["ingested_at"])) for r in manifest.read(data, MONTH).values())
    base = ["run", "--month", MONTH, *SELECT[:-2], "--min-coverage", "0", "--config", str(sample.config_file), "--json"]
    spellings = [(tmp_path / "elsewhere", str(data), str(ARCHIVE)),
                 (clone, "data/demo", os.path.relpath(ARCHIVE, clone)),
                 (tmp_path, "link/demo", os.path.relpath(ARCHIVE, tmp_path))]
    for cwd, d, archive in spellings:
        r = congruency(*base, "--data-dir", d, "--archive-root", archive, cwd=cwd)
        assert r.returncode == 0, r.stderr[-2000:]
        got = {k: v["status"] for k, v in json.loads(r.stdout)["steps"].items()}
        assert set(got.values()) == {"skipped"}, (cwd, d, got)
    assert {p: p.stat().st_mtime_ns for p in data.rglob("*.parquet")} == files
    assert sorted((r["slot"], str(r["ingested_at"])) for r in manifest.read(data, MONTH).values()) == stamped
    state = json.loads((data / "_runs" / f"month={MONTH}" / "state.json").read_text())
    recorded = [v for s in state["steps"].values() for v in (s.get("outputs") or {}).values() if isinstance(v, str)]
    assert recorded and not [v for v in recorded if os.path.isabs(v)], recorded
    assert {Path(r["output"]).is_absolute() for r in manifest.read(data, MONTH).values()} == {False}
    s = congruency("status", "--month", MONTH, "--data-dir", "link/demo", "--json", cwd=tmp_path)
    outs = json.loads(s.stdout)["outputs"]
    assert outs and all(Path(v).exists() for v in outs.values() if isinstance(v, str)), outs
