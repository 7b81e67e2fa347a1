"""What users hit in their first hour (issue 30): each case as a user meets it, through the
real command in its own process, on a small generated archive or the real 2026-07 sample.

Evidence: `transitions` of a month run beside (or under) a run of the month before equals
the one a plain sequential run publishes, row for row.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bgp_congruency.synth.generate import generate
from tests.support.month import copy_data_dir

BOUND_S = 180
SYNTH_MONTHS = ("2026-01", "2026-02")


def congruency(*args: str, env: dict | None = None, timeout: float = BOUND_S, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, **kw)


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    """Two months of a generated archive (route-views2 + route-views6, one snapshot each)."""
    tmp = tmp_path_factory.mktemp("synth")
    generate(tmp / "archive", seed=7, ases=120, vps=10, months=SYNTH_MONTHS, snapshots_per_month=1,
             ground_truth=False, workers=1)
    (tmp / "cfg.toml").write_text('engine = "duckdb"\nduckdb_threads = 2\nduckdb_memory_limit = "1GB"\n')
    return tmp


def _run_args(synth: Path, data: Path, month: str, *more: str) -> list[str]:
    return ["run", "--month", month, "--days", "1", "--times", "00:00", "--collectors",
            "route-views2,route-views6", "--archive-root", str(synth / "archive"), "--data-dir", str(data),
            "--config", str(synth / "cfg.toml"), "--min-coverage", "0.5", "--json", *more]


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONGRUENCY_PAUSE")}
    env.update(extra)
    return env


def _table(data: Path, table: str, month: str) -> list[dict]:
    from bgp_congruency.common import published

    rows = published.read(data, table, month).to_pylist() if (data / "catalog.sqlite").is_file() else []
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _steps(out: str) -> dict:
    return json.loads(out.splitlines()[-1])["steps"]


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + BOUND_S
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def sequential(synth, tmp_path_factory):
    """The two months run one after the other: the transitions every other order must give."""
    data = tmp_path_factory.mktemp("seq") / "data"
    for m in SYNTH_MONTHS:
        r = congruency(*_run_args(synth, data, m), env=_env())
        assert r.returncode == 0, r.stderr[-2000:]
    rows = _table(data, "transitions", "2026-02")
    assert rows, "the generated months must have transitions for the test to mean anything"
    return data


# --- 1. transitions are computed from the month before as it is, and recorded so -------

@pytest.mark.slow
def test_parallel_months_wait_for_the_month_before(synth, sequential, tmp_path):
    """2026-01 and 2026-02 started together: 2026-02's compare waits for 2026-01's run
    (paused, holding its month, with its tables staged) and then reads its tables. Before
    issue 30 it compared against nothing and recorded done with 0 transitions."""
    data = tmp_path / "data"
    flag = tmp_path / "paused"
    jan = subprocess.Popen([sys.executable, "-m", "bgp_congruency.cli.main", *_run_args(synth, data, "2026-01")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=_env(CONGRUENCY_PAUSE_AT="compare", CONGRUENCY_PAUSE_FILE=str(flag),
                                    CONGRUENCY_PAUSE_S="4"))
    try:
        _wait_for(flag, jan)
        feb = congruency(*_run_args(synth, data, "2026-02"), env=_env())
        assert feb.returncode == 0, feb.stderr[-2000:]
        assert jan.wait(BOUND_S) == 0, jan.communicate()[1][-2000:]
    finally:
        jan.kill()
    assert _table(data, "transitions", "2026-02") == _table(sequential, "transitions", "2026-02")


@pytest.mark.slow
def test_republish_during_compare_is_redone(synth, sequential, tmp_path):
    """2026-01 re-published while 2026-02's compare runs (paused after reading it): 2026-02
    is recorded on the files it read, so `status` calls it stale and the next run redoes it
    (before issue 30 the fingerprint was taken after the step, and the next run skipped it)."""
    data = tmp_path / "data"
    for m in SYNTH_MONTHS:
        assert congruency(*_run_args(synth, data, m), env=_env()).returncode == 0
    flag = tmp_path / "paused"
    feb = subprocess.Popen([sys.executable, "-m", "bgp_congruency.cli.main", *_run_args(synth, data, "2026-02", "--force", "compare")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=_env(CONGRUENCY_PAUSE_AT="compare", CONGRUENCY_PAUSE_FILE=str(flag),
                                    CONGRUENCY_PAUSE_S="6"))
    try:
        _wait_for(flag, feb)
        jan = congruency(*_run_args(synth, data, "2026-01", "--force", "compare"), env=_env())
        assert jan.returncode == 0, jan.stderr[-2000:]
        out, err = feb.communicate(timeout=BOUND_S)
        assert feb.returncode == 0, err[-2000:]
    finally:
        feb.kill()
    status = congruency("status", "--month", "2026-02", "--data-dir", str(data), "--config",
                        str(synth / "cfg.toml"), "--json", env=_env())
    assert _steps(status.stdout)["compare"]["status"] == "stale"
    again = congruency(*_run_args(synth, data, "2026-02"), env=_env())
    assert again.returncode == 0, again.stderr[-2000:]
    assert _steps(again.stdout)["compare"]["status"] == "done"
    assert _table(data, "transitions", "2026-02") == _table(sequential, "transitions", "2026-02")
    status = congruency("status", "--month", "2026-02", "--data-dir", str(data), "--config",
                        str(synth / "cfg.toml"), "--json", env=_env())
    assert {s["status"] for s in _steps(status.stdout).values()} == {"done"}


# --- 2. readers on a read-only data dir --------------------------------------------------

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
                          env=_env())


@pytest.fixture(scope="module")
def readonly_ok(tmp_path_factory):
    probe = tmp_path_factory.mktemp("probe")
    r = subprocess.run(["unshare", "--mount", "sh", "-c",
                        'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && ! touch "$0/x"', str(probe)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"no mount namespace here (root and unshare needed): {r.stderr.strip()[:200]}")


@pytest.mark.slow
@pytest.mark.parametrize("args", READERS, ids=lambda a: " ".join(a[:2]))
def test_readers_on_a_read_only_mount(readonly_ok, sequential, tmp_path, args):
    """Each reader answers from a read-only data dir exactly what it answers from the
    writable one (before issue 30: `error: .../_tables.gate.lock: Read-only file system`)."""
    pairs = _table(sequential, "pairs", "2026-02")
    vp, dest = str(pairs[0]["vp_asn"]), str(pairs[0]["dest_asn"])
    ro_out, rw_out = tmp_path / "ro", tmp_path / "rw"
    ro_out.mkdir(), rw_out.mkdir()
    fill = lambda out: [a.format(vp=vp, dest=dest, out=out) for a in args]  # noqa: E731
    ro = _readonly(sequential, *fill(ro_out))
    assert ro.returncode == 0, ro.stderr
    rw = congruency(*fill(rw_out), "--data-dir", str(sequential), env=_env())
    assert rw.returncode == 0, rw.stderr
    assert ro.stdout == rw.stdout
    for f in rw_out.iterdir():
        assert (ro_out / f.name).stat().st_size > 0


def test_writer_on_a_read_only_mount_says_so(readonly_ok, sequential):
    r = _readonly(sequential, "sensitivity", "--month", "2026-02", "--variants", "min_coverage=0.8")
    assert r.returncode == 1
    (line,) = r.stderr.strip().splitlines()[-1:]
    assert "read-only file system: `congruency sensitivity` writes there" in line, r.stderr
    assert "Traceback" not in r.stderr


# --- 3. each family's answer on its own; advise and export agree ---------------------------

@pytest.fixture(scope="module")
def sample(tmp_path_factory, ingested_2026, config):
    """The real 2026-07 sample compared (DuckDB) and its hints published."""
    from bgp_congruency.pipeline import job
    from bgp_congruency.selector.table import publish as publish_hints

    data = tmp_path_factory.mktemp("sample") / "data"
    (data / "rib_entries").mkdir(parents=True)
    for sub in ("rib_entries", "manifest"):  # copies: a query reads only inside its data dir
        shutil.copytree(ingested_2026 / sub / "month=2026-07", data / sub / "month=2026-07")
    cfg = config.with_overrides(data_dir=data, engine="duckdb")
    [res] = job.compare_months(cfg, ["2026-07"])
    assert res.error is None, res.error
    publish_hints(cfg)
    return cfg


@pytest.mark.slow
def test_an_uncovered_family_keeps_the_other_path(sample, tmp_path):
    """1403 -> 8.8.8.8 has an IPv4 path (1403 15169); the host's IPv6 address, which no
    IPv6 prefix of the month covers, must not drop it (before issue 30: v4_path None)."""
    from bgp_congruency.selector.advice import advise

    [v4only] = advise(sample, "1403", "8.8.8.8")["hints"]
    assert v4only["v4_path"] == [1403, 15169]
    [both] = advise(sample, "1403", ["8.8.8.8", "2001:4860:4860::8888"])["hints"]
    assert (both["v4_path"], both["v6_path"], both["prefix_v4"]) == ([1403, 15169], None, "8.8.8.0/24")
    assert both["hint_class"] == "unknown" and both["mode"] == "single-path" and both["primary_afi"] == 4
    assert both["reason"] == ("no IPv6 prefix of 2026-07 covers 2001:4860:4860::8888/128: "
                              "only IPv4 has a path")
    assert both["mptcp_flags_v4"] == "subflow" and both["mptcp_flags_v6"] is None
    ends = tmp_path / "ends.toml"
    ends.write_text('[[endpoint]]\nname = "dns"\nipv4 = "8.8.8.8"\nipv6 = "2001:4860:4860::8888"\n')
    [ep] = advise(sample, "1403", endpoints=ends)["hints"]
    assert (ep["v4_path"], ep["reason"]) == ([1403, 15169], both["reason"])


def test_export_configures_what_advise_says(sample, tmp_path):
    """`export --format mptcp` writes the single-path config `advise` describes (before
    issue 30: exit 3, "no known path")."""
    r = congruency("export", "--format", "mptcp", "--from", "1403", "--to", "8.8.8.8", "--interface",
                   "eth0=192.0.2.10/24", "--interface", "eth1=2001:db8::10/64", "--data-dir",
                   str(sample.data_dir), "--out", str(tmp_path / "c.sh"), env=_env())
    assert r.returncode == 0, r.stderr
    script = (tmp_path / "c.sh").read_text()
    assert "ip mptcp endpoint add 192.0.2.10 dev eth0 id 1 subflow" in script
    assert "2001:db8::10" not in script.split("# -- apply")[-1]


def test_advise_and_export_agree_on_every_hint(sample):
    """Over every hint of the sample month: the MPTCP plan configures exactly the families
    the advice gives subflow flags, with those flags; a hint with no path is refused."""
    from bgp_congruency.selector.exports import mptcp
    from bgp_congruency.selector.exports.local import Interface
    from bgp_congruency.selector.exports.validate import Unanswerable

    from bgp_congruency.common import published

    rows = published.read(sample.data_dir, "hints", "2026-07").to_pylist()
    ifaces = [Interface("eth0", "192.0.2.10", None, 24), Interface("eth1", "2001:db8::10", None, 64)]
    assert len(rows) == 2167
    seen = set()
    for h in rows:
        flags = {f: h[f"mptcp_flags_v{f}"] for f in (4, 6) if h[f"mptcp_flags_v{f}"] is not None}
        if not flags:
            with pytest.raises(Unanswerable):
                mptcp.endpoints_for(h, ifaces)
            continue
        plan = mptcp.endpoints_for(h, ifaces)
        got = {4 if ":" not in e.address else 6: e.flags for e in plan.endpoints}
        assert got == flags, h
        assert (len(got) == 1) == (h["mode"] == "single-path"), h
        seen.add((h["hint_class"], h["mode"]))
    assert {m for _c, m in seen} == {"aggregate", "backup", "single-path"}


# --- 4. every config value checked when read; --days the same in every command ------------

BAD_CONFIG = [
    ("days = [0, 40]", "days: expected days of the month, 1 to 31, got [0, 40]"),
    ('times = ["25:00"]', 'times: expected UTC times "HH:MM" (00:00 to 23:59), got [\'25:00\']'),
    ("plan_download_mbit_s = 0", "plan_download_mbit_s: expected a number above 0, got 0"),
    ("data_dir = 5", "data_dir: expected a text, got 5"),
    ('collectors = ["route-views2", ""]', "collectors: expected a text, got ['route-views2', '']"),
    ("collectors = []", "collectors: expected a list of collector names or sets"),
    ("[method]\nmin_coverage = 2", "[method] min_coverage: expected a number from 0 to 1, got 2"),
    ("concurrency = 0", "concurrency: expected a whole number of at least 1, got 0"),
    ("retries = -1", "retries: expected a whole number of at least 0, got -1"),
    ('sensitivity = "yes"', "sensitivity: expected true or false, got 'yes'"),
    ("[method]\nreserved_asns = [[10, 5]]", "[method] reserved_asns: expected [low, high] ASN ranges"),
    ('backend = "nope"', 'backend: expected one of "native", "bgpdump", "pybgpstream", got \'nope\''),
    ("duckdb_threads = 0", "duckdb_threads: expected a whole number of at least 1, got 0"),
    ('archive_roots = { ris = 5 }', "archive_roots: expected a table of project roots"),
]


def test_an_unknown_archive_project_is_one_line(tmp_path):
    (tmp_path / "c.toml").write_text('archive_roots = { routeview = "https://mirror.example.net" }\n')
    r = congruency("plan", "--month", "2026-07", "--config", str(tmp_path / "c.toml"), "--data-dir",
                   str(tmp_path / "d"), env=_env())
    assert (r.returncode, r.stderr) == (2, "error: archive_roots: unknown project 'routeview' "
                                           "(the catalogue's: ris, routeviews)\n")


@pytest.mark.parametrize("text,message", BAD_CONFIG, ids=[t.split("\n")[-1] for t, _ in BAD_CONFIG])
@pytest.mark.parametrize("command", [("status", "--month", "2026-07"), ("plan", "--month", "2026-07")])
def test_a_bad_config_value_is_one_line_naming_file_and_key(tmp_path, text, message, command):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text + "\n")
    r = congruency(*command, "--config", str(cfg), "--data-dir", str(tmp_path / "d"), env=_env())
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.startswith(f"error: {cfg}: {message}"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_config_values_in_a_friendly_spelling_are_read_as_meant(tmp_path):
    """A text names one collector (or several with commas, as on the command line): before
    issue 30 `collectors = "route-views2"` was read letter by letter ("unknown collector 'r'")."""
    from bgp_congruency.common.config import load

    for text, want in (('collectors = "route-views2"', ("route-views2",)),
                       ('collectors = "route-views2, rrc00"', ("route-views2", "rrc00")),
                       ('collectors = "all"', ("all",))):
        (tmp_path / "c.toml").write_text(text + "\ntolerance_minutes = 90.0\n")
        cfg = load(tmp_path / "c.toml")
        assert cfg.collectors == want and cfg.tolerance_minutes == 90 and isinstance(cfg.tolerance_minutes, int)
    (tmp_path / "c.toml").write_text('collectors = "route-views2"\n')
    r = congruency("plan", "--month", "2026-07", "--config", str(tmp_path / "c.toml"), "--data-dir",
                   str(tmp_path / "d"), "--json", env=_env())
    assert r.returncode == 0, r.stderr
    assert sorted(json.loads(r.stdout)["months"][0]["collectors"]) == ["route-views2"]


@pytest.mark.parametrize("command", [
    ("plan", "--month", "2026-02", "--days", "30"),
    ("run", "--months", "2026-01..2026-03", "--days", "31"),
    ("ingest", "--month", "2026-02", "--days", "29"),
])
def test_a_day_the_month_does_not_have_is_refused_alike(tmp_path, command):
    r = congruency(*command, "--data-dir", str(tmp_path / "d"), env=_env())
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    day = command[-1]
    assert r.stderr == (f"error: --days: 2026-02 has 28 days, not {day} "
                        "(choose days every month of the range has, e.g. 1-28)\n")


@pytest.mark.parametrize("command", [("run", "--month", "2099-01"), ("ingest", "--month", "2099-01"),
                                     ("plan", "--months", "2099-01..2099-03")])
def test_a_future_month_is_refused(tmp_path, command):
    r = congruency(*command, "--data-dir", str(tmp_path / "d"), env=_env())
    assert r.returncode == 2 and r.stderr.startswith(f"error: {command[1]}: 2099-01 is in the future (this is "), r.stderr
    assert not (tmp_path / "d").exists()


# --- 5. data dirs whose names have glob characters -----------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", ["run[1]", "a*b?{c,d}"])
def test_a_data_dir_with_glob_characters(synth, sequential, tmp_path, name):
    """Every step and reader takes the folder literally (before issue 30: the hints step
    failed with "No files found that match the pattern", advise with a traceback)."""
    data = tmp_path / name
    r = congruency(*_run_args(synth, data, "2026-01"), env=_env())
    assert r.returncode == 0, r.stderr[-2000:]
    assert {s["status"] for s in _steps(r.stdout).values()} == {"done"}
    for table in ("pairs", "hints"):
        assert _table(data, table, "2026-01") == _table(sequential, table, "2026-01")
    pair = _table(data, "pairs", "2026-01")[0]
    for args in (("advise", "--from", str(pair["vp_asn"]), "--to", str(pair["dest_asn"]), "--month", "2026-01", "--json"),
                 ("query", "vp_congruency", "--month", "2026-01", "--format", "csv"),
                 ("export", "--format", "jsonl", "--month", "2026-01")):
        got = congruency(*args, "--data-dir", str(data), env=_env())
        want = congruency(*args, "--data-dir", str(sequential), env=_env())
        assert got.returncode == 0 and "Traceback" not in got.stderr, got.stderr
        assert got.stdout == want.stdout, args


def test_the_spark_engine_takes_such_a_data_dir_literally(synth, sequential, tmp_path, spark):
    """The same month compared on Spark in `run[1]{a,b}`: the tables DuckDB publishes elsewhere."""
    from dataclasses import replace

    from bgp_congruency.common.config import load
    from bgp_congruency.pipeline import job

    data = tmp_path / "run[1]{a,b}"
    (data / "rib_entries").mkdir(parents=True)
    (data / "manifest").mkdir()
    for sub in ("rib_entries", "manifest"):
        os.symlink(sequential / sub / "month=2026-01", data / sub / "month=2026-01")
    cfg = load(synth / "cfg.toml").with_overrides(data_dir=data, engine="spark")
    cfg = replace(cfg, method=replace(cfg.method, min_coverage=0.5))
    [res] = job.compare_months(cfg, ["2026-01"], spark=spark)
    assert res.error is None, res.error
    for table in ("pairs", "paths", "vps", "divergence", "month_summary"):
        assert _table(data, table, "2026-01") == _table(sequential, table, "2026-01"), table


# --- 6. Ctrl-C --------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("point", ["ingest", "compare"])
def test_ctrl_c_is_one_line_recorded_interrupted_and_resumed(synth, sequential, tmp_path, point):
    """SIGINT to the command's process group (what a terminal's Ctrl-C does) while a step
    works: one line, exit 130, the step recorded `interrupted` (not failed), `status` exit 0,
    and the next run finishes the month with the tables a run without interruption gives
    (the compare's from the partitions the interrupted one finished)."""
    data, flag = tmp_path / "data", tmp_path / "paused"
    proc = subprocess.Popen([sys.executable, "-m", "bgp_congruency.cli.main", *_run_args(synth, data, "2026-01")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=_env(CONGRUENCY_PAUSE_AT=point, CONGRUENCY_PAUSE_FILE=str(flag), CONGRUENCY_PAUSE_S="3"))
    try:
        _wait_for(flag, proc)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=BOUND_S)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "error: interrupted; `congruency run` stopped (run it again to resume)"
    assert "Traceback" not in err and out == ""
    st = congruency("status", "--month", "2026-01", "--data-dir", str(data), "--json", env=_env())
    assert st.returncode == 0, st.stderr
    rec = _steps(st.stdout)[point]
    assert rec["status"] == "interrupted" and rec["error"].startswith("Ctrl-C at "), rec
    again = congruency(*_run_args(synth, data, "2026-01"), env=_env())
    assert again.returncode == 0, again.stderr[-2000:]
    assert _steps(again.stdout)[point]["status"] == "done"
    if point == "compare":  # interrupted with every partition done: the next run computes none again
        assert "partitions' cleaning and 1 of 1 partitions' tables are reused" in again.stderr, again.stderr[-2000:]
    for table in ("pairs", "paths", "month_summary"):
        assert _table(data, table, "2026-01") == _table(sequential, table, "2026-01")


# --- 8. one word for each collector state ------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("month", ["2009-06", "2014-06", "2026-07"])
def test_catalogue_list_and_plan_count_alike(tmp_path, month):
    """`catalogue list` counted collectors no source dates (first seen 2025-2026) as active
    in 2009-06 (30) where `plan` said 22 active + 8 probed."""
    lst = congruency("catalogue", "list", "--month", month, "--json", env=_env())
    rows = json.loads(lst.stdout)["collectors"]
    import calendar

    last = calendar.monthrange(*map(int, month.split("-")))[1]  # the whole month, as `list` sees it
    plan = congruency("plan", "--month", month, "--collectors", "all", "--days", f"1-{last}", "--data-dir",
                      str(tmp_path / "d"), "--json", env=_env())
    [m] = json.loads(plan.stdout)["months"]
    probes = sorted(r["name"] for r in rows if r["state"] == "probe")
    active = sorted(r["name"] for r in rows if r["state"] in ("active", "partial"))
    assert (active, probes) == (sorted(m["collectors"]), sorted(m["probes"]))
    assert {r["state"] for r in rows} <= {"active", "partial", "probe"}
    text = congruency("catalogue", "list", "--month", month, env=_env()).stdout.strip().splitlines()[-1]
    assert text.startswith(f"{len(active)} collector(s) active in {month}")
    assert (f", {len(probes)} to probe" in text) == bool(probes)


# --- 9. query streams its result -------------------------------------------------------------

def _peak_rss_mb(*args: str) -> tuple[int, subprocess.CompletedProcess]:
    """Peak RSS (MiB) of `congruency ARGS` alone, measured by a parent that runs nothing else."""
    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
            "stderr=subprocess.PIPE, text=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, "
            "r.returncode); sys.stderr.write(r.stderr)")
    r = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "bgp_congruency.cli.main", *args], capture_output=True,
                       text=True, timeout=BOUND_S, env=_env())
    mb, rc = map(int, r.stdout.split())
    return mb, subprocess.CompletedProcess(args, rc, "", r.stderr)


