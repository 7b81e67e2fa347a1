"""Ingest against independent evidence: bgpdump -m line counts, the shared data's known facts,
a real HTTP server on 127.0.0.1 with faults, and the manifest."""
from __future__ import annotations

import bz2
import json
import os
import subprocess
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bgp_congruency.cli.main import main as cli
from bgp_congruency.ingest import backends, discovery, framing, manifest
from bgp_congruency.ingest import run as ingest_run
from bgp_congruency.ingest.discovery import Slot
from bgp_congruency.ingest.writer import SnapshotWriter
from tests.support.archive_server import serve
from tests.support.data import (
    ARCHIVE,
    ARCHIVE_RIBS,
    EDGE,
    EDGE_RIBS,
    FAULTY,
    PEERS_IN_BOTH_2026,
    RV2_2026,
    RV6_2026,
    needs_data,
    require_tool,
)
from tests.support.decode import decode_all

pytestmark = needs_data


def bgpdump_counts(path: Path) -> Counter:
    """Entries per AFI by the Debian bgpdump: lines of `bgpdump -m`, AFI from the prefix."""
    require_tool("bgpdump")
    out = subprocess.run(["bgpdump", "-q", "-m", str(path)], capture_output=True, check=True).stdout
    c = Counter()
    for line in out.splitlines():
        prefix = line.split(b"|")[5]
        c[6 if b":" in prefix else 4] += 1
    return c


# ------------------------------------------------------------------ framing vs bgpdump
@pytest.mark.slow
@pytest.mark.parametrize("path", ARCHIVE_RIBS + EDGE_RIBS, ids=lambda p: p.name)
def test_framing_entries_equal_bgpdump_lines(path):
    stats = framing.scan(path)
    assert dict(stats.entries) == {k: v for k, v in bgpdump_counts(path).items()}


@pytest.mark.slow
def test_known_totals_from_the_manifest_of_the_data():
    assert framing.scan(RV2_2026).entries == {4: 679_347}
    assert framing.scan(RV6_2026).entries == {6: 164_279}


def test_rib_generic_records_are_skipped_and_counted():
    stats = framing.scan(EDGE / "lab.openbgpd.rib.tdv2.mrt")
    assert stats.skipped == {"rib_generic": 2}
    assert stats.entries == {4: 11, 6: 20}


@pytest.mark.parametrize(
    "path, message",
    [
        (FAULTY / "route-views2.rib.20260730.1400.truncated-download.bz2", "truncated bzip2 stream"),
        (FAULTY / "route-views6.rib.20260730.1400.truncated-download.bz2", "truncated bzip2 stream"),
        (FAULTY / "bview.20140112.1600.no-peer-index.bz2", "before any PEER_INDEX_TABLE"),
    ],
    ids=lambda x: getattr(x, "name", "msg"),
)
@pytest.mark.slow
def test_faulty_files_that_decoders_accept_silently_are_rejected(path, message):
    # The decoders read these without complaint (that is the danger):
    assert sum(bgpdump_counts(path).values()) in (0, 679_347, 164_279)
    with pytest.raises(framing.FramingError, match=message):
        framing.scan(path)


def test_not_mrt_and_cut_records_are_rejected(tmp_path):
    text = tmp_path / "rib.bz2"
    text.write_bytes(bz2.compress(b"<html>404 Not Found</html>\n" * 50))
    with pytest.raises(framing.FramingError, match="not an MRT record"):
        framing.scan(text)
    raw = bz2.decompress(RV6_2026.read_bytes())[:100_000]  # cut mid-record, recompressed whole
    cut = tmp_path / "cut.bz2"
    cut.write_bytes(bz2.compress(raw))
    # Where it is cut, found by walking the record headers here (12 bytes, length at 8..12).
    pos = n = 0
    while pos + 12 <= len(raw) and pos + 12 + int.from_bytes(raw[pos + 8:pos + 12], "big") <= len(raw):
        pos += 12 + int.from_bytes(raw[pos + 8:pos + 12], "big")
        n += 1
    want = (f"MRT record #{n + 1} at byte {pos} cut short: it announces "
            f"{int.from_bytes(raw[pos + 8:pos + 12], 'big')} bytes, the file ends {len(raw) - pos - 12} bytes into them")
    with pytest.raises(framing.FramingError) as exc:
        framing.scan(cut)
    assert str(exc.value) == want
    from bgp_congruency.ingest.backends import native

    with pytest.raises(framing.FramingError) as exc:  # the native decoder names the same record
        for _ in native.decode_checked(cut, 10_000, snapshot_time=None):
            pass
    assert str(exc.value) == want


# ------------------------------------------------------------------ backends agree
def _rows(table: pa.Table) -> Counter:
    return Counter(tuple(tuple(v) if isinstance(v, list) else v for v in r.values())
                   for r in table.drop(["snapshot_time"]).to_pylist())


@pytest.mark.slow
@pytest.mark.parametrize("path", ARCHIVE_RIBS + EDGE_RIBS, ids=lambda p: p.name)
def test_backends_give_the_same_rows(path):
    """The native decoder's rows are the bgpdump backend's rows, in the same order."""
    require_tool("bgpdump")
    a, b = decode_all(path, "native"), decode_all(path, "bgpdump")
    assert a.num_rows == sum(bgpdump_counts(path).values())
    assert a.equals(b), _rows(a) - _rows(b)


def test_as_set_rows_keep_raw_text_and_have_no_origin():
    t = decode_all(ARCHIVE / "route-views6/bgpdata/2015.11/RIBS/rib.20151101.0600.bz2", "native")
    sets = t.filter(t["has_as_set"]).to_pylist()
    assert len(sets) == 181  # bgpdump -m lines with {..} in the path (MANIFEST check in README)
    first = next(r for r in sets if r["as_path_raw"] == "3257 11666 6509 {271,7860,8111,26677}")
    assert first["as_path"] is None and first["origin_asn"] is None
    plain = t.filter(pa.compute.invert(t["has_as_set"])).slice(0, 1000).to_pylist()
    assert all(r["origin_asn"] == r["as_path"][-1] and r["as_path_raw"] is None for r in plain)


def test_prepending_and_4byte_asns_are_kept_as_announced():
    t = decode_all(EDGE / "lab.quagga.rib.tdv2.mrt", "native").to_pylist()
    assert t[0]["as_path"] == [4200000000, 4200000000, 4200000000, 64512, 64512, 64512]
    assert t[0]["origin_asn"] == 64512


