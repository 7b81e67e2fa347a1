"""The study's scope as one backfill: `congruency run --months ... --collectors all` across
collectors that start, stop and miss single snapshots, and the real sample with every
collector of the shipped catalogue.

Synthetic: a generated archive (route-views2, route-views6, rrc00, rrc01) for 2009-08..2009-12
and a catalogue where rrc01 runs 2009-09..2009-10 (its folders outside that are removed, as a
real archive has none), rrc02 retired in 2008, and `newix` has no sourced start, first seen
2009-12, and no data at all. Two single snapshots are deleted. Five months hold every case: a
collector before its start, in its first and last month and after its end, one never seen
before its evidence and missing after, and a month with and without a deleted snapshot. The expected status of every
slot is written out below from those facts; the pairs of two months are checked against the
pure-Python reference of the method on the ingested rows, and `transitions` of every month
against the reference's transitions from the month before's published tables.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bgp_congruency.common.months import parse_month_range, previous_month
from bgp_congruency.common.params import MethodParams, load_groups
from bgp_congruency.common.tables import MONTH_TABLES, TABLES
from bgp_congruency.congruency import reference
from bgp_congruency.ingest import manifest
from bgp_congruency.ingest.catalogue import MRT_BYTES_PER_ENTRY
from bgp_congruency.lake import published as pub
from bgp_congruency.runner import plan as P
from bgp_congruency.runner import state as S
from bgp_congruency.synth.generate import generate
from tests.support.cli import congruency
from tests.support.computed import writable
from tests.support.data import ARCHIVE, needs_data
from tests.support.month import canon, compute_reference, published

MONTHS = parse_month_range("2009-08..2009-12")
RRC01 = parse_month_range("2009-09..2009-10")
DELETED = {("rrc00", "2009-10", 2), ("route-views6", "2009-11", 1)}
CATALOGUE = '''
[projects.routeviews]
root = "https://archive.routeviews.org"
layout = "routeviews"
rib_hours = [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22]

[projects.ris]
root = "https://data.ris.ripe.net"
layout = "ris"
rib_hours = [0, 8, 16]

[collectors.route-views2]
project = "routeviews"
afis = [4]
active_from = "2001-10-30T20:32Z"

[collectors.route-views6]
project = "routeviews"
afis = [6]
active_from = "2003-05-03T12:29Z"

[collectors.newix]
project = "routeviews"
evidence_from = "2009-12"

[collectors.rrc00]
project = "ris"
active_from = "1999-10"

[collectors.rrc01]
project = "ris"
active_from = "2009-09"
active_until = "2009-10"

[collectors.rrc02]
project = "ris"
active_from = "2001-03"
active_until = "2008-10"
'''


def expected(month: str) -> dict[str, str]:
    """slot -> status, from the facts in the module docstring."""
    out = {}
    y, m = month.split("-")
    for col in ("route-views2", "route-views6", "newix", "rrc00", "rrc01", "rrc02"):
        for day in (1, 2):
            slot = f"{col}@{y}{m}{day:02d}T0000"
            if col == "rrc02" or (col == "rrc01" and month not in RRC01):
                out[slot] = "inactive"
            elif col == "newix":
                out[slot] = "missing" if month >= "2009-12" else "inactive"
            elif (col, month, day) in DELETED:
                out[slot] = "missing"
            else:
                out[slot] = "ok"
    return out


def _run(data: Path, archive: Path, cfg: Path, *more: str) -> list[dict]:
    r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "run", "--months", f"{MONTHS[0]}..{MONTHS[-1]}",
                        "--collectors", "all", "--days", "1-2", "--times", "00:00", "--archive-root", str(archive),
                        "--data-dir", str(data), "--config", str(cfg), "--min-coverage", "0.5", "--json", *more],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return [json.loads(line) for line in r.stdout.splitlines()]


@pytest.fixture(scope="module")
def backfill(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("backfill")
    archive, data = tmp / "archive", tmp / "data"
    generate(archive, seed=5, ases=100, vps=10, months=MONTHS, snapshots_per_month=2, ground_truth=False)
    for m in MONTHS:
        if m not in RRC01:
            shutil.rmtree(archive / "rrc01" / m.replace("-", "."))
    for col, m, day in DELETED:
        name = f"{m.replace('-', '')}{day:02d}.0000"
        path = (archive / col / "bgpdata" / m.replace("-", ".") / "RIBS" / f"rib.{name}.bz2" if col.startswith("route")
                else archive / col / m.replace("-", ".") / f"bview.{name}.gz")
        path.unlink()
    (tmp / "cat.toml").write_text(CATALOGUE)
    (tmp / "cfg.toml").write_text(f'catalogue = "{tmp / "cat.toml"}"\nengine = "duckdb"\nduckdb_threads = 2\n'
                                  'min_snapshot_share = 0.5\nmin_project_share = 0.5\n')
    first = _run(data, archive, tmp / "cfg.toml")
    return {"data": data, "archive": archive, "cfg": tmp / "cfg.toml", "first": first}


@pytest.mark.slow
def test_every_month_publishes_with_the_expected_collectors(backfill):
    data = backfill["data"]
    assert [s["month"] for s in backfill["first"]] == MONTHS
    for s in backfill["first"]:
        m = s["month"]
        assert s["ok"], s
        assert {st["status"] for st in s["steps"].values()} == {"done"}, s["steps"]
        got = {r["slot"]: r["status"] for r in pq.read_table(data / "manifest" / f"month={m}").to_pylist()}
        assert got == expected(m), m
        want = expected(m)
        assert s["coverage"]["planned"] == sum(v != "inactive" for v in want.values())
        assert s["coverage"]["ok"] == sum(v == "ok" for v in want.values())
        assert sorted(s["coverage"]["missing"]) == sorted(k for k, v in want.items() if v == "missing")
        # Only the collectors that were ok that month are in its routes.
        cols = {p.name.split("=", 1)[1] for p in (data / "routes" / f"month={m}").iterdir()}
        assert cols == {k.split("@")[0] for k, v in want.items() if v == "ok"}, m


@pytest.mark.slow
def test_every_month_equals_the_reference_where_collectors_come_and_go(backfill):
    """Every table of the compare, in every month of the backfill, as the pure-Python
    reference computes it from each dump decoded again: among them 2009-10 (rrc01 running,
    one rrc00 snapshot missing) and 2009-11 (rrc01 retired, one route-views6 snapshot
    missing)."""
    data = backfill["data"]
    params = MethodParams(min_coverage=0.5, groups=load_groups())
    for m in MONTHS:
        ref = compute_reference(data, m, params)
        for table in TABLES:
            assert canon(published(data, table, m)) == canon(ref[table]), (m, table)
        assert len(ref["pairs"]) >= 15 and ref["paths"] and ref["cleaning_stats"], (m, len(ref["pairs"]))


@pytest.mark.slow
def test_transitions_link_consecutive_months(backfill):
    data = backfill["data"]
    """Each month's transitions are the reference's against the month before's published
    tables. (This archive's routes barely change month to month, so most are empty; the
    non-empty case is tests/test_synth_end_to_end.py's.) Each month's compare also records
    the month before's tables among its inputs."""
    assert pub.read(data, "transitions", MONTHS[0]).num_rows == 0
    for m in MONTHS[1:]:
        prev = {t: published(data, t, previous_month(m)) for t in ("pairs", "vps", "paths")}
        assert prev["pairs"], m
        want = reference.transitions(m, published(data, "pairs", m), **{f"prev_{k}": v for k, v in prev.items()})
        assert canon(published(data, "transitions", m)) == canon(want), m


@pytest.mark.slow
def test_a_rerun_skips_everything(backfill):
    again = _run(backfill["data"], backfill["archive"], backfill["cfg"])
    for s in again:
        assert {st["status"] for st in s["steps"].values()} == {"skipped"}, (s["month"], s["steps"])


@pytest.mark.slow
@needs_data
def test_real_sample_with_every_collector(tmp_path):
    """2026-07 with --collectors all on the shared archive: route-views2 + route-views6 are
    ok, every other collector is inactive or missing as the shipped catalogue says, and the
    pairs are the 2,167 of the two-collector run (make demo). The archive holds cut samples
    and no RIB of the other collectors. The archive root is a local folder, so the plan (and
    the run's disk check) lists it as the run does: the two collectors are sized by their
    files, read in place, and the others' snapshots are counted missing, as the run records
    them, not as full 2026 RIBs (about 85 GB with what 79 collectors' compare would stage: the
    run was refused on a CI machine's disk). A file's entries are its bytes over the sample's
    bytes per entry (these two files' own, MANIFEST.md: so their sum is what the run decodes,
    give or take rounding, though the IPv6 RIB takes more bytes an entry than the IPv4 one)."""
    from bgp_congruency.ingest import catalogue

    sel = ["--month", "2026-07", "--days", "30", "--times", "14:00", "--collectors", "all", "--archive-root",
           str(ARCHIVE), "--data-dir", str(tmp_path / "data")]
    plan = json.loads(congruency("plan", *sel, "--json").stdout)
    r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "run", *sel, "--tolerate-failures",
                        "--min-coverage", "0", "--json"],
                       capture_output=True, text=True, timeout=600, env={**os.environ, "CONGRUENCY_PAUSE": ""})
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads(r.stdout)
    assert s["pairs"] == 2167 and s["files"] == 2
    table = pq.read_table(tmp_path / "data" / "manifest" / "month=2026-07").to_pylist()
    rows = {r["collector"]: r["status"] for r in table}
    [m] = plan["months"]
    decoded = sum(r["entries_v4"] + r["entries_v6"] for r in table if r["status"] == "ok")
    assert plan["fits"] and plan["sized_by_files"] == ["route-views2", "route-views6"] and plan["assumed"] == []
    assert m["snapshots"] == m["in_place"] == 2
    bpe = (2_054_819 + 1_018_645) / (679_347 + 164_279)  # MANIFEST.md: the two files' bytes and bgpdump -m entries
    sizes = [(ARCHIVE / c / "bgpdata/2026.07/RIBS/rib.20260730.1400.bz2").stat().st_size for c in ("route-views2", "route-views6")]
    assert m["entries"] == sum(int(b / bpe) for b in sizes) and abs(m["entries"] - decoded) <= 2 and decoded == 843_626
    assert m["missing"] == sum(st == "missing" for st in rows.values()) > 60
    assert (m["to_fetch"], m["download_bytes"]) == (0, 0)
    cat = catalogue.load()
    assert set(rows) == set(cat)
    # `active`: every collector the catalogue has active then, those whose snapshot is missing too
    t = catalogue._start("2026-07-30T14:00Z")
    assert sorted(m["collectors"]) == sorted(n for n in cat if cat[n].state_at(t) == "active")
    assert {"route-views2", "route-views6"} < set(m["collectors"]) and len(m["collectors"]) > 60
    for name, status in rows.items():
        at = cat[name].state_at(catalogue._start("2026-07-30T14:00Z"))
        if name in ("route-views2", "route-views6"):
            assert status == "ok"
        elif at == "inactive":
            assert status == "inactive", name
        else:  # active (or unknown start, but a source shows it running by now): no such folder here
            assert status == "missing", (name, at)
    assert sorted(n for n, st in rows.items() if st == "inactive") == [
        "route-views.jinx", "route-views.saopaulo", "route-views.siex", "rrc02", "rrc08", "rrc09"]