@pytest.fixture(scope="module")
def sample_wh(sample):
    return str(sample.data_dir)


@pytest.mark.slow
def test_query_streams_a_large_result(sample_wh, tmp_path):
    """`select * from rib_entries` (843,626 rows) as csv: memory for a batch, not the result
    (before issue 30: 958 MiB peak here against 130 for `select 1`; streamed about 265)."""
    base, r = _peak_rss_mb("query", "--sql", "select 1", "--format", "csv", "--data-dir", sample_wh)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "all.csv"
    peak, r = _peak_rss_mb("query", "--sql", "select * from rib_entries", "--format", "csv", "--out", str(out),
                           "--data-dir", sample_wh)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        assert sum(1 for _ in f) == 1 + 679_347 + 164_279  # bgpdump -m lines of the two RIBs
    assert peak - base < 350, (peak, base)


def test_query_table_shows_a_bounded_number_of_rows(sample_wh):
    r = congruency("query", "--sql", "select prefix, as_path from rib_entries", "--data-dir", sample_wh, env=_env())
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1] == "(843,626 rows, the first 40 shown; --format csv or json gives them all)"
    assert len([x for x in lines if x.startswith("| ")]) == 1 + 40
    small = congruency("query", "--sql", "select 1 as a union all select 2", "--data-dir", sample_wh, env=_env())
    assert small.stdout.splitlines()[-1] == "(2 rows)"