# ------------------------------------------------------------------ discovery
def test_parse_days_and_times():
    assert discovery.parse_days("30") == (30,)
    assert discovery.parse_days("1-5") == (1, 2, 3, 4, 5)
    assert discovery.parse_days("1,15") == (1, 15)
    assert discovery.parse_times("0:00,14:00") == ("00:00", "14:00")
    for bad in ("0", "5-1", "x", "1-40"):
        with pytest.raises(ValueError, match="--days"):
            discovery.parse_days(bad)
    with pytest.raises(ValueError, match="2026-02 has 28 days"):
        discovery.window("2026-02", (30,), ("00:00",))


def _tree(tmp_path: Path, files: dict[str, Path | bytes]) -> Path:
    """A throwaway archive folder (in tmp) of shared files and small made-up files."""
    import shutil

    for rel, src in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(src, Path):
            shutil.copyfile(src, p)
        else:
            p.write_bytes(src)
    return tmp_path


def test_nearest_dump_stands_in_and_legacy_route_views2_path(tmp_path):
    from bgp_congruency.ingest import catalogue

    root = _tree(tmp_path, {"bgpdata/2026.07/RIBS/rib.20260730.1400.bz2": RV2_2026})  # legacy only
    with serve(root) as url:
        t = datetime(2026, 7, 30, 13, 0, tzinfo=timezone.utc)
        [s] = discovery.discover(catalogue.get("route-views2"), "2026-07", [t], root=url)
        assert s.url == f"{url}/bgpdata/2026.07/RIBS/rib.20260730.1400.bz2"
        assert s.substituted and s.dump_time == datetime(2026, 7, 30, 14, 0, tzinfo=timezone.utc)
        from datetime import timedelta

        [s] = discovery.discover(catalogue.get("route-views2"), "2026-07", [t], root=url,
                                 tolerance=timedelta(minutes=30))
        assert s.url is None and "rib.20260730.1300: not in the archive" in s.error


def test_an_archive_that_cannot_be_listed_is_failed_not_missing(tmp_path):
    """No such folder (HTTP 404, missing local folder): missing. No answer at all: failed."""
    from bgp_congruency.ingest import catalogue

    col, t = catalogue.get("route-views6"), datetime(2026, 7, 30, 14, 0, tzinfo=timezone.utc)
    [s] = discovery.discover(col, "2026-07", [t], root=str(tmp_path / "nowhere"))
    assert (s.status, s.url) == ("missing", None) and "no such folder" in s.error
    with serve(tmp_path) as url:
        [s] = discovery.discover(col, "2026-07", [t], root=url)
    assert (s.status, s.url) == ("missing", None) and "no such folder" in s.error
    [s] = discovery.discover(col, "2026-07", [t], root="http://127.0.0.1:1", timeout=5)  # connection refused
    assert (s.status, s.url) == ("failed", None) and "127.0.0.1:1" in s.error
    row = ingest_run.ingest_slot(s, None, backends.get("native"))
    assert (row.status, row.error) == ("failed", s.error)


# ------------------------------------------------------------------ end to end over HTTP
@pytest.mark.slow
def test_ingest_over_http_then_rerun_downloads_nothing(tmp_path, capsys):
    data = tmp_path / "data"
    with serve(ARCHIVE) as url:
        args = ["ingest", "--month", "2026-07", "--days", "30", "--times", "14:00",
                "--archive-root", url, "--data-dir", str(data), "--json"]
        assert cli(args) == 0
        out = json.loads(capsys.readouterr().out)
        rows = {r["collector"]: r for r in out["snapshots"]}
        assert rows["route-views2"]["entries_v4"] == 679_347 and rows["route-views2"]["entries_v6"] == 0
        assert rows["route-views6"]["entries_v6"] == 164_279 and rows["route-views6"]["entries_v4"] == 0
        assert all(r["status"] == "ok" and r["error"] is None for r in rows.values())
        import hashlib

        assert rows["route-views6"]["sha256"] == hashlib.sha256(RV6_2026.read_bytes()).hexdigest()
        assert rows["route-views2"]["dump_time"].startswith("2026-07-30 14:00")
        files = ["/" + p.relative_to(ARCHIVE).as_posix() for p in (RV2_2026, RV6_2026)]
        assert [url.hits(f) for f in files] == [1, 1]
        assert cli(args) == 0  # everything already done: the folders are listed, no file fetched
        assert json.loads(capsys.readouterr().out)["already_done"] == 2
        assert [url.hits(f) for f in files] == [1, 1]

    from bgp_congruency.common import routes

    con = duckdb.connect()
    entries = f"({routes.expand_sql(routes.month_files(data, '2026-07'))})"  # every route once per snapshot
    per = dict(con.execute(f"SELECT collector, count(*) FROM {entries} GROUP BY 1").fetchall())
    assert per == {"route-views2": 679_347, "route-views6": 164_279}
    both = {r[0] for r in con.execute(f"""
        SELECT peer_asn FROM {entries} GROUP BY peer_asn HAVING count(DISTINCT afi) = 2""").fetchall()}
    # MANIFEST.md's 13 are the peers whose IPv4 and IPv6 routes reach common origins (the
    # job's VPs with pairs, test_compare). A 14th, AS53767, has IPv6 routes too, but only ::/0
    # and one AS112 /48 (bgpdump -m agrees): it has routes in both files but no pair.
    assert both == PEERS_IN_BOTH_2026 | {53767}
    v6_53767 = con.execute(f"""SELECT list(prefix ORDER BY prefix) FROM {entries}
        WHERE peer_asn = 53767 AND afi = 6""").fetchone()[0]
    assert v6_53767 == ["2001:4:112::/48", "::/0"]
    m = pq.read_table(manifest.path(data, "2026-07")).to_pylist()
    assert [r["status"] for r in m] == ["ok", "ok"]