@pytest.mark.kernel
@pytest.mark.slow
def test_full_disk_mid_backfill_stops_and_loses_nothing(tmp_path):
    """A data dir on a small tmpfs: the first month is published, then the disk is filled to
    ~3 MB (an offline report alone is ~4.8 MB): a three-month run stops with one error line
    at the second month, the third is not started, the first stays whole, no temp file or
    half-published table is left; once there is room the same command finishes, skipping
    what is done."""
    archive = tmp_path / "archive"
    months = ["2026-01", "2026-02", "2026-03"]
    generate(archive, seed=2, ases=60, vps=6, months=months, snapshots_per_month=1, ground_truth=False)
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], check=True)
    try:
        data = mnt / "data"

        def run(months_arg: str):
            return subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "run", "--months", months_arg, "--days", "1",
                                   "--collectors", "all", "--archive-root", str(archive), "--data-dir", str(data),
                                   "--config", str(tmp_path / "cfg.toml"), "--min-coverage", "0.5", "--json"],
                                  capture_output=True, text=True, timeout=600)
        (tmp_path / "cfg.toml").write_text(f'catalogue = "{tmp_path / "cat.toml"}"\nduckdb_threads = 2\n'
                                           'plan_entries_per_snapshot = 2000\n')
        (tmp_path / "cat.toml").write_text(CATALOGUE.replace('evidence_from = "2009-12"', 'evidence_from = "2030-01"'))
        r = run("2026-01..2026-01")
        assert r.returncode == 0, r.stderr[-2000:]
        tables = ("pairs", "vps", "paths", "month_summary")
        def published_now():  # the catalog's files of 2026-01, names and bytes
            got = pub.files(data, tables, "2026-01")
            return {t: [(f, Path(f).read_bytes()) for f in got[t]] for t in tables}

        before = published_now()
        free = shutil.disk_usage(mnt).free
        with open(mnt / "filler", "wb") as fh:
            fh.write(b"\0" * max(0, free - 3_000_000))
        r = run("2026-01..2026-03")
        assert r.returncode == 1
        errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1 and "no space left on device" in errors[0], r.stderr[-3000:]
        out = [json.loads(line) for line in r.stdout.splitlines()]
        assert [s["ok"] for s in out] == [True, False, False]
        assert {st["status"] for st in out[2]["steps"].values()} == {"not run"}
        assert published_now() == before and "2026-03" not in pub.months(data)
        assert not [p for p in data.rglob(".*.tmp*")], "temp files left"
        assert not (data / "pairs" / "month=2026-03").exists()
        (mnt / "filler").unlink()
        r = run("2026-01..2026-03")
        assert r.returncode == 0, r.stderr[-2000:]
        out = [json.loads(line) for line in r.stdout.splitlines()]
        assert all(s["ok"] for s in out)
        assert out[0]["steps"]["compare"]["status"] == "skipped"
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_the_dag_maps_only_collectors_active_in_its_month():
    """The DAG's `plan` task (runner.planned_collectors): the catchup from 2009 maps the
    collectors running then, the same planning as `run` and `plan`."""
    from bgp_congruency.ingest import catalogue
    from bgp_congruency.runner.month import planned_collectors
    from bgp_congruency.runner.schedule import config_from_params

    cfg = config_from_params({"collectors": ["all"]})
    got = planned_collectors(cfg, "2009-06")
    assert "rrc02" not in got and "route-views.sydney" not in got and "rrc00" in got
    assert set(got) == {n for n, st in catalogue.active(("all",), "2009-06").items() if st != "inactive"}
    assert planned_collectors(config_from_params({"collectors": ["route-views.sydney"]}), "2010-08") == [
        "route-views.sydney"]  # installed 2010-08-14: partial, so planned