@pytest.mark.parametrize("sql,message", [
    ("SELECT 1; SELECT 2", "--sql: 2 statements given; one --sql runs one statement (run each with its own --sql)"),
    ("SELEC 1", "--sql: Parser Error: syntax error at or near \"SELEC\""),
    ("SELECT * FROM nope", "--sql: Catalog Error: Table with name nope does not exist!"),
])
def test_query_sql_errors_say_sql_alike(sample_wh, sql, message):
    r = congruency("query", "--sql", sql, "--data-dir", sample_wh, env=_env())
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr.startswith(f"error: {message}"), r.stderr
    assert len(r.stderr.splitlines()) == 1


# --- 10. operator configs ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def hintmonth(tmp_path_factory):
    from tests.support import hintdata

    d = tmp_path_factory.mktemp("hintmonth")
    hintdata.publish_synthetic(d)
    return d


HOST100 = ["--to", "10.0.100.1", "--to", "2001:db8:64::1"]  # disjoint from AS10 (tests/support/hintdata.py)


@pytest.mark.parametrize("argv,message", [
    (["--format", "mptcp", "--interface", "eth0=192.0.2.0/24", "--interface", "eth1=2001:db8:ff::10/64"],
     "error: --interface eth0: address 192.0.2.0 is the network address of 192.0.2.0/24, not a host's"),
    (["--format", "mptcp", "--interface", "eth0=192.0.2.255/24", "--interface", "eth1=2001:db8:ff::10/64"],
     "error: --interface eth0: address 192.0.2.255 is the broadcast address of 192.0.2.0/24, not a host's"),
    (["--format", "mptcp", "--interface", "eth0=192.0.2.10/24", "--interface", "eth1=2001:db8:ff::/64"],
     "error: --interface eth1: address 2001:db8:ff:: is the network address of 2001:db8:ff::/64, not a host's"),
    (["--format", "mpt", "--interface", "eth0=192.0.2.10@192.0.2.1", "--interface",
      "eth1=2001:db8:ff::10@2001:db8:ff::1", "--tunnel-local", "10.99.0.1", "--tunnel-remote", "10.99.0.1"],
     "error: the --to host: its tunnel address 10.99.0.1 is --tunnel-local's: the two ends of a tunnel need "
     "different addresses"),
    (["--format", "mptcp", "--interface", "eth0=192.0.2.10/24", "--interface", "eth1=2001:db8:ff::10/64",
      "--out", "/nonexistent/dir/o.sh"],
     "error: --out: no such folder /nonexistent/dir (it is not created: a typo would otherwise leave files "
     "where nobody looks)"),
])
def test_operator_config_mistakes_are_refused(hintmonth, argv, message):
    r = congruency("export", "--from", "10", *HOST100, *argv, "--data-dir", str(hintmonth), env=_env())
    assert (r.returncode, r.stdout, r.stderr) == (2, "", message + "\n")
    assert not Path("/nonexistent").exists()