@pytest.mark.slow
def test_bad_inputs_are_recorded_others_still_ingested_and_rerun_retries_only_failures(tmp_path, capsys):
    rv2 = "route-views2/bgpdata/2026.07/RIBS/"
    root = _tree(tmp_path / "archive", {
        rv2 + "rib.20260730.1000.bz2": FAULTY / "route-views2.rib.20260730.1400.truncated-download.bz2",
        rv2 + "rib.20260730.1200.bz2": bz2.compress(b"this is not MRT\n" * 100),
        rv2 + "rib.20260730.1400.bz2": RV2_2026,  # served with a dropping connection
        rv2 + "rib.20260730.1600.bz2": FAULTY / "bview.20140112.1600.no-peer-index.bz2",
        "route-views6/bgpdata/2026.07/RIBS/rib.20260730.1400.bz2": RV6_2026,
    })
    data = tmp_path / "data"
    faults = {"/" + rv2 + "rib.20260730.1400.bz2": "drop:300000"}
    with serve(root, faults) as url:
        args = ["ingest", "--month", "2026-07", "--days", "30", "--times", "10:00,12:00,14:00,16:00,20:00",
                "--collectors", "route-views2,route-views6", "--tolerance-minutes", "0",
                "--archive-root", url, "--data-dir", str(data), "--json", "--backend", "native"]
        assert cli(args + ["--config", str(_fast_config(tmp_path))]) == 1
        captured = capsys.readouterr()
        rows = {(r["collector"], r["target_time"][11:16]): r for r in json.loads(captured.out)["snapshots"]}
        errors = [ln for ln in captured.err.splitlines() if ln.startswith("error: ")]
        assert rows[("route-views6", "14:00")]["status"] == "ok", rows[("route-views6", "14:00")]["error"]
        assert rows[("route-views6", "14:00")]["entries_v6"] == 164_279
        expect = {
            ("route-views2", "10:00"): "truncated",
            ("route-views2", "12:00"): "not an MRT record",
            ("route-views2", "14:00"): "connection dropped",
            ("route-views2", "16:00"): "before any PEER_INDEX_TABLE",
            ("route-views2", "20:00"): "not in the archive",
        }
        for key, msg in expect.items():
            assert rows[key]["status"] in ("failed", "missing") and msg in rows[key]["error"], rows[key]
        assert len(errors) == 5 + 4  # every rv2 slot, and rv6 at 10, 12, 16 and 20 (missing)
        # Nothing partial: only the good snapshot is in the routes, no temp files anywhere.
        from bgp_congruency.common import routes

        got = {c: [s.source_file.rsplit("/", 1)[-1] for s in routes.snapshots(g)]
               for c, g in routes.month_generations(data, "2026-07").items()}
        assert got == {"route-views6": ["rib.20260730.1400.bz2"]}
        assert not (data / "_staging" / "ingest-2026-07").exists()
        assert not [p for p in data.rglob(".*") if p.is_file() and "cache" not in p.parts]
        assert not list((data / "cache").rglob("*.part"))

        # Repair the archive, re-run: only the failed slots are fetched again.
        (root / rv2 / "rib.20260730.1000.bz2").unlink()
        url.faults.clear()
        rv6_hits = url.hits("/route-views6/bgpdata/2026.07/RIBS/rib.20260730.1400.bz2")
        args2 = [a if a != "10:00,12:00,14:00,16:00,20:00" else "12:00,14:00,16:00" for a in args]
        args2 = [a if a != "route-views2,route-views6" else "route-views2" for a in args2]
        assert cli(args2 + ["--config", str(_fast_config(tmp_path))]) == 1  # 12:00 and 16:00 still bad
        out = json.loads(capsys.readouterr().out)
        assert {r["target_time"][11:16]: r["status"] for r in out["snapshots"]} == {
            "12:00": "failed", "14:00": "ok", "16:00": "failed"}
        assert url.hits("/route-views6/bgpdata/2026.07/RIBS/rib.20260730.1400.bz2") == rv6_hits
        assert cli(args2 + ["--config", str(_fast_config(tmp_path)), "--tolerate-failures"]) == 0
    m = {(r["collector"], r["target_time"].strftime("%H:%M")): r["status"]
         for r in pq.read_table(manifest.path(data, "2026-07")).to_pylist()}
    assert m[("route-views2", "14:00")] == "ok" and m[("route-views6", "14:00")] == "ok"
    assert m[("route-views2", "12:00")] == "failed"
    # 10:00 and 20:00 left route-views2's selection: their failures are no longer on record (they
    # would be listed by `status` forever); route-views6, not in those runs, keeps its rows.
    assert ("route-views2", "10:00") not in m and ("route-views2", "20:00") not in m
    assert m[("route-views6", "10:00")] == "missing"


def _fast_config(tmp_path: Path) -> Path:
    p = tmp_path / "fast.toml"
    p.write_text("retries = 2\nbackoff_s = 0.01\ntimeout_s = 5.0\n")
    return p


