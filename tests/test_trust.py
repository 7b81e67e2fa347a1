"""What an analyst can trust: a warehouse held open elsewhere does not cost the month its
reports, and a copied data dir's warehouse says so instead of reading the original.

Real processes on the real 2026-07 sample (route-views2 + route-views6), DuckDB engine.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time

import pytest

from tests.shared import ARCHIVE, needs_data

pytestmark = needs_data


def _run(data, *more):
    return subprocess.run([sys.executable, "-m", "cli.main", "run", "--month", "2026-07", "--days", "30", "--times",
                           "14:00", "--archive-root", str(ARCHIVE), "--data-dir", str(data), "--min-coverage", "0",
                           "--json", *more], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    data = tmp_path_factory.mktemp("trust") / "data"
    r = _run(data)
    assert r.returncode == 0, r.stderr[-2000:]
    return data


def test_a_warehouse_held_open_for_writing_is_one_warning_and_the_reports_still_run(month, tmp_path):
    import json

    data = tmp_path / "data"
    shutil.copytree(month, data, symlinks=True)
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('open', flush=True); time.sleep(60)", str(data / "warehouse.duckdb")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        report = data / "reports" / "month=2026-07" / "report.html"
        before = report.stat().st_mtime_ns
        time.sleep(0.05)
        r = _run(data, "--force", "warehouse")
        assert r.returncode == 0, r.stderr[-2000:]
        s = json.loads(r.stdout)
        assert s["steps"]["warehouse"]["status"] == "warning" and s["steps"]["reports"]["status"] == "done"
        warnings = [ln for ln in r.stderr.splitlines() if ln.startswith("warning:")]
        assert len(warnings) == 1 and f"(pid {holder.pid})" in warnings[0], r.stderr
        assert not [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
        assert report.stat().st_mtime_ns > before
    finally:
        holder.kill()
        holder.wait()
    r = _run(data)  # the holder is gone: the warehouse is refreshed now, the rest skipped
    s = json.loads(r.stdout)
    assert r.returncode == 0 and s["steps"]["warehouse"]["status"] == "done"
    assert s["steps"]["compare"]["status"] == "skipped"


def test_a_copied_data_dir_says_to_rebuild_its_warehouse(month, tmp_path, capsys):
    from cli.main import main as cli

    copy = tmp_path / "copy"
    shutil.copytree(month, copy, symlinks=True)
    assert cli(["query", "--data-dir", str(copy), "--sql", "SELECT count(*) FROM pairs"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {copy.resolve() / 'warehouse.duckdb'}: its views read {month.resolve()}, not this data "
                   f"dir (copied or moved?); run congruency warehouse --data-dir {copy.resolve()} to rebuild them"]
    assert cli(["warehouse", "--data-dir", str(copy)]) == 0
    capsys.readouterr()
    assert cli(["query", "--data-dir", str(copy), "--sql", "SELECT count(*) AS n FROM pairs", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["\"n\"", "2167"]


def test_every_format_prints_the_manifest_and_tells_null_from_empty(month, capsys):
    """The manifest's MAP column `skipped` in csv and table form (csv crashed on it), as the
    same JSON text in both; NULL and '' apart; a large double without an exponent."""
    import json

    from cli.main import main as cli

    sql = ("SELECT slot, skipped, NULL AS nothing, '' AS empty, 1234567.0::DOUBLE AS big FROM manifest "
           "ORDER BY slot")
    assert cli(["query", "--data-dir", str(month), "--sql", sql, "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == '"slot","skipped","nothing","empty","big"'
    assert lines[1] == '"route-views2@20260730T1400","{}",,"",1234567'
    assert cli(["query", "--data-dir", str(month), "--sql", sql]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[3] == "| route-views2@20260730T1400 | {}      | NULL    |       | 1234567 |"
    assert cli(["query", "--data-dir", str(month), "--sql", sql, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["skipped"] == {}  # a JSON object in every format