def test_a_server_config_for_other_addresses_is_warned(hintmonth):
    ifaces = ["--interface", "eth0=192.0.2.10/24", "--interface", "eth1=2001:db8:ff::10/64"]
    r = congruency("export", "--format", "mptcp", "--role", "server", "--from", "10", *HOST100, *ifaces,
                   "--data-dir", str(hintmonth), env=_env())
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        "warning: --role server: the hint was computed for the IPv4 address 10.0.100.1, but this server's IPv4 "
        "interfaces are eth0 192.0.2.10; its clients' paths may differ",
        "warning: --role server: the hint was computed for the IPv6 address 2001:db8:64::1, but this server's IPv6 "
        "interfaces are eth1 2001:db8:ff::10; its clients' paths may differ"]
    mine = ["--interface", "eth0=10.0.100.1/24", "--interface", "eth1=2001:db8:64::1/64"]
    r = congruency("export", "--format", "mptcp", "--role", "server", "--from", "10", *HOST100, *mine,
                   "--data-dir", str(hintmonth), env=_env())
    assert (r.returncode, r.stderr) == (0, "")


def test_export_help_says_the_script_replaces_the_endpoints():
    r = congruency("export", "--help", env=_env())
    assert "replaces every MPTCP endpoint of the network namespace" in " ".join(r.stdout.split())