@pytest.mark.slow
@needs_data
def test_provenance_says_where_a_month_came_from(tmp_path):
    """The real month with rrc00 listed (missing in the sample archive): the provenance row
    names the two snapshots used and their sha256 (hashed here), the missing one, the
    entries (bgpdump -m counts, shared MANIFEST.md), the method's parameters and METHOD.md's
    hash, the engine and the code's version."""
    import hashlib

    from tests.support.data import RV2_2026, RV6_2026

    data = tmp_path / "data"
    r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "run", "--month", "2026-07", "--days", "30", "--times",
                        "14:00", "--collectors", "route-views2,route-views6,rrc00", "--tolerate-failures",
                        "--archive-root", str(ARCHIVE), "--data-dir", str(data), "--min-coverage", "0"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    [p] = pub.read(data, "provenance", "2026-07").to_pylist()
    assert p["snapshots_used"] == ["route-views2@20260730T1400", "route-views6@20260730T1400"]
    assert p["snapshots_missing"] == ["rrc00@20260730T1400"] and p["snapshots_failed"] == []
    assert p["collectors"] == ["route-views2", "route-views6"] and p["entries"] == 679_347 + 164_279
    assert p["input_files"] == [str(RV2_2026.resolve()), str(RV6_2026.resolve())]
    assert p["input_sha256"] == [hashlib.sha256(f.read_bytes()).hexdigest() for f in (RV2_2026, RV6_2026)]
    assert p["min_coverage"] == 0.0 and json.loads(p["method_params"])["min_coverage"] == 0.0
    method = (Path(__file__).resolve().parents[1] / "congruency" / "METHOD.md").read_bytes()
    assert p["method_version"] == f"v1 sha256:{hashlib.sha256(method).hexdigest()[:12]}"
    assert p["engine"] == "duckdb" and p["project_version"]
    cov = json.loads(p["coverage_policy"])
    assert cov["missing"] == ["rrc00@20260730T1400"] and cov["go_on"] and cov["policy"]["tolerate_failures"]
    # The month report says it in its header: a lenient month never reads as a strict one.
    page = (data / "reports" / "month=2026-07" / "report.html").read_text()
    assert ("Provenance: 2 snapshot(s) of route-views2, route-views6 (843,626 entries); <b>1 missing and 0 "
            "failed snapshot(s)</b>: rrc00@20260730T1400; coverage threshold <b>0</b> (lenient: the study's is 0.9)"
            ) in page


