"""The native decoder (ingest/native) against independent evidence: ingest/framing.py's own
pass over the same bytes, `bgpdump -m` and the bgpdump backend; multi-stream / multi-member
files made from the shared samples; the faulty files; an updates file; one read per download;
and a property-based fuzz run over the real samples (tests/fuzz/native_fuzz.py).

Row-for-row equality with the bgpdump backend on every sample RIB is
tests/test_ingest.py::test_backends_give_the_same_rows."""
from __future__ import annotations

import bz2
import hashlib
import json
from pathlib import Path

import pytest

from bgp_congruency.cli.main import main as cli
from bgp_congruency.ingest import download, framing
from tests.fuzz.native_fuzz import boundaries, check, decode, seeds
from tests.fuzz.native_fuzz import run as fuzz_run
from tests.support.archive_server import serve
from tests.support.data import ARCHIVE, EDGE, FAULTY, RV2_2026, RV6_2026, needs_data, require_tool
from tests.support.decode import decode_file, multistream_files

pytestmark = needs_data
BVIEW_2002 = ARCHIVE / "rrc00/2002.07/bview.20020722.2337.gz"
UPDATES = ARCHIVE / "route-views.sydney/bgpdata/2022.06/UPDATES/updates.20220601.0230.bz2"


@pytest.mark.parametrize("path", sorted(p for p in EDGE.glob("*") if p.is_file()) + [BVIEW_2002, RV6_2026],
                         ids=lambda p: p.name)
def test_stats_equal_the_framing_pass(path):
    """Records, entries per AFI, skipped records, first timestamp, sizes and sha256 of the one
    native pass equal framing.scan's (and hashlib's) on the same file."""
    table, stats = decode(path)
    assert stats == framing.scan(path)
    assert stats.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    afi = table.column("afi").to_pylist()
    assert {a: afi.count(a) for a in set(afi)} == dict(stats.entries)


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(FAULTY.glob("*")), ids=lambda p: p.name)
def test_faulty_files_fail_with_the_framing_message(path):
    with pytest.raises(framing.FramingError) as ref:
        framing.scan(path)
    assert decode(path) == str(ref.value)


@pytest.mark.slow
def test_a_file_that_is_not_mrt_or_has_garbage_after_the_stream(tmp_path):
    cases = {
        "text.bz2": bz2.compress(b"this is not MRT\n" * 100),
        "garbage.bz2": RV6_2026.read_bytes() + b"\0garbage",
        "garbage.gz": (EDGE / "lab.rib.ipv4-addpath.gz").read_bytes() + b"junk",
        "cut.gz": (EDGE / "rrc00.bview.20180919.0800.64k-record.gz").read_bytes()[:-9],
        "empty.mrt": b"",
    }
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(framing.FramingError) as ref:
            framing.scan(p)
        assert decode(p) == str(ref.value), name
    assert decode(tmp_path / "garbage.bz2") == "trailing garbage after the bzip2 stream"
    assert decode(tmp_path / "cut.gz") == "truncated gzip stream (download cut short?)"


@pytest.mark.slow
def test_multistream_bz2_and_multimember_gz_are_read_whole(tmp_path):
    """Multi-stream and multi-member files (multistream_files): every entry, as from the original file."""
    three_bz2, two_gz = multistream_files(tmp_path)
    whole, whole_stats = decode(RV6_2026)
    for f in (three_bz2, two_gz):
        table, stats = decode(f)
        assert stats.entries == {6: 164_279} and stats.records == whole_stats.records
        assert table.equals(whole)
    # The bgpdump backend reads them whole too (bgpdump alone stops after the first stream).
    require_tool("bgpdump")
    stats, decoded, _ = decode_file(three_bz2, "bgpdump", tmp_path)
    assert decoded == {4: 0, 6: 164_279}


def test_an_updates_file_is_refused_by_every_backend_with_one_message(tmp_path):
    require_tool("bgpdump")
    msgs = {name: decode_file(UPDATES, name, tmp_path) for name in ("native", "bgpdump")}
    assert msgs["native"] == msgs["bgpdump"]
    assert msgs["native"].startswith(f"{UPDATES}: no RIB entries (not a RIB dump? its records: ")
    assert "mrt type 16)" in msgs["native"] and "{" not in msgs["native"]  # words, not a Python dict


@pytest.mark.slow
def test_every_record_boundary_and_every_byte_cut_of_small_files(tmp_path):
    """A cut at a record boundary is a shorter valid file (its rows are the first rows of the
    whole); a cut inside a record is refused, never misread. Every byte of a small file;
    every boundary and the byte after it of the other raw seeds (TABLE_DUMP v1, ADD-PATH, 64 KiB)."""
    for name, _ in seeds().items():
        data, raw = seeds()[name]
        if not raw:
            continue
        cuts = set(boundaries(data))
        every = name == "quagga.tdv2"
        for at in range(len(data) + 1) if every else sorted(cuts | {c + 1 for c in cuts if c < len(data)}):
            out = check(name, data[:at], tmp_path, at if at in cuts else None)
            assert out == ("rows" if at in cuts and at > 0 else "error"), (name, at)