# --- 11. logs that are not a terminal ---------------------------------------------------------

@pytest.mark.slow
def test_a_log_off_a_terminal_has_one_line_per_event_and_no_wrapping(synth, tmp_path):
    """stderr to a pipe (cron, Airflow): every output's path on its label's line however long
    (before issue 30 the summary wrapped at 80 columns), and progress as one stamped line per
    event in the order things happened (rich drew every bar at the end)."""
    import re

    data = tmp_path / ("a-data-dir-whose-path-is-longer-than-eighty-columns-on-its-own-" + "x" * 40)
    r = congruency(*[a for a in _run_args(synth, data, "2026-01") if a != "--json"], env=_env(COLUMNS="80"))
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
def test_sensitivity_summary_says_undefined_as_the_page_does(sample, tmp_path):
    """grouping=per_collector on route-views2 + route-views6 leaves no VP dual-stacked: no
    pairs, so the figure is undefined (before issue 30 the summary said +0.0 .. +0.0)."""
    data = tmp_path / "data"
    copy_data_dir(sample.data_dir, data)
    r = congruency("sensitivity", "--month", "2026-07", "--variants", "grouping,min_coverage=0.5",
                   "--data-dir", str(data), env=_env())
    assert r.returncode == 0, r.stderr
    [line] = [x for x in r.stderr.splitlines() if x.split()[:1] == ["grouping"]]
    assert line.split() == ["grouping", "undefined", "(undefined:", "per_collector:", "no", "pairs)"], line
    [line] = [x for x in r.stderr.splitlines() if x.split()[:1] == ["min_coverage"]]
    assert " .. " in line and "undefined" not in line