@pytest.mark.slow
@needs_data
def test_only_one_step_succeeds_when_that_step_does(tmp_path):
    """`run --only ingest --json`: ok and exit 0 once ingest is done, though nothing is compared yet."""
    r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "run", "--month", "2026-07", "--days", "30", "--times",
                        "14:00", "--archive-root", str(ARCHIVE), "--data-dir", str(tmp_path / "data"),
                        "--only", "ingest", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads(r.stdout)
    assert s["ok"] is True and s["steps"]["ingest"]["status"] == "done" and s["pairs"] is None


# --- 12. plan does not size collectors from cut samples -----------------------------------------

@pytest.mark.slow
def test_plan_does_not_size_a_collector_from_a_cut_sample(ingested_2026, tmp_path):
    """The sample RIBs are the first 1-2 MiB of full dumps (MANIFEST.md): IPv4 up to
    23.105.0.0/20, IPv6 up to 2001:da8:7035::/48. Ingest keeps each file's address span
    in the manifest; plan sizes such collectors by its assumption, not by 15 MB a month."""
    from bgp_congruency.ingest.writer import partial

    rows = manifest.read(ingested_2026, "2026-07").values()
    spans = {f"collector={r['collector']}": json.loads(r["address_span"]) for r in rows}
    assert spans == {"collector=route-views2": {"v4": 23, "v6": None},
                     "collector=route-views6": {"v4": None, "v6": 0x2001}}
    assert all(partial(s) for s in spans.values())
    assert not partial({"v4": 223, "v6": None}) and not partial({"v4": None, "v6": 0x2C0F}) and not partial(None)
    # regional tables are not cut: AFRINIC's IPv4 tops out at 197, ARIN's IPv6 at 2620::
    assert not partial({"v4": 197, "v6": None}) and not partial({"v4": None, "v6": 0x2620})
    r = congruency("plan", "--month", "2026-08", "--collectors", "route-views2,route-views6", "--data-dir",
                   str(ingested_2026), "--json")
    plan = json.loads(r.stdout)
    assert plan["assumed"] == ["route-views2", "route-views6"] and plan["rates"]["sizes_from_data_dir"] == []
    assert plan["rates"]["partial_samples"] == ["route-views2", "route-views6"]
    assert plan["months"][0]["download_bytes"] > 500e6  # 10 full RIBs, not 10 x 1.5 MB


