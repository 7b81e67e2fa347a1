"""ingest.download against a local archive server serving the real shared dumps, with faults."""
from __future__ import annotations

import bz2
import functools
import gzip
import hashlib
import os
import socket
import time
from pathlib import Path

import pytest

from bgp_congruency.ingest.download import (
    DownloadError,
    FetchResult,
    NotFound,
    exists,
    fetch,
    list_directory,
    verify_compressed_stream,
)
from tests.support.archive_server import serve
from tests.support.data import ARCHIVE, FAULTY

RIBS_DIR = "/route-views2/bgpdata/2026.07/RIBS/"
RIB = RIBS_DIR + "rib.20260730.1400.bz2"
BVIEW = "/rrc00/2002.07/bview.20020722.2337.gz"
CUT = "route-views2.rib.20260730.1400.truncated-download.bz2"
DUMP = BVIEW  # transport-fault tests: a real RIS RIB dump, gzip so verifying takes ms (bz2: ~1 s/MB here)
FAST = dict(timeout=2.0, backoff=0.01)  # keep retry loops in the milliseconds

pytestmark = pytest.mark.skipif(not (ARCHIVE / RIB[1:]).is_file(), reason="shared archive data not present")


@functools.cache
def digest(path: Path) -> tuple[int, str]:
    data = path.read_bytes()
    return len(data), hashlib.sha256(data).hexdigest()


def part_of(dest: Path) -> Path:
    return dest.parent / f".{dest.name}.part"


def assert_nothing_left(dest: Path) -> None:
    assert not dest.exists() and not part_of(dest).exists()


@pytest.fixture
def archive():
    """Base URL of the shared archive served over HTTP; set ``archive.faults[path]`` per test."""
    with serve(ARCHIVE) as url:
        yield url


def test_download_real_rib_then_cache_hit(archive, tmp_path):
    size, sha = digest(ARCHIVE / RIB[1:])
    dest, totals, progress = tmp_path / "cache" / "rib.20260730.1400.bz2", [], []
    r = fetch(archive + RIB, dest, on_total=totals.append, on_bytes=progress.append, **FAST)
    assert r == FetchResult(dest, size, sha, resumed=False, attempts=1, cached=False)
    assert digest(dest) == (size, sha) and not part_of(dest).exists()
    assert totals == [size] and progress[-1] == size and progress == sorted(progress)
    seen = archive.total_hits
    again = fetch(archive + RIB, dest, **FAST)
    assert again == FetchResult(dest, size, sha, resumed=False, attempts=0, cached=True)
    assert archive.total_hits == seen  # zero requests for a cached file


def test_resume_after_drop_uses_range(archive, tmp_path):
    archive.faults[DUMP] = "drop:500000:1"
    dest = tmp_path / "bview.gz"
    r = fetch(archive + DUMP, dest, **FAST)
    assert (r.resumed, r.attempts, r.sha256) == (True, 2, digest(ARCHIVE / DUMP[1:])[1])
    (_, first), (_, second) = archive.requests(DUMP)
    assert "range" not in first and second["range"] == "bytes=500000-" and "if-range" in second


def test_restart_when_server_ignores_range(archive, tmp_path):
    archive.faults[DUMP] = "drop:500000:1,norange"
    dest, progress = tmp_path / "bview.gz", []
    r = fetch(archive + DUMP, dest, on_bytes=progress.append, **FAST)
    assert (r.resumed, r.attempts, r.sha256) == (False, 2, digest(ARCHIVE / DUMP[1:])[1])
    assert archive.requests(DUMP)[1][1]["range"] == "bytes=500000-"
    assert 500000 in progress and progress[-1] == r.bytes  # went back to 0 and up again


def test_leftover_part_from_killed_run_is_resumed(archive, tmp_path):
    src = (ARCHIVE / DUMP[1:]).read_bytes()
    dest = tmp_path / "bview.gz"
    part_of(dest).write_bytes(src[:700000])
    r = fetch(archive + DUMP, dest, **FAST)
    assert (r.resumed, r.attempts, r.sha256) == (True, 1, digest(ARCHIVE / DUMP[1:])[1])
    assert archive.requests(DUMP)[0][1]["range"] == "bytes=700000-"
    # a .part that is already complete (killed between download and rename): server says 416
    dest2 = tmp_path / "again" / "bview.gz"
    dest2.parent.mkdir()
    part_of(dest2).write_bytes(src)
    r2 = fetch(archive + DUMP, dest2, **FAST)
    assert (r2.attempts, r2.sha256, r2.cached) == (1, r.sha256, False) and dest2.exists()