# --- 12. plan does not size collectors from cut samples -----------------------------------------

def test_plan_does_not_size_a_collector_from_a_cut_sample(ingested_2026, tmp_path):
    """The sample RIBs are the first 1-2 MiB of full dumps (MANIFEST.md): IPv4 up to
    23.105.0.0/20, IPv6 up to 2001:da8:7035::/48. Ingest keeps each file's address span
    in its footer; plan sizes such collectors by its assumption, not by 15 MB a month."""
    from bgp_congruency.ingest.writer import address_span, partial

    files = sorted((ingested_2026 / "rib_entries" / "month=2026-07").rglob("*.parquet"))
    spans = {f.parent.name: address_span(f) for f in files}
    assert spans == {"collector=route-views2": {"v4": 23, "v6": None},
                     "collector=route-views6": {"v4": None, "v6": 0x2001}}
    assert all(partial(s) for s in spans.values())
    assert not partial({"v4": 223, "v6": None}) and not partial({"v4": None, "v6": 0x2C0F}) and not partial(None)
    # regional tables are not cut: AFRINIC's IPv4 tops out at 197, ARIN's IPv6 at 2620::
    assert not partial({"v4": 197, "v6": None}) and not partial({"v4": None, "v6": 0x2620})
    r = congruency("plan", "--month", "2026-08", "--collectors", "route-views2,route-views6", "--data-dir",
                   str(ingested_2026), "--json", env=_env())
    plan = json.loads(r.stdout)
    assert plan["assumed"] == ["route-views2", "route-views6"] and plan["rates"]["sizes_from_data_dir"] == []
    assert plan["rates"]["partial_samples"] == ["route-views2", "route-views6"]
    assert plan["months"][0]["download_bytes"] > 500e6  # 10 full RIBs, not 10 x 1.5 MB