def test_cli_errors_are_one_line_and_exit_2(tmp_path, capsys):
    assert cli(["ingest", "--month", "2026-13", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --month: expected YYYY-MM, got '2026-13'"]
    assert cli(["ingest", "--month", "2026-07", "--collectors", "rrc99", "--data-dir", str(tmp_path)]) == 2
    assert "--collectors: unknown collector 'rrc99'" in capsys.readouterr().err
    for n in ("0", "-1"):
        assert cli(["ingest", "--month", "2026-07", "--concurrency", n, "--data-dir", str(tmp_path)]) == 2
        assert capsys.readouterr().err == f"error: --concurrency: expected 1 or more snapshots at once, got {n}\n"
    assert cli(["ingest", "--month", "2026-07", "--collectors", "rrc99", "--data-dir", str(tmp_path)]) == 2
    assert "--collectors: unknown collector 'rrc99'" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("colectors = []\n")
    assert cli(["ingest", "--month", "2026-07", "--config", str(bad)]) == 2
    assert "unknown setting(s) colectors" in capsys.readouterr().err


def test_stored_paths_are_the_lists_bytes_and_read_back_as_lists():
    """ingest/writer.path_bytes and path_lists: each path's ASNs as 4 little-endian bytes
    each, nulls (AS_SET paths) and empty paths kept, slices and a sliced values buffer too;
    lists pass path_lists unchanged."""
    from bgp_congruency.ingest.writer import path_bytes, path_lists

    t = pa.list_(pa.uint32())
    paths = pa.array([[1, 2, 3], None, [], [4294967295, 7], [5]], t)
    stored = path_bytes(paths)
    assert stored.type == pa.binary() and stored.to_pylist() == [
        bytes([1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]), None, b"", bytes([255] * 4 + [7, 0, 0, 0]), bytes([5, 0, 0, 0])]
    shifted = pa.ListArray.from_arrays(pa.array([0, 2, 4], pa.int32()), pa.array([9, 9, 1, 2, 3, 4], pa.uint32()).slice(2))
    for a in (paths, paths.slice(1), paths.slice(2, 2), paths.slice(5), pa.array([], t), shifted, shifted.slice(1)):
        back = path_lists(path_bytes(a))
        assert back.to_pylist() == a.to_pylist() and back.type == t
    assert path_lists(path_bytes(paths).slice(1)).to_pylist() == paths.slice(1).to_pylist()
    assert path_lists(paths) is paths
    with pytest.raises(ValueError, match="whole number of 4-byte ASNs"):
        path_lists(pa.array([b"\x01\x00\x00"], pa.binary()))


def test_the_writer_refuses_a_batch_of_other_types_in_one_line(tmp_path):
    """A batch whose column types are not DECODED_FILE's (here peer_asn as int64) is refused,
    naming the file and that column on one line, before anything is written or fed."""
    from bgp_congruency.common.tables import DECODED_SCHEMA

    row = dict(project="ris", snapshot_time=datetime(2026, 7, 1, tzinfo=timezone.utc), peer_asn=64500,
               peer_ip="192.0.2.1", afi=4, prefix="192.0.2.0/24", as_path=[64500, 64501], has_as_set=False,
               as_path_raw=None, origin_asn=64501, source_file="x")
    i = DECODED_SCHEMA.get_field_index("peer_asn")
    wrong = DECODED_SCHEMA.set(i, pa.field("peer_asn", pa.int64(), nullable=False))
    w = SnapshotWriter(tmp_path / "x.parquet")
    with pytest.raises(ValueError) as e:
        w.write(pa.RecordBatch.from_pylist([row], schema=wrong))
    assert str(e.value) == f"{tmp_path / 'x.parquet'}: columns not of common.tables.DECODED_FILE's types: peer_asn int64 not null"
    assert w.rows == 0
    w.write(pa.RecordBatch.from_pylist([row], schema=DECODED_SCHEMA))
    w.publish()
    assert pq.read_table(tmp_path / "x.parquet").column("as_path").to_pylist() == [bytes([244, 251, 0, 0, 245, 251, 0, 0])]


def test_decode_edge_files_through_the_writer(tmp_path):
    """ADD-PATH subtypes and a >64 KiB record come out whole, with bgpdump's counts."""
    for name in ("lab.rib.ipv4-addpath.gz", "lab.rib.ipv6-addpath.gz", "rrc00.bview.20180919.0800.64k-record.gz"):
        path = EDGE / name
        slot = Slot(collector="rrc00", project="ris", month="2018-09",
                    target=datetime(2018, 9, 19, tzinfo=timezone.utc), url=str(path),
                    dump_time=datetime(2018, 9, 19, tzinfo=timezone.utc))
        w = SnapshotWriter(tmp_path / f"{name}.parquet")
        stats, decoded = ingest_run.decode_file(path, slot, backends.get("native"), w, batch_rows=7,
                                                source=str(path))
        out = w.publish()
        assert {k: v for k, v in decoded.items() if v} == dict(bgpdump_counts(path))
        assert pq.read_metadata(out).num_rows == sum(decoded.values())


def test_default_roots_are_the_public_archives():
    from bgp_congruency.ingest import catalogue

    rv2, rv6, rrc = (catalogue.get(n) for n in ("route-views2", "route-views6", "rrc00"))
    assert discovery.month_dirs(rv2, rv2.project.root, 2026, 7) == [
        "https://archive.routeviews.org/route-views2/bgpdata/2026.07/RIBS",
        "https://archive.routeviews.org/bgpdata/2026.07/RIBS",  # before July 2026
    ]
    assert discovery.month_dirs(rv6, rv6.project.root, 2026, 7) == [
        "https://archive.routeviews.org/route-views6/bgpdata/2026.07/RIBS"]
    assert discovery.month_dirs(rrc, rrc.project.root, 2026, 7) == ["https://data.ris.ripe.net/rrc00/2026.07"]
    assert set(rv2.afis) == {4} and set(rv6.afis) == {6} and set(rrc.afis) == {4, 6}


def test_an_empty_download_is_named_and_leaves_no_folder(tmp_path, capsys):
    """A zero-byte .bz2 (what a failed download leaves) is 'empty', not 'no MRT records';
    the rejected snapshot leaves no collector folder behind."""
    root = _tree(tmp_path / "archive", {"route-views2/bgpdata/2026.07/RIBS/rib.20260730.1400.bz2": b""})
    data = tmp_path / "data"
    assert cli(["ingest", "--month", "2026-07", "--days", "30", "--times", "14:00", "--collectors", "route-views2",
                "--archive-root", str(root), "--data-dir", str(data), "--json"]) == 1
    [row] = json.loads(capsys.readouterr().out)["snapshots"]
    assert row["status"] == "failed" and row["error"].endswith(
        "rib.20260730.1400.bz2: the file is empty (0 bytes; a failed download?)")
    assert not (data / "routes" / "month=2026-07" / "collector=route-views2").exists()
    assert not (data / "_staging" / "ingest-2026-07" / "collector=route-views2").exists()


@pytest.mark.slow
def test_a_plain_ingest_cleans_what_a_killed_one_left(tmp_path):
    """Temp files of a dead writer go, a live writer's stay (its pid is this process's)."""
    import os
    import subprocess

    folder = tmp_path / "data" / "_staging" / "ingest-2026-07" / "collector=route-views2"
    folder.mkdir(parents=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = folder / f".rib.20260730.1400.parquet.{dead.pid}.0123abcd.tmp"
    live = folder / f".rib.20260730.1000.parquet.{os.getpid()}.4567cdef.tmp"
    for p in (gone, live):
        p.write_bytes(b"x" * 100)
    assert cli(["ingest", "--month", "2026-07", "--days", "30", "--times", "14:00", "--collectors", "route-views2",
                "--archive-root", str(ARCHIVE), "--data-dir", str(tmp_path / "data")]) == 0
    assert not gone.exists() and live.exists()


# --- the month's routes (issue 56) ------------------------------------------------------------

ROUTES_MONTH = "2026-07"


@pytest.fixture(scope="module")
def three_days(tmp_path_factory):
    """A small generated archive (churn on) of three daily snapshots."""
    from bgp_congruency.synth.generate import generate

    archive = tmp_path_factory.mktemp("three-days") / "archive"
    generate(archive, seed=4, ases=80, vps=6, months=(ROUTES_MONTH,), snapshots_per_month=3, ground_truth=False,
             workers=1)
    return archive


def _ingest(archive: Path, data: Path, days: str, *more: str, **env) -> subprocess.CompletedProcess:
    from tests.support.cli import congruency
    from tests.support.cli import env as environment

    return congruency("ingest", "--month", ROUTES_MONTH, "--days", days, "--times", "00:00", "--collectors",
                      "route-views2,route-views6,rrc00,rrc01", "--archive-root", str(archive), "--data-dir", str(data),
                      *more, env=environment(**env))


def _stored(data: Path) -> dict:
    """collector -> (its snapshots, its route rows sorted): what the month's routes hold."""
    import pyarrow.parquet as pq

    from bgp_congruency.common import routes

    out = {}
    for c, g in routes.month_generations(data, ROUTES_MONTH).items():
        rows = [tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in r.items())
                for f in routes.files(g) for r in pq.read_table(f).to_pylist()]
        out[c] = ([s.source_file.rsplit("/", 1)[-1] for s in routes.snapshots(g)], sorted(rows, key=repr))
    return out


@pytest.mark.slow
def test_a_snapshot_ingested_later_merges_into_the_month(three_days, tmp_path):
    """Days 1 and 3, then day 2 (a backfill in the middle: every route's bits move) give the
    routes of the three ingested at once, bit for bit; the routes expand back to every dump's
    entries as the native decoder reads them (not merged); the older generations are gone;
    the compare's provenance is the one of the three days ingested at once."""
    from tests.support.month import entry_rows

    late, once = tmp_path / "late", tmp_path / "once"
    for days in ("1,3", "1-3"):
        r = _ingest(three_days, late, days, "--json")
        assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)  # day 2 alone decoded: days 1 and 3 are in the routes, not redone
    assert out["already_done"] == 8 and sorted(x["slot"].split("@")[1][:8] for x in out["snapshots"]) == \
        [ROUTES_MONTH.replace("-", "") + "02"] * 4, out
    r = _ingest(three_days, once, "1-3")
    assert r.returncode == 0, r.stderr
    got, want = _stored(late), _stored(once)
    assert got == want and len(got) == 4 and all(len(s) == 3 for s, _ in got.values())
    assert all(len(list((late / "routes" / f"month={ROUTES_MONTH}" / f"collector={c}").iterdir())) == 1 for c in got)
    con = duckdb.connect()
    from bgp_congruency.common import routes

    cols = "collector, snapshot_time, peer_asn, peer_ip, afi, prefix, as_path, has_as_set"
    expanded = con.execute(f"SELECT {cols} FROM ({routes.expand_sql(routes.month_files(late, ROUTES_MONTH))})"
                           ).fetchall()
    decoded = [tuple(r[c] for c in cols.split(", ")) for r in entry_rows(late, ROUTES_MONTH)]
    assert sorted(expanded, key=repr) == sorted(decoded, key=repr) and len(decoded) > 1000
    m = pq.read_table(late / "manifest" / f"month={ROUTES_MONTH}").to_pylist()
    assert len(m) == 12 and {r["status"] for r in m} == {"ok"}
    assert {r["output"] for r in m} == {f"routes/month={ROUTES_MONTH}/collector={c}" for c in got}
    # Traceable: the compare's provenance of the month with its late day is that of the month
    # ingested at once (but when it was published): the 12 dumps, each file hashed here.
    import hashlib

    from bgp_congruency.lake import published
    from tests.support.cli import congruency

    prov = {}
    for d in (late, once):
        r = congruency("compare", "--month", ROUTES_MONTH, "--data-dir", str(d), "--min-coverage", "0")
        assert r.returncode == 0, r.stderr
        [prov[d]] = [{k: v for k, v in p.items() if k != "published_at"}
                     for p in published.read(d, "provenance", ROUTES_MONTH).to_pylist()]
    assert prov[late] == prov[once]
    p = prov[late]
    assert len(p["snapshots_used"]) == 12 and p["snapshots_missing"] == [] == p["snapshots_failed"]
    assert p["input_sha256"] == [hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in p["input_files"]]
    assert sorted(p["input_files"]) == sorted(r["url"] for r in m)
    assert p["entries"] == sum(r["entries_v4"] + r["entries_v6"] for r in m)


@pytest.mark.slow
def test_a_month_larger_than_one_range_reads_each_ranges_row_groups(three_days, tmp_path, monkeypatch):
    """A merge in bucket ranges of about 60 entries (a month far larger than its memory, made
    small, and routes too big for the decode pass to hold them: its merger lets go before the
    first dump, by the dump's size): every dump is written a row group per VP bucket, and each
    range reads its own row groups of them, nothing split first. The routes equal an ingest in one range, bit for
    bit. (Files without a bucket per row group are split first:
    test_a_merge_in_many_bucket_ranges_equals_one_in_one.)"""
    from bgp_congruency.ingest import routes

    once, ranged = tmp_path / "once", tmp_path / "ranged"
    assert _ingest(three_days, once, "1-3").returncode == 0
    seen = []
    groups = routes._bucket_groups
    monkeypatch.setattr(routes, "_bucket_groups", lambda p: seen.append((Path(p).name, groups(p))) or seen[-1][1])
    monkeypatch.setattr(routes, "MIN_CHUNK_ROWS", 1)
    monkeypatch.setattr(routes, "BYTES_PER_ROW", (1 << 30) // 2 // 60)  # 1GB, two merges at once: 60 rows a range
    monkeypatch.setattr(routes, "ROUTE_BYTES", 1 << 24)  # routes too big for the decode pass to hold
    config = tmp_path / "small.toml"
    config.write_text('duckdb_memory_limit = "1GB"\nconcurrency = 2\n')
    assert cli(["ingest", "--month", ROUTES_MONTH, "--days", "1-3", "--times", "00:00", "--collectors",
                "route-views2,route-views6,rrc00,rrc01", "--archive-root", str(three_days), "--data-dir", str(ranged),
                "--config", str(config)]) == 0
    got, want = _stored(ranged), _stored(once)
    assert got == want and len(got) == 4
    gens = [g for g in sorted((ranged / "routes" / f"month={ROUTES_MONTH}").glob("collector=*/gen-*"))]
    assert all(len(list(g.glob("part-*.parquet"))) > 1 for g in gens), gens
    assert len(seen) == 12 and all(g is not None for _, g in seen), seen
    assert sum(len({b for b, _ in g}) > 1 for _, g in seen) >= 8  # the bigger collectors' rows, several buckets each
    assert not list(ranged.rglob(".chunks-*")) and not (ranged / "_staging" / f"ingest-{ROUTES_MONTH}").exists()


@pytest.mark.slow
def test_routes_the_decode_pass_holds_are_merged_in_one_range(three_days, tmp_path, monkeypatch):
    """Entries enough for several bucket ranges of 60 (as above), but routes the decode pass
    held within its budget: each collector is merged in one range from what it fed, no file
    read back, nothing split; the routes are the same."""
    from bgp_congruency.ingest import routes

    once, fed = tmp_path / "once", tmp_path / "fed"
    assert _ingest(three_days, once, "1-3").returncode == 0
    monkeypatch.setattr(routes, "MIN_CHUNK_ROWS", 1)
    monkeypatch.setattr(routes, "BYTES_PER_ROW", (1 << 30) // 2 // 60)
    read, split, merge_chunk = [], [], routes._merge_chunk
    monkeypatch.setattr(routes, "_merge_chunk", lambda con, new, *a: read.extend(new) or merge_chunk(con, new, *a))
    monkeypatch.setattr(routes, "_split", lambda *a, **k: split.append(a) or [])
    config = tmp_path / "small.toml"
    config.write_text('duckdb_memory_limit = "1GB"\nconcurrency = 2\n')
    assert cli(["ingest", "--month", ROUTES_MONTH, "--days", "1-3", "--times", "00:00", "--collectors",
                "route-views2,route-views6,rrc00,rrc01", "--archive-root", str(three_days), "--data-dir", str(fed),
                "--config", str(config)]) == 0
    assert _stored(fed) == _stored(once)
    assert read == [] and split == []
    assert all(len(list(g.glob("part-*.parquet"))) == 1
               for g in (fed / "routes" / f"month={ROUTES_MONTH}").glob("collector=*/gen-*"))


@pytest.mark.slow
def test_a_dump_that_fails_halfway_leaves_none_of_its_rows_in_the_routes(three_days, tmp_path):
    """The decode pass feeds each collector's merger batch by batch (ingest/routes.Feed): a
    dump cut in the middle has fed some batches when its decode fails. Its slot is failed,
    and the collector's routes are those of its other dumps alone, bit for bit, as a run
    that never saw it (which merges by reading the decoded files: no feed of a cut dump)."""
    import gzip
    import shutil

    archive = tmp_path / "archive"
    shutil.copytree(three_days, archive)
    [cut] = (archive / "rrc00").rglob("bview.*02.0000.gz")
    whole = gzip.decompress(cut.read_bytes())
    cut.write_bytes(gzip.compress(whole[: len(whole) * 2 // 3]))  # a record cut short, two thirds in
    config = tmp_path / "small-batches.toml"
    config.write_text("batch_rows = 50\n")
    data, without = tmp_path / "data", tmp_path / "without"
    r = _ingest(archive, data, "1-3", "--config", str(config))
    assert r.returncode == 1 and "bview.20260702.0000.gz" in r.stderr, r.stderr
    rows = {x["slot"]: x for x in pq.read_table(data / "manifest" / f"month={ROUTES_MONTH}").to_pylist()}
    assert rows["rrc00@20260702T0000"]["status"] == "failed", rows["rrc00@20260702T0000"]
    assert _ingest(archive, without, "1,3", "--config", str(config)).returncode == 0
    got, want = _stored(data)["rrc00"], _stored(without)["rrc00"]
    assert got == want and got[0] == ["bview.20260701.0000.gz", "bview.20260703.0000.gz"] and len(got[1]) > 100


class _CrashingNative:
    """The native backend, but the first `times` decodes of `collector`'s dumps yield one
    batch of the dump's rows under a peer ASN no dump has (MARK), then raise RecursionError:
    an unexpected error inside the decoder, not a fault of the file."""
    NAME, SELF_CHECKING = "native", True
    MARK = 64496  # documentation ASN (RFC 5398)

    def __init__(self, collector: str, times: int, error: type[Exception] = RecursionError):
        self.native, self.collector, self.left, self.error = backends.get("native"), collector, times, error
        self.refuses = self.native.refuses

    def decode_checked(self, path, batch_rows, *, collector, **kw):
        it = self.native.decode_checked(path, batch_rows, collector=collector, **kw)
        if collector == self.collector and self.left > 0:
            self.left -= 1
            b = next(it)
            i = b.schema.get_field_index("peer_asn")
            yield b.set_column(i, b.schema.field(i), pa.array([self.MARK] * b.num_rows, pa.uint32()))
            raise self.error("maximum recursion depth exceeded")
        return (yield from it)


@pytest.mark.parametrize("crashes, error_type, remote", [(1, RecursionError, False), (2, RecursionError, False),
                                                         (1, OSError, False), (1, RecursionError, True),
                                                         (2, RecursionError, True)])
def test_an_unexpected_error_is_decoded_once_more_then_failed(three_days, config, tmp_path, monkeypatch, capsys,
                                                              crashes, error_type, remote):
    """An unexpected error inside the decoder (CI once saw a RecursionError in a decode of the
    real route-views6 sample) is logged with where it was raised, and the dump decoded once
    more. rrc00's first dump crashes after feeding its collector's merger a batch (under a
    marked peer ASN); the retry feeds the same merger again, beside the dumps after it. None
    of the crashed attempt's rows may reach the routes: they equal a clean ingest's row for
    row. A second crash fails that snapshot alone: rrc00's routes are then those of a run
    that never had it, the other collectors' the clean ingest's. An OSError (the disk's or the
    system's) fails it at once. No file is left staged. `remote`: the archive over HTTP; the
    retry reads the first attempt's download again, which costs one ranged request answered
    416 (nothing sent again), and a second crash removes it from the cache."""
    from contextlib import nullcontext

    from bgp_congruency.ingest import routes
    from tests.support.archive_server import serve

    fed = []  # (the collector's feed, the dump's bit, whether its batch is marked)
    real_add = routes.FeedDump.add

    def add(self, batch):
        fed.append((id(self._feed), self._sid, _CrashingNative.MARK in batch.column("peer_asn").to_pylist()))
        real_add(self, batch)

    monkeypatch.setattr(routes.FeedDump, "add", add)
    base = config.with_overrides(archive_root=str(three_days), days=(1, 2, 3), times=("00:00",), concurrency=1,
                                 collectors=("route-views2", "route-views6", "rrc00", "rrc01"), batch_rows=50)
    assert all(r.status == "ok" for r in ingest_run.run(base.with_overrides(data_dir=tmp_path / "clean"),
                                                        ROUTES_MONTH).rows)
    backend = _CrashingNative("rrc00", crashes, error_type)
    monkeypatch.setattr(ingest_run.backends, "get", lambda name: backend)
    fed.clear()
    data = tmp_path / "data"
    with serve(three_days) if remote else nullcontext(str(three_days)) as root:
        rows = {r.slot: r for r in ingest_run.run(base.with_overrides(data_dir=data, archive_root=str(root)),
                                                  ROUTES_MONTH).rows}
    if remote:
        crashed = rows["rrc00@20260701T0000"]
        path = crashed.url[len(root):]
        size = (three_days / path.lstrip("/")).stat().st_size
        assert [h.get("range") for _m, h in root.requests(path)] == [None, f"bytes={size}-"]
        cached = {p.name for p in (data / "cache" / "rrc00").iterdir()}
        assert not [n for n in cached if n.endswith(".part")] and (Path(path).name in cached) == (crashes == 1), cached
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    if error_type is OSError:
        assert warned == []
    else:
        assert len(warned) == 1 and "RecursionError: maximum recursion depth exceeded at " in warned[0], warned
        assert "bview.20260701.0000.gz" in warned[0] and "decoding it once more" in warned[0]
    [feed] = {f for f, _sid, marked in fed if marked}  # rrc00's
    assert [(sid, marked) for f, sid, marked in fed if f == feed][0] == (0, True)  # the crashed attempt was fed
    got, clean = _stored(data), _stored(tmp_path / "clean")
    assert not [p for p in (data / "_staging").rglob("*") if p.is_file()]
    if crashes == 1 and error_type is RecursionError:
        assert {sid for f, sid, marked in fed if f == feed and not marked} >= {1, 2}  # the retry and the next dump
        assert all(r.status == "ok" for r in rows.values()), [r.error for r in rows.values()]
        assert got == clean  # rrc00's too: the marked rows are in no route
    else:
        assert rows["rrc00@20260701T0000"].status == "failed"
        error = rows["rrc00@20260701T0000"].error
        assert f"{error_type.__name__}: maximum recursion depth exceeded" in error
        if error_type is RecursionError:
            assert " at test_ingest.py:" in error  # where: in the decoder
        assert [k for k, r in rows.items() if r.status != "ok"] == ["rrc00@20260701T0000"]
        ingest_run.run(base.with_overrides(data_dir=tmp_path / "without", days=(2, 3), collectors=("rrc00",)),
                       ROUTES_MONTH)
        assert got.pop("rrc00") == _stored(tmp_path / "without")["rrc00"]
        assert got == {c: v for c, v in clean.items() if c != "rrc00"}


@pytest.mark.slow
@pytest.mark.parametrize("point", ["merge", "merged"])
def test_a_kill_during_the_merge_then_a_run_equals_an_uninterrupted_one(three_days, tmp_path, point):
    """SIGKILL while a collector's new generation is written (`merge`: the month as it was,
    for every reader) or once it is in place but not yet recorded (`merged`): the next ingest
    decodes nothing again and leaves the routes and manifest of an uninterrupted one."""
    import signal

    from bgp_congruency.common import routes
    from tests.support.cli import start, wait_for

    data, once = tmp_path / "data", tmp_path / "once"
    assert _ingest(three_days, once, "1-3").returncode == 0
    pause = tmp_path / "paused"
    p = start("ingest", "--month", ROUTES_MONTH, "--days", "1-3", "--times", "00:00", "--collectors",
              "route-views2,route-views6,rrc00,rrc01", "--archive-root", str(three_days), "--data-dir", str(data),
              CONGRUENCY_PAUSE_AT=point, CONGRUENCY_PAUSE_FILE=str(pause))
    wait_for(pause, p)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    if point == "merge":  # the first collector's generation is half written: no reader sees it
        assert routes.month_generations(data, ROUTES_MONTH) == {}
        assert list((data / "routes" / f"month={ROUTES_MONTH}").glob("collector=*/.gen-*.tmp"))
    decoded = sorted((data / "_staging" / f"ingest-{ROUTES_MONTH}").glob("collector=*/*.parquet"))
    assert len(decoded) == 12  # every dump decoded whole before the merge
    r = _ingest(three_days, data, "1-3")
    assert r.returncode == 0, r.stderr
    assert json.loads(congruency_json(three_days, data))["already_done"] == 12
    assert _stored(data) == _stored(once)
    keep = ("slot", "status", "url", "sha256", "entries_v4", "entries_v6", "output")
    rows = [sorted(({k: r[k] for k in keep} for r in pq.read_table(d / "manifest" / f"month={ROUTES_MONTH}")
                    .to_pylist()), key=lambda r: r["slot"]) for d in (data, once)]
    assert rows[0] == rows[1]
    assert not list(data.rglob(".gen-*")) and not (data / "_staging" / f"ingest-{ROUTES_MONTH}").exists()


@pytest.mark.slow
def test_a_kill_while_a_late_snapshot_merges_leaves_the_month_as_it_was(three_days, tmp_path):
    """Days 1 and 3 ingested; SIGKILL while day 2 merges into them (a collector's new
    generation half written): every reader still sees the routes of days 1 and 3, bit for
    bit. The next ingest decodes nothing again (day 2's dumps wait decoded, each with its
    row) and leaves the routes of the three days ingested at once."""
    import signal

    from tests.support.cli import start, wait_for

    data, once = tmp_path / "data", tmp_path / "once"
    assert _ingest(three_days, data, "1,3").returncode == 0
    assert _ingest(three_days, once, "1-3").returncode == 0
    before = _stored(data)
    pause = tmp_path / "paused"
    p = start("ingest", "--month", ROUTES_MONTH, "--days", "1-3", "--times", "00:00", "--collectors",
              "route-views2,route-views6,rrc00,rrc01", "--archive-root", str(three_days), "--data-dir", str(data),
              CONGRUENCY_PAUSE_AT="merge", CONGRUENCY_PAUSE_FILE=str(pause))
    wait_for(pause, p)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    assert list((data / "routes" / f"month={ROUTES_MONTH}").glob("collector=*/.gen-*.tmp"))
    assert _stored(data) == before and all(len(s) == 2 for s, _ in before.values())
    r = _ingest(three_days, data, "1-3", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["already_done"] == 12 and out["snapshots"] == [], out  # nothing decoded again
    assert _stored(data) == _stored(once)
    assert not list(data.rglob(".gen-*")) and not (data / "_staging" / f"ingest-{ROUTES_MONTH}").exists()


def congruency_json(archive: Path, data: Path) -> str:
    """A plain re-run's --json (everything done)."""
    from tests.support.cli import congruency

    r = congruency("ingest", "--month", ROUTES_MONTH, "--days", "1-3", "--times", "00:00", "--collectors",
                   "route-views2,route-views6,rrc00,rrc01", "--archive-root", str(archive), "--data-dir", str(data),
                   "--json")
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.slow
def test_a_merge_in_many_bucket_ranges_equals_one_in_one(ingested_2026, config, tmp_path, monkeypatch):
    """The real route-views6 entries as two dumps (the real one, and a day later a fifth of
    its prefixes gone and a seventh of its paths changed): merged at once in one bucket range,
    and one dump after the other in ranges of about 30,000 rows (the rows split into a file
    per range first: ingest/routes._split), the routes are the same, bit for bit, and the
    split's files are gone; also with the second dump's paths stored as bytes, as ingest's
    writer stores them (common/tables.DECODED_STORED), beside the first's lists."""
    from bgp_congruency.common import routes as stored
    from bgp_congruency.common.tables import DECODED_SCHEMA
    from bgp_congruency.ingest import routes

    c = "route-views6"
    con = duckdb.connect()
    entries = (f"(SELECT {', '.join(DECODED_SCHEMA.names)} FROM "
               f"({stored.expand_sql({c: stored.month_files(ingested_2026, ROUTES_MONTH)[c]})}))")
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    con.execute(f"COPY {entries} TO '{a}' (FORMAT parquet)")
    con.execute(f"""COPY (SELECT * REPLACE (snapshot_time + INTERVAL 1 DAY AS snapshot_time,
                                           source_file || '.next' AS source_file,
                                           CASE WHEN hash(prefix) % 7 = 0 THEN list_prepend(peer_asn, as_path)
                                                ELSE as_path END AS as_path)
                          FROM {entries} WHERE hash(prefix) % 5 != 0) TO '{b}' (FORMAT parquet)""")
    once, split = tmp_path / "once", tmp_path / "split"
    routes.merge(config.with_overrides(data_dir=once, duckdb_memory_limit="1GB"), ROUTES_MONTH, c, [a, b])
    one_range = routes.BYTES_PER_ROW
    monkeypatch.setattr(routes, "MIN_CHUNK_ROWS", 1)
    monkeypatch.setattr(routes, "BYTES_PER_ROW", (1 << 30) // 30_000)  # 1GB: 30,000 rows a range
    for d in (a, b):
        routes.merge(config.with_overrides(data_dir=split, duckdb_memory_limit="1GB"), ROUTES_MONTH, c, [d])

    # The second dump as ingest's writer stores it (paths as bytes) beside the first as a list,
    # as a run of an earlier version killed before its merge leaves them: merged at once, in
    # one range and in ranges (one split per form), the routes are the same.
    b_bytes = tmp_path / "b-bytes.parquet"
    w = SnapshotWriter(b_bytes)
    for batch in pq.read_table(b).cast(DECODED_SCHEMA).to_batches():
        w.write(batch)
    w.publish()
    assert pq.read_schema(b_bytes).field("as_path").type == pa.binary()
    mixed_once, mixed_split = tmp_path / "mixed-once", tmp_path / "mixed-split"
    for d, per_row in ((mixed_once, one_range), (mixed_split, (1 << 30) // 30_000)):
        monkeypatch.setattr(routes, "BYTES_PER_ROW", per_row)
        routes.merge(config.with_overrides(data_dir=d, duckdb_memory_limit="1GB"), ROUTES_MONTH, c, [a, b_bytes])

    got, want = _stored(split), _stored(once)
    assert got == want and list(want) == [c]
    assert _stored(mixed_once) == _stored(mixed_split) == want
    assert len(want[c][0]) == 2 and len(want[c][1]) > 100_000
    gens = {d: stored.current(d, ROUTES_MONTH, c) for d in (once, split, mixed_split)}
    assert stored.snapshots(gens[split]) == stored.snapshots(gens[once])  # times too
    assert len(stored.files(gens[once])) == 1 and len(stored.files(gens[split])) > 4
    assert len(stored.files(gens[mixed_split])) > 4
    assert not list(tmp_path.rglob(".chunks-*")) and not list(tmp_path.rglob("*.tmp"))


def test_a_merge_makes_its_spill_folder_again_when_another_merge_removed_its_parent(tmp_path, monkeypatch):
    """The collectors of a month merge side by side, and each removes the month's work folder
    when it is left empty. A merge whose makedirs saw that folder, then found it gone at its own
    mkdir, makes it again (ingest/routes.made): the race a CI run met, forced here."""
    from bgp_congruency.ingest import routes

    work = tmp_path / "_staging" / "ingest-2024-01"
    work.mkdir(parents=True)
    real, raced = Path.mkdir, []

    def racing(self, *args, **kwargs):
        if self.name == ".spill-rrc00" and not raced:
            raced.append(self)
            work.rmdir()  # the other merge ends between the check and this mkdir
            raise FileNotFoundError(2, "No such file or directory", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", racing)
    assert routes.made(work / ".spill-rrc00") == work / ".spill-rrc00"
    assert raced and (work / ".spill-rrc00").is_dir()