# --- 13. plan learns the hints export from the data dir's own months ----------------------------

@pytest.mark.slow
def test_plan_learns_the_hints_export_from_the_data_dir(generated, sample, tmp_path):
    """The export's bound (206.8 bytes a route, from generated months where half the paths
    pair) gives way to the data dir's own exported months: the bytes of their tunnels.jsonl
    per row of their routes files; the time follows the bytes. A month of cut samples teaches nothing: its few prefixes pair unlike a whole
    table's. The generated month's prefixes sit low in the address space, as a cut sample's
    do, so a copy of it has its manifest say what a whole table's says (its span)."""
    from bgp_congruency.ingest.writer import FULL_V4_TOP_OCTET, FULL_V6_TOP_16

    sel = ("--month", "2026-08", "--collectors", "route-views2,route-views6,rrc00,rrc01", "--data-dir")
    plan = json.loads(congruency("plan", *sel, str(generated.data), "--json").stdout)
    assert plan["rates"]["export_from_data_dir"] == [] and plan["rates"]["export_bytes_per_route"] == 206.8
    data = writable(generated.data, tmp_path / "data")
    whole = json.dumps({"v4": FULL_V4_TOP_OCTET + 123, "v6": FULL_V6_TOP_16 + 0x400})
    for f in (data / "manifest" / "month=2026-07").glob("*.parquet"):
        t = pq.read_table(f)
        i = t.schema.get_field_index("address_span")
        pq.write_table(t.set_column(i, t.schema.field(i), pa.array([whole] * t.num_rows, pa.string())), f)
    export = data / "exports" / "month=2026-07" / "tunnels.jsonl"
    routes = sum(pq.ParquetFile(f).metadata.num_rows for f in (data / "routes" / "month=2026-07").rglob("*.parquet"))
    assert export.stat().st_size > 0 and routes > 0
    per_s = 10_605_706_234 / 35.7  # the export's bytes per second, bench/endtoend.py's 250M month
    plan = json.loads(congruency("plan", *sel, str(data), "--json").stdout)
    rates, [m] = plan["rates"], plan["months"]
    assert rates["export_from_data_dir"] == ["2026-07"]
    assert rates["export_bytes_per_route"] == round(export.stat().st_size / routes, 1)
    assert rates["export_routes_per_s"] == round(per_s / (export.stat().st_size / routes))
    assert m["export_bytes"] == int(m["routes"] * (export.stat().st_size / routes))
    assert m["step_seconds"]["export"] == round(m["routes"] * (export.stat().st_size / routes) / per_s, 1)
    out = congruency("plan", *sel, str(data)).stdout
    assert "bytes a route, as DATA_DIR's own exports of 2026-07" in " ".join(out.split())
    # the month's routes and the compare's tables teach their bytes per route the same way
    tables = [f for fs in pub.files(data, MONTH_TABLES, "2026-07").values() for f in fs]
    stored = sum(f.stat().st_size for f in (data / "routes" / "month=2026-07").rglob("*.parquet"))
    assert "paths" in " ".join(tables) and "hints" in " ".join(tables)
    assert rates["routes_from_data_dir"] == rates["published_from_data_dir"] == ["2026-07"]
    assert rates["routes_bytes_per_route"] == round(stored / routes, 2)
    assert rates["published_bytes_per_route"] == round(sum(Path(f).stat().st_size for f in tables) / routes, 2)
    assert m["published_bytes"] == int(m["routes"] * sum(Path(f).stat().st_size for f in tables) / routes)
    assert m["routes_bytes"] == int(m["routes"] * stored / routes)  # every snapshot of 2026-08 is new
    # and the compare's staging: the peak its run recorded, at least the tables it published
    # (staged whole before the publish moves them), per route of the month
    rec = json.loads((data / "_runs" / "month=2026-07" / "state.json").read_text())["steps"]["compare"]
    peak = rec["measured"]["staging_peak_bytes"]
    assert peak >= sum(Path(f).stat().st_size for f in tables)
    assert rates["staging_from_data_dir"] == ["2026-07"]
    assert rates["staging_rates"]["compare_bytes_per_route"] == round(peak / routes, 2)
    # (a month larger than 2026-07 keeps the generated months' bound as a floor: its compare may spill more)
    sizes = P.Sizes(8.0, 9.0, 200.0, 10.0, {"staging": ["2026-07"]}, staging_routes=1000)
    assert sizes.compare_costs(1000)[1] == 10_000
    assert sizes.compare_costs(1001)[1] == int(1001 * P.COMPARE_STAGING_BYTES_PER_ROUTE)
    rate = peak / routes if m["routes"] <= routes else max(peak / routes, P.COMPARE_STAGING_BYTES_PER_ROUTE)
    assert m["staging_bytes"] == max(int(m["entries"] * P.INGEST_STAGING_BYTES_PER_ENTRY), int(m["routes"] * rate))
    assert "as DATA_DIR's own compares of 2026-07 peaked" in " ".join(out.split())
    assert m["disk_bytes"] == m["routes_bytes"] + m["published_bytes"] + m["download_bytes"]  # cache_policy keep
    assert plan["staging_bytes"] == m["staging_bytes"] and plan["disk_bytes"] == m["disk_bytes"]
    # an export older than the month's routes (a snapshot merged since) describes other routes
    old = min(f.stat().st_mtime for f in (data / "routes" / "month=2026-07").rglob("*.parquet")) - 60
    os.utime(export, (old, old))
    assert json.loads(congruency("plan", *sel, str(data), "--json").stdout)["rates"]["export_from_data_dir"] == []
    for f in tables[:1]:  # one table older than the routes: the month's tables describe other routes
        os.utime(f, (old, old))
    rates = json.loads(congruency("plan", *sel, str(data), "--json").stdout)["rates"]
    assert rates["published_from_data_dir"] == [] and rates["routes_from_data_dir"] == ["2026-07"]
    assert rates["published_bytes_per_route"] == round(476_432_134 / 51_290_917, 2)  # the generated bound
    # a compare recorded before the routes were written describes other routes too
    routes_files = list((data / "routes" / "month=2026-07").rglob("*.parquet"))
    for f in routes_files:
        os.utime(f, (datetime.fromisoformat(rec["at"]).timestamp() + 5,) * 2)
    rates = json.loads(congruency("plan", *sel, str(data), "--json").stdout)["rates"]
    assert rates["staging_from_data_dir"] == [] and rates["staging_rates"]["compare_bytes_per_route"] == round(1_903 * 2**20 / 51_290_917, 2)
    # the real sample's month: cut RIBs too, so the bound stays
    plan = json.loads(congruency("plan", *sel, str(sample.data), "--json").stdout)
    assert plan["rates"]["export_from_data_dir"] == [] and plan["rates"]["export_bytes_per_route"] == 206.8
    assert plan["rates"]["export_routes_per_s"] == round(51_290_917 / 35.7)