# --- 12. small things ------------------------------------------------------------------------

def test_version_is_the_provenance_version():
    from bgp_congruency.pipeline.provenance import method_version, project_version

    r = congruency("--version", env=_env())
    assert (r.returncode, r.stdout) == (0, f"congruency {project_version()} (method {method_version()})\n")


def test_query_list_gives_whole_sentences():
    r = congruency("query", "--list", env=_env())
    [line] = [x for x in r.stdout.splitlines() if x.startswith("divergence_ases ")]
    assert "over the month or for one VP: on how many pairs each is IPv4-only or IPv6-only, and for how many VPs." \
        in line


def test_compare_help_names_every_table_it_publishes():
    from bgp_congruency.pipeline.job import TABLE_ORDER

    text = " ".join(congruency("compare", "--help", env=_env()).stdout.split())
    assert f"Publishes {', '.join(TABLE_ORDER)} " in text


def test_status_names_the_data_dir_it_looked_in(tmp_path):
    r = congruency("status", "--month", "2026-07", cwd=tmp_path, env=_env(PYTHONPATH=str(Path(__file__).resolve().parents[1])))
    assert r.returncode == 1
    assert r.stderr == (f"error: month 2026-07: never run in {tmp_path / 'data'} (no state, no manifest there; "
                        "another --data-dir? `make demo` writes data/demo)\n")


