"""The pybgpstream backend, for real: CAIDA's libbgpstream built from ../shared/vendor by
`make bgpstream` and pybgpstream compiled against it.

Evidence: the native decoder's rows (themselves held to bgpdump's in test_ingest.py) on every
sample RIB and edge file and on multi-stream/multi-member files derived from the real ones;
the framing check's verdict on libbgpstream's known blind spots; a whole month's pairs
through `congruency run` against the native run's; a BGPStream csvfile listing of the sample
archive as the source.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from tests.support.data import ARCHIVE, ARCHIVE_RIBS, EDGE, EDGE_RIBS, FAULTY, RV2_2026, RV6_2026, needs_data
from tests.support.decode import decode_all, decode_file, multistream_files

pytestmark = needs_data

ADDPATH = {EDGE / "lab.rib.ipv4-addpath.gz", EDGE / "lab.rib.ipv6-addpath.gz"}


@pytest.fixture(scope="module", autouse=True)
def built():
    from bgp_congruency.ingest.backends import pybgpstream

    why = pybgpstream.available()
    if why:  # no skip: `make test` builds it (make bgpstream); a missing build is a failure
        pytest.fail(f"pybgpstream backend unavailable: {why}")


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in ARCHIVE_RIBS + EDGE_RIBS if p not in ADDPATH], ids=lambda p: p.name)
def test_rows_equal_the_native_decoders(path):
    """Row for row, in the same order: every column of rib_entries."""
    a, b = decode_all(path, "native"), decode_all(path, "pybgpstream")
    assert a.num_rows > 0 and a.equals(b)


@pytest.mark.slow
def test_multistream_and_multimember_files(tmp_path):
    three, two = multistream_files(tmp_path)
    whole = decode_file(RV6_2026, "native", tmp_path)[2]  # a decoded file keeps the dump's order
    for f in (three, two):
        stats, decoded, table = decode_file(f, "pybgpstream", tmp_path)
        assert decoded == {4: 0, 6: 164_279}
        keep = [c for c in table.column_names if c not in ("snapshot_time", "source_file", "collector", "project")]
        assert table.select(keep).equals(whole.select(keep))


@pytest.mark.slow
def test_libbgpstreams_blind_spots_are_one_clear_line(tmp_path):
    """What libbgpstream does silently, the ingest says: a cut-off download (it reads the
    complete records without error), a RIB with no peer index (it warns and skips), ADD-PATH
    subtypes (it yields nothing)."""
    cut = FAULTY / "route-views2.rib.20260730.1400.truncated-download.bz2"
    assert decode_all(cut, "pybgpstream").num_rows > 0  # libbgpstream alone: no error
    assert decode_file(cut, "pybgpstream", tmp_path) == f"{cut}: truncated bzip2 stream (download cut short?)"
    nopeer = FAULTY / "bview.20140112.1600.no-peer-index.bz2"
    assert decode_file(nopeer, "pybgpstream", tmp_path) == \
        f"{nopeer}: RIB record #1 comes before any PEER_INDEX_TABLE"
    from bgp_congruency.ingest.backends import pybgpstream

    for f in sorted(ADDPATH):
        assert list(pybgpstream.decode(f)) == []  # libbgpstream alone: nothing, no error
        msg = decode_file(f, "pybgpstream", tmp_path)
        assert msg.startswith(f"{f}: backend pybgpstream: ") and "ADD-PATH RIB records (RFC 8050" in msg, msg
        assert "use the native backend" in msg


def _run(data, *more, config: str = ""):
    (data.parent / f"{data.name}.toml").write_text(config)
    return subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "run", "--month", "2026-07", "--days", "30", "--times",
                           "14:00", "--data-dir", str(data), "--min-coverage", "0", "--json",
                           "--config", str(data.parent / f"{data.name}.toml"), *more],
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_month_through_run_equals_the_native_run(tmp_path):
    """`congruency run --config` with backend = "pybgpstream": the same pairs, row for row."""
    native, bgps = tmp_path / "native", tmp_path / "bgps"
    r1 = _run(native, "--archive-root", str(ARCHIVE))
    r2 = _run(bgps, "--archive-root", str(ARCHIVE), config='backend = "pybgpstream"\n')
    assert r1.returncode == 0 and r2.returncode == 0, r2.stderr[-2000:]
    assert json.loads(r2.stdout)["pairs"] == 2167
    backends_used = {r["backend"] for r in pq.read_table(bgps / "manifest" / "month=2026-07").to_pylist()}
    assert backends_used == {"pybgpstream"}
    for t in ("pairs", "vps", "paths", "month_summary"):
        a = pq.read_table(native / t / "month=2026-07")
        b = pq.read_table(bgps / t / "month=2026-07")
        assert sorted(map(str, a.to_pylist())) == sorted(map(str, b.to_pylist())), t


@pytest.mark.slow
def test_a_bgpstream_csvfile_listing_as_the_source(tmp_path, capsys):
    """A lab's BGPStream index of the sample archive (libbgpstream's csvfile format, paths
    relative to the listing): the month's RIBs come from it, updates lines are ignored."""
    from bgp_congruency.cli.main import main as cli

    listing = tmp_path / "mirror" / "index.csv"
    listing.parent.mkdir()
    rel = os.path.relpath(ARCHIVE, listing.parent)
    listing.write_text(
        f"{rel}/route-views2/bgpdata/2026.07/RIBS/rib.20260730.1400.bz2,routeviews,ribs,route-views2,1785420000,120,1785421000\n"
        f"{rel}/route-views6/bgpdata/2026.07/RIBS/rib.20260730.1400.bz2,routeviews,ribs,route-views6,1785420000,120,1785421000\n"
        f"{rel}/route-views2/bgpdata/2026.02/UPDATES/updates.20260222.1530.bz2,routeviews,updates,route-views2,"
        "1771774200,900,1771775000\n")
    data = tmp_path / "data"
    assert cli(["ingest", "--month", "2026-07", "--days", "30", "--times", "14:00", "--source", "bgpstream-csv",
                str(listing), "--backend", "pybgpstream", "--data-dir", str(data), "--json"]) == 0
    rows = {r["collector"]: r for r in json.loads(capsys.readouterr().out)["snapshots"]}
    assert rows["route-views2"]["entries_v4"] == 679_347 and rows["route-views6"]["entries_v6"] == 164_279
    assert rows["route-views2"]["url"] == str(RV2_2026.resolve())
    # Another day: nothing listed near it is one line per slot, the listing named.
    assert cli(["ingest", "--month", "2026-07", "--days", "1", "--source", "bgpstream-csv", str(listing),
                "--data-dir", str(tmp_path / "d2"), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)["snapshots"]
    assert {r["status"] for r in out} == {"missing"}
    assert out[0]["error"].startswith(f"{listing}: no route-views2 RIB listed at 2026-07-01 00:00")
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,ribs\n")
    assert cli(["ingest", "--month", "2026-07", "--source", "bgpstream-csv", str(bad)]) == 2
    assert capsys.readouterr().err.strip() == (f"error: --source: {bad}:1: expected 7 fields (path, project, type, "
                                               "collector, file_time, time_span, written), got 3")