def test_500_twice_then_ok(archive, tmp_path):
    archive.faults[DUMP] = "500:2"
    r = fetch(archive + DUMP, tmp_path / "bview.gz", **FAST)
    assert r.attempts == 3 and archive.hits(DUMP) == 3 and r.sha256 == digest(ARCHIVE / DUMP[1:])[1]


def test_persistent_500_gives_up(archive, tmp_path):
    archive.faults[DUMP] = "500"
    dest = tmp_path / "bview.gz"
    with pytest.raises(DownloadError, match=r"HTTP 500 Internal Server Error \(3 attempts\)$"):
        fetch(archive + DUMP, dest, retries=2, **FAST)
    assert archive.hits(DUMP) == 3
    assert_nothing_left(dest)


def test_404_is_not_found_fast_without_retries(archive, tmp_path):
    dest = tmp_path / "x.bz2"
    t0 = time.monotonic()
    with pytest.raises(NotFound, match=r"^http://127\.0\.0\.1:\d+/route-views2/nope\.bz2: HTTP 404 Not Found$"):
        fetch(archive + "/route-views2/nope.bz2", dest, backoff=5.0)
    assert time.monotonic() - t0 < 2 and archive.hits("/route-views2/nope.bz2") == 1
    assert_nothing_left(dest)
    archive.faults[DUMP] = "404"  # injected 404 for an existing file behaves the same
    with pytest.raises(NotFound):
        fetch(archive + DUMP, dest, backoff=5.0)
    assert archive.hits(DUMP) == 1


def test_slow_server_times_out_after_bounded_retries(archive, tmp_path):
    archive.faults[DUMP] = "slow:10"
    dest = tmp_path / "bview.gz"
    t0 = time.monotonic()
    with pytest.raises(DownloadError) as ei:
        fetch(archive + DUMP, dest, timeout=0.2, retries=2, backoff=0.01)
    msg = str(ei.value)
    assert time.monotonic() - t0 < 3 and archive.hits(DUMP) == 3
    assert "\n" not in msg and msg.startswith(archive + DUMP + ": timed out after 0.2 s") and msg.endswith("(3 attempts)")
    assert_nothing_left(dest)


def test_truncated_body_is_an_error_and_leaves_nothing(archive, tmp_path):
    archive.faults[DUMP] = "truncate"
    size = digest(ARCHIVE / DUMP[1:])[0]
    dest = tmp_path / "bview.gz"
    with pytest.raises(DownloadError, match=rf": connection dropped after {size // 2} of {size} bytes \(1 attempt\)$"):
        fetch(archive + DUMP, dest, retries=0, **FAST)
    assert_nothing_left(dest)
    with pytest.raises(DownloadError, match=rf"connection dropped after \d+ of {size} bytes \(3 attempts\)$"):
        fetch(archive + DUMP, dest, retries=2, **FAST)  # resumes each time, still never completes
    assert_nothing_left(dest)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_cut_off_real_bz2_is_rejected(tmp_path):
    with pytest.raises(DownloadError, match=r"truncated compressed stream$"):
        verify_compressed_stream(FAULTY / CUT)
    verify_compressed_stream(ARCHIVE / BVIEW[1:])  # (the complete RIB is verified by the download test)
    # served with a correct Content-Length, so only the stream check can catch it
    with serve(FAULTY) as base:
        dest = tmp_path / "rib.bz2"
        with pytest.raises(DownloadError, match=r"^http://\S+\.bz2: truncated compressed stream$"):
            fetch(f"{base}/{CUT}", dest, **FAST)
        assert base.hits(CUT) == 1  # a complete-but-broken file is not retried
        assert_nothing_left(dest)