def test_trend_report_of_an_ingested_only_data_dir_is_one_line(ingested_2026, tmp_path):
    data = tmp_path / "data"
    for sub in ("rib_entries", "manifest"):  # ingested, nothing compared (the fixture's dir is shared)
        shutil.copytree(ingested_2026 / sub, data / sub)
    r = congruency("report", "--trend", "--out", str(tmp_path / "t.html"), "--data-dir", str(data), env=_env())
    assert r.returncode == 1 and not (tmp_path / "t.html").exists()
    assert r.stderr == (f"error: {data}: no published tables of any month to show a trend of "
                        "(run congruency run for a month first)\n")


@pytest.mark.slow
def test_the_default_free_threshold_has_its_own_word(synth, tmp_path):
    """`--default-free-share` (the VPs' threshold, METHOD.md 5); `--min-coverage` stays as its
    old name; "coverage" is the snapshot policy's word alone."""
    for cmd in ("run", "compare"):
        text = " ".join(congruency(cmd, "--help", env=_env()).stdout.split())
        assert "--default-free-share SHARE, --min-coverage SHARE" in text
    bad = congruency(*_run_args(synth, tmp_path / "d", "2026-01")[:-3], "--default-free-share", "2", env=_env())
    assert bad.stderr == "error: --default-free-share (--min-coverage): expected a number from 0 to 1, got 2.0\n"
    a = congruency(*_run_args(synth, tmp_path / "a", "2026-01")[:-3], "--default-free-share", "0.5", "--json",
                   env=_env())
    b = congruency(*_run_args(synth, tmp_path / "b", "2026-01")[:-3], "--min-coverage", "0.5", "--json", env=_env())
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert _table(tmp_path / "a", "pairs", "2026-01") == _table(tmp_path / "b", "pairs", "2026-01")


def test_the_package_metadata_builds_without_the_licence_warning():
    """setuptools warns (and stops building on 2027-02-18) on `license = { text = ... }`:
    the SPDX string needs setuptools >= 77."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT"
    assert any(r.startswith("setuptools>=77") for r in meta["build-system"]["requires"])


@pytest.mark.slow
def test_the_readme_examples_on_the_demo_run_as_written(sample, tmp_path):
    """Every `congruency ...` line of the README and docs/ that names data/demo, run as written on a
    copy of the demo month (the README's own paths mapped to this machine's): exit 0, no
    traceback (before issue 30, `status --month 2026-07` after `make demo` said "never run")."""
    import re
    import shlex

    from tests.support.data import DATA

    root = Path(__file__).resolve().parents[1]
    demo = tmp_path / "demo"
    copy_data_dir(sample.data_dir, demo)
    text = "\n".join(p.read_text() for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))])
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        pending = ""
        for cmd in block.replace("\\\n", " ").splitlines():
            pending += cmd + "\n"
            try:  # a quoted argument may go on over several lines (--sql "...")
                words = shlex.split(pending, comments=True)
            except ValueError:
                continue
            pending = ""
            if words and words[0] in ("congruency", ".venv/bin/congruency") and "data/demo" in words:
                lines.append(words)
    assert len(lines) >= 12
    # the examples a newcomer tries right after `make demo` are among them
    assert {"status", "advise", "query", "report", "export", "sensitivity"} <= {w[1] for w in lines}
    for words in lines:
        args = [w.replace("data/demo", str(demo)).replace("../shared/data", str(DATA)) for w in words[1:]]
        r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", *args], capture_output=True, text=True, cwd=tmp_path,
                           timeout=BOUND_S, env=_env(PYTHONPATH=str(root)))
        assert r.returncode == 0 and "Traceback" not in r.stderr, (words, r.stderr[-1500:])