# --- 14. run --only compare checks the disk for the months it would compare --------------------

@pytest.mark.slow
def test_run_only_compare_checks_the_disk_for_what_it_would_compare(generated, tmp_path):
    """`run --only compare` (no ingest, so no plan of its own before) refuses, before it writes
    anything, when the months it would compare need more than the disk budget leaves: their
    tables and staging, from the routes they hold. A month whose compare is done and valid is
    not counted: the same command without --force skips it and fits."""
    data = writable(generated.data, tmp_path / "data")
    state = (data / "_runs" / "month=2026-07" / "state.json").read_bytes()
    used = sum(f.stat().st_size for f in data.rglob("*") if f.is_file())
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(generated.config_file.read_text() + f'disk_budget = "{used + 1000}"\n')
    run = ("run", "--month", "2026-07", "--only", "compare", "--data-dir", str(data), "--config", str(cfg),
           "--archive-root", str(generated.archive), "--days", "2", "--times", "00:00",
           "--collectors", "route-views2,route-views6,rrc00,rrc01", "--min-coverage", "0.5")
    r = congruency(*run, "--force", "compare")
    assert r.returncode == 1, r.stderr
    [line] = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert f"disk_budget {used + 1000}: " in line and "--only compare needs about" in line, line
    assert "staged at once" in line
    assert (data / "_runs" / "month=2026-07" / "state.json").read_bytes() == state  # nothing ran
    # `congruency plan` with the same flags says the same, and what it counted
    p = congruency("plan", *run[1:], "--force", "compare", "--json")
    assert p.returncode == 1 and json.loads(p.stdout)["problem"] == line.removeprefix("error: run: ")
    [m] = json.loads(p.stdout)["months"]
    ok = [r for r in pq.read_table(data / "manifest" / "month=2026-07").to_pylist() if r["status"] == "ok"]
    assert m["snapshots"] == m["published"] == len(ok) > 0 and m["to_fetch"] == 0  # the month as stored
    assert m["entries"] == sum(r["entries_v4"] + r["entries_v6"] for r in ok) > 0
    assert sorted(m["collectors"]) == ["route-views2", "route-views6", "rrc00", "rrc01"]
    held = sum(pq.ParquetFile(f).metadata.num_rows for f in (data / "routes").rglob("*.parquet"))
    assert m["routes"] == held and m["step_seconds"] == {"compare": round(held / P.COMPARE_ROUTES_PER_S, 1)}
    text = congruency("plan", *run[1:], "--force", "compare")
    assert text.returncode == 1 and "│ 2026-07 │" in text.stdout and "rates: ingest " in text.stdout
    r = congruency(*run, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["steps"]["compare"]["status"] == "skipped"
    assert json.loads(congruency("plan", *run[1:], "--json").stdout)["months"] == []  # nothing to compare


# --- 15. plan: what a run compares again, and what a later snapshot adds -------------------------

def test_plan_counts_the_compares_a_run_redoes_and_the_routes_a_snapshot_adds(two_months, generated, tmp_path):
    """A month complete in the data dir is not compared again (nothing added or staged) unless
    --force names the compare, or its recorded compare no longer stands (a changed [method]:
    the run's own check); then every later month of the range is compared too, as its
    compare reads the month before's tables. A snapshot added to a month adds the routes it
    brings (NEW_ROUTES: 0.84% of its entries a day later), not a share of the month's, and
    stages the routes the merge replaces beside its decoded dump."""
    months = ["2026-01", "2026-02"]
    p = P.make(two_months.cfg, months)
    assert [(m.published, m.in_place, m.missing) for m in p.months] == [(2, 0, 0)] * 2
    assert [m.step_seconds["compare"] for m in p.months] == [0.0, 0.0] and (p.disk_bytes, p.staging_bytes) == (0, 0)
    # a month with something new is compared, and so is every month after it: 2026-01's
    # route-views6 dump taken out of its manifest and its ingest to be redone
    data = writable(two_months.data, tmp_path / "data")
    cfg = replace(two_months.cfg, data_dir=data)
    manifest.merge_write(data, "2026-01", [], drop={"route-views6@20260101T0000"})
    S.update_state(cfg, "2026-01", lambda st: st["steps"].pop("ingest"))
    p = P.make(cfg, months)
    assert [(m.published, m.in_place) for m in p.months] == [(1, 1), (2, 0)]
    assert [m.published_bytes == int(m.routes * P.PUBLISHED_BYTES_PER_ROUTE) > 0 for m in p.months] == [True] * 2
    assert [m.routes_bytes > 0 for m in p.months] == [True, False]
    cfg = two_months.cfg
    p = P.make(cfg, months, forced={"compare"})
    for m in p.months:
        assert m.routes > 0 and m.step_seconds["compare"] == round(m.routes / P.COMPARE_ROUTES_PER_S, 1)
        assert (m.published_bytes, m.routes_bytes) == (int(m.routes * P.PUBLISHED_BYTES_PER_ROUTE), 0)
    # config sensitivity = true: each compared month runs the variants after the compare, at
    # the measured ratio to its time and staging per route (the pinned entries' spill)
    sens = P.make(cfg.with_overrides(sensitivity=True), months, forced={"compare"})
    for m, s in zip(p.months, sens.months):
        assert s.step_seconds["sensitivity"] == round(m.routes / P.COMPARE_ROUTES_PER_S * P.SENSITIVITY_PER_COMPARE, 1)
        assert s.staging_bytes == max(m.staging_bytes, int(m.routes * P.SENSITIVITY_STAGING_BYTES_PER_ROUTE)) > 0
        assert "sensitivity" not in m.step_seconds  # off: not a step of the run
    assert sens.rates["sensitivity_per_compare"] == round(563.5 / 128.3, 2) and "sensitivity_per_compare" not in p.rates
    # a changed [method] redoes the compare of a month complete in the data dir: counted as --force's
    method = cfg.method
    changed = replace(cfg, method=replace(method, min_coverage=0.25 if method.min_coverage != 0.25 else 0.5))
    assert [(m.routes, m.step_seconds, m.published_bytes, m.staging_bytes) for m in P.make(changed, months).months] == \
        [(m.routes, m.step_seconds, m.published_bytes, m.staging_bytes) for m in p.months]
    # the generated month holds its day-2 snapshot of 4 collectors; days 1-2 add day 1's. Each
    # collector is sized by its files in the (local) archive, the median of the two days' bytes,
    # at its own snapshots' bytes per entry where they are whole, else the sample's.
    # A month the data dir holds is counted by its own routes, not by those sizes.
    [m] = P.make(generated.cfg.with_overrides(days=(1, 2)), ["2026-07"]).months
    learned = P._learned(generated.data)

    def entries(n: str) -> int:
        sizes = [f.stat().st_size for f in (generated.archive / n).rglob("*.2026070[12].0000.*")]
        bpe = learned[n][0] / learned[n][1] if n in learned else MRT_BYTES_PER_ENTRY["ris" if n.startswith("rrc") else "routeviews"]
        assert len(sizes) == 2
        return int(int(sum(sizes) / 2) / bpe)
    ents = [entries(n) for n in ("route-views2", "route-views6", "rrc00", "rrc01")]
    held = sum(pq.ParquetFile(f).metadata.num_rows for f in (generated.data / "routes").rglob("*.parquet"))
    new = sum(int(e * (1 + P.new_routes(24))) for e in ents) - sum(ents)  # day 1's routes not in day 2
    after = held + new  # the routes the month holds, as counted in the data dir, and day 1's new ones
    assert (m.published, m.snapshots, m.routes) == (4, 8, after) and 0 < new < 0.01 * sum(ents)
    assert m.routes_bytes == int(new * P.ROUTES_BYTES_PER_ROUTE)
    dumps_and_older = int(sum(ents) * P.INGEST_STAGING_BYTES_PER_ENTRY + held * P.ROUTES_BYTES_PER_ROUTE)
    assert m.staging_bytes == max(dumps_and_older, int(after * P.COMPARE_STAGING_BYTES_PER_ROUTE))
    assert m.published_bytes == int(after * P.PUBLISHED_BYTES_PER_ROUTE)