@pytest.mark.slow
def test_property_based_fuzz_over_the_real_samples():
    """A few hundred Hypothesis examples (cuts, bit flips, random bytes over raw and compressed
    real samples); each ends in rows that framing.scan confirms or in a one-line error."""
    out = fuzz_run(300)
    assert sum(out.values()) == 300
    assert any(k.endswith(":rows") for k in out) and any(k.endswith(":error") for k in out)


def _raw_batches(path: Path, workers: int):
    import congruency_mrt

    r = congruency_mrt.Reader(str(path), 100_000, workers)
    try:
        return [b for b in r], r.stats
    except congruency_mrt.MrtError as exc:
        return str(exc)


@pytest.mark.slow
def test_parallel_bzip2_blocks_equal_the_sequential_decoder(tmp_path):
    """bzip2 blocks decompressed on two cores give the same bytes, stats and errors as the
    sequential decoder: on real multi-block files, and where the parallel path must stop and
    hand over (a corrupt block in the middle, a cut in a later block, garbage after it)."""
    data, _ = seeds()["rv2-2026.blocks.bz2"]
    cases = {"blocks.bz2": data, "corrupt-middle.bz2": data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0x10])
             + data[len(data) // 2 + 1:], "cut-late.bz2": data[:-2000], "garbage.bz2": data + b"junk",
             "two-streams.bz2": data + data}
    paths = [RV2_2026, RV6_2026]
    for name, b in cases.items():
        (tmp_path / name).write_bytes(b)
        paths.append(tmp_path / name)
    for p in paths:
        seq, par = _raw_batches(p, 1), _raw_batches(p, 2)
        assert seq == par, p.name
    assert _raw_batches(tmp_path / "cut-late.bz2", 2) == "truncated bzip2 stream (download cut short?)"
    assert _raw_batches(tmp_path / "garbage.bz2", 2) == "trailing garbage after the bzip2 stream"
    assert isinstance(_raw_batches(tmp_path / "corrupt-middle.bz2", 2), str)


def test_a_panic_in_the_decoder_thread_is_an_exception():
    import congruency_mrt

    with pytest.raises(congruency_mrt.MrtError, match=r"^internal decoder error: self-test panic$"):
        congruency_mrt._panic_in_thread()


@pytest.mark.slow
def test_a_download_is_decompressed_once_and_only_a_checked_file_is_kept(tmp_path, capsys, monkeypatch):
    """Over HTTP the decode pass is the stream check: no other pass decompresses the bytes,
    and a cut-off .bz2 leaves neither a cached file nor a .part nor Parquet behind."""
    def forbidden(*a, **k):
        raise AssertionError("a second decompressing pass ran")

    monkeypatch.setattr(framing, "scan", forbidden)
    monkeypatch.setattr(download, "_StreamCheck", forbidden)
    rv2 = "route-views2/bgpdata/2026.07/RIBS/"
    root = tmp_path / "archive"
    (root / rv2).mkdir(parents=True)
    (root / rv2 / "rib.20260730.1400.bz2").write_bytes(
        (FAULTY / "route-views2.rib.20260730.1400.truncated-download.bz2").read_bytes())
    (root / "route-views6/bgpdata/2026.07/RIBS").mkdir(parents=True)
    (root / "route-views6/bgpdata/2026.07/RIBS/rib.20260730.1400.bz2").write_bytes(RV6_2026.read_bytes())
    data = tmp_path / "data"
    with serve(root) as url:
        assert cli(["ingest", "--month", "2026-07", "--days", "30", "--times", "14:00", "--archive-root", url,
                    "--data-dir", str(data), "--json", "--backend", "native"]) == 1
    rows = {r["collector"]: r for r in json.loads(capsys.readouterr().out)["snapshots"]}
    assert rows["route-views6"]["status"] == "ok" and rows["route-views6"]["entries_v6"] == 164_279
    assert rows["route-views6"]["sha256"] == hashlib.sha256(RV6_2026.read_bytes()).hexdigest()
    assert rows["route-views2"]["status"] == "failed"
    assert rows["route-views2"]["error"].endswith("rib.20260730.1400.bz2: truncated bzip2 stream (download cut short?)")
    kept = sorted(p.relative_to(data).as_posix() for p in data.rglob("*") if p.is_file())
    # no cache file, no .part, no Parquet (its manifest file records the failure)
    assert [k for k in kept if "route-views2" in k] == ["manifest/month=2026-07/collector=route-views2.parquet"]
    assert any(k.startswith("routes/month=2026-07/collector=route-views6/gen-000001/part-") for k in kept), kept