def test_stream_check_multistream_padding_and_garbage(tmp_path):
    def write(name: str, data: bytes) -> Path:
        (p := tmp_path / name).write_bytes(data)
        return p

    a, b = bz2.compress(b"x" * 1000), bz2.compress(b"\0" * (20 << 20))  # b overflows the output cap
    verify_compressed_stream(write("multi.bz2", a + b + a))
    g = gzip.compress(b"\0" * (20 << 20))
    verify_compressed_stream(write("multi.gz", g + gzip.compress(b"y") + b"\0" * 512))
    verify_compressed_stream(write("notes.txt", b"anything"))  # no suffix -> not checked
    for name, data, why in [("junk.bz2", a + b"junk", "trailing garbage"),
                            ("junk.gz", g + b"\0\0garbage", "trailing garbage"),
                            ("cut.gz", g[:-4], "truncated"),
                            ("cut2.bz2", a + b[:-10], "truncated"),
                            ("empty.bz2", b"", "truncated"),
                            ("plain.gz", b"not gzip at all", "not a valid gz stream")]:
        with pytest.raises(DownloadError, match=why):
            verify_compressed_stream(write(name, data))


def test_local_sources_are_verified_in_place(tmp_path):
    src = ARCHIVE / BVIEW[1:]
    for url in (str(src), src, src.as_uri()):
        r = fetch(url, tmp_path / "unused.gz")
        assert r == FetchResult(src, *digest(src), resumed=False, attempts=0, cached=True)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(NotFound):
        fetch(str(tmp_path / "missing.gz"), tmp_path / "unused.gz")


def test_redirects_followed_and_loops_bounded(archive, tmp_path):
    archive.faults["/alias.gz"] = "redirect:" + DUMP
    r = fetch(archive + "/alias.gz", tmp_path / "bview.gz", **FAST)
    assert r.sha256 == digest(ARCHIVE / DUMP[1:])[1] and archive.hits(DUMP) == 1
    archive.faults["/loop.bz2"] = "redirect:/loop.bz2"
    with pytest.raises(DownloadError, match="HTTP 302"):
        fetch(archive + "/loop.bz2", tmp_path / "loop.bz2", **FAST)
    assert archive.hits("/loop.bz2") <= 6


def test_connection_refused_retries_then_fails(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DownloadError, match=r"ConnectionRefusedError.*\(2 attempts\)$"):
        fetch(f"http://127.0.0.1:{port}/x.bz2", tmp_path / "x.bz2", retries=1, **FAST)
    assert_nothing_left(tmp_path / "x.bz2")


def test_list_directory(archive):
    names = list_directory(archive + RIBS_DIR)
    assert "rib.20260730.1400.bz2" in names
    assert names == sorted(os.listdir(ARCHIVE / RIBS_DIR[1:]))  # no parent, sort or off-site links
    assert list_directory(archive + RIBS_DIR.rstrip("/")) == names
    assert list_directory(archive + "/route-views2/bgpdata/") == ["2008.05/", "2014.05/", "2026.02/", "2026.07/"]
    assert list_directory(ARCHIVE / RIBS_DIR[1:]) == names
    with pytest.raises(NotFound):
        list_directory(archive + "/route-views2/bgpdata/1999.01/")


def test_exists(archive, tmp_path):
    assert exists(archive + RIB) and exists(archive + RIBS_DIR)
    assert not exists(archive + RIBS_DIR + "rib.19990101.0000.bz2")
    assert exists(ARCHIVE / RIB[1:]) and not exists(str(tmp_path / "nope"))
    archive.faults[RIB] = "500"
    with pytest.raises(DownloadError, match="HTTP 500"):
        exists(archive + RIB)


def test_a_callers_check_replaces_the_stream_check_before_the_rename(archive, tmp_path):
    """Ingest passes its decode pass as `check`: it sees the complete .part before the final
    name exists, a cached file on later calls, and whatever it raises leaves nothing behind."""
    dest, seen = tmp_path / "cache" / "bview.gz", []

    def accept(p: Path) -> None:
        seen.append((p, p.is_file(), dest.exists(), digest(p) if p.is_file() else None))

    r = fetch(archive + DUMP, dest, check=accept, **FAST)
    assert seen == [(part_of(dest), True, False, digest(ARCHIVE / DUMP[1:]))]
    assert r == FetchResult(dest, digest(dest)[0], "", resumed=False, attempts=1, cached=False)
    seen.clear()
    assert fetch(archive + DUMP, dest, check=accept, **FAST).cached and seen == [(dest, True, True, digest(dest))]

    def refuse(p: Path) -> None:
        raise ValueError(f"{p.name}: refused")

    other = tmp_path / "cache" / "other.gz"
    with pytest.raises(ValueError, match=r"^\.other\.gz\.part: refused$"):
        fetch(archive + DUMP, other, check=refuse, **FAST)
    assert_nothing_left(other)
