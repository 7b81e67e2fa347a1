"""Fetch RouteViews / RIPE RIS MRT dumps into the local cache, resumably and verifiably.

Stdlib only (urllib/http.client) so ingest runs on bare workers. The invariants that matter:
a file is under its final name only once it is complete (streamed to a hidden ``.part``,
checked, fsynced, then ``os.replace``d), and a short body is never mistaken for success --
neither by byte count (Content-Length / Content-Range) nor by content: a cut-off ``.bz2``
still decodes "fine" up to the cut in streaming readers, so we require the end-of-stream marker.
"""
from __future__ import annotations

import bz2
import fcntl
import hashlib
import html.parser
import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bgp_congruency.common import console
from bgp_congruency.common.errors import CongruencyError

__all__ = ["DownloadError", "NotFound", "FetchResult", "fetch", "is_remote",
           "verify_compressed_stream", "list_directory", "exists"]

CHUNK = 1 << 20
MAX_REDIRECTS = 5
MAX_BACKOFF = 30.0
_OUT_LIMIT = 16 << 20  # decompressed bytes held at once while verifying (memory bound)
_USER_AGENT = "bgp-congruency-ingest/0.1 (python-urllib)"
_NET_ERRORS = (OSError, http.client.HTTPException)  # URLError, timeouts, resets, IncompleteRead...


class DownloadError(CongruencyError):
    """A fetch/list/verify failure; the message is one line naming the URL (or path) and the cause."""


class NotFound(DownloadError):
    """404/410 or a missing local file: definitive, so never retried."""


@dataclass(frozen=True)
class FetchResult:
    path: Path
    bytes: int
    sha256: str
    resumed: bool   # final file was assembled with a Range continuation
    attempts: int   # HTTP GETs made (0 when served from cache / local source)
    cached: bool    # no download happened


class _Retry(Exception):
    """Transient failure of one attempt (drop, timeout, 5xx); the message is the cause."""


class _BadStream(Exception):
    """A .bz2/.gz that does not end cleanly; final (re-downloading the same bytes won't help)."""


class _Redirects(urllib.request.HTTPRedirectHandler):
    max_redirections = MAX_REDIRECTS


# No HTTPErrorProcessor quirks needed: non-2xx raise HTTPError, which we classify ourselves.
_OPENER = urllib.request.build_opener(_Redirects)


def _one_line(s: object) -> str:
    return " ".join(str(s).split())


def _request(url: str, timeout: float, method: str = "GET", headers: dict | None = None):
    # identity: archives serve .gz as-is; we must store the exact bytes, never a transfer-decoded body
    hdrs = {"User-Agent": _USER_AGENT, "Accept-Encoding": "identity", **(headers or {})}
    return _OPENER.open(urllib.request.Request(url, method=method, headers=hdrs), timeout=timeout)


def _describe(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, BaseException):
        exc = exc.reason
    if isinstance(exc, TimeoutError):
        return f"timed out after {timeout:g} s"
    return _one_line(f"{type(exc).__name__}: {exc}")


def _http_error(url: str, e: urllib.error.HTTPError) -> DownloadError:
    e.close()
    msg = f"{url}: HTTP {e.code} {_one_line(e.reason)}"
    if 300 <= e.code < 400:
        msg += f" (more than {MAX_REDIRECTS} redirects or a redirect loop)"
    return (NotFound if e.code in (404, 410) else DownloadError)(msg)


def is_remote(url: str | os.PathLike) -> bool:
    """True for http(s) URLs; ``file://`` URLs and plain paths are used in place, never copied."""
    return isinstance(url, str) and urllib.parse.urlsplit(url).scheme.lower() in ("http", "https")


def _local(url: str | os.PathLike) -> Path:
    if not isinstance(url, str):
        return Path(url)
    u = urllib.parse.urlsplit(url)
    if u.scheme.lower() == "file":
        if u.netloc not in ("", "localhost"):
            raise DownloadError(f"{url}: remote file:// hosts are not supported")
        return Path(urllib.request.url2pathname(u.path))
    if u.scheme and not Path(url).exists():  # "x:y" could still be a relative path
        raise DownloadError(f"{url}: unsupported URL scheme {u.scheme!r}")
    return Path(url)


# ---------------------------------------------------------------- stream verification

class _StreamCheck:
    """Decompress-and-discard a .bz2/.gz to prove every stream reaches its end marker.

    Concatenated streams are legal (pbzip2, multi-member gzip); anything else after the last
    complete stream is garbage, except NUL padding after gzip, which gzip(1) also tolerates.
    """

    def __init__(self, kind: str):
        self.kind, self.d, self.done, self.padding = kind, None, 0, False

    def feed(self, data: bytes) -> None:
        while data:
            if self.d is None:
                if self.padding or (self.done and self.kind == "gz" and not data.strip(b"\0")):
                    if data.strip(b"\0"):
                        raise _BadStream("trailing garbage after compressed stream")
                    self.padding = True
                    return
                self.d = bz2.BZ2Decompressor() if self.kind == "bz2" else zlib.decompressobj(31)
            try:
                self._run(data)
            except (OSError, EOFError, zlib.error) as e:
                raise _BadStream("trailing garbage after compressed stream" if self.done
                             else _one_line(f"not a valid {self.kind} stream ({e})")) from None
            if not self.d.eof:
                return
            data, self.d, self.done = self.d.unused_data, None, self.done + 1

    def _run(self, data: bytes) -> None:
        d = self.d  # bounded output per call so a 5 GB RIB never sits in memory
        if self.kind == "bz2":
            d.decompress(data, _OUT_LIMIT)
            while not d.eof and not d.needs_input:
                d.decompress(b"", _OUT_LIMIT)
        else:
            out = d.decompress(data, _OUT_LIMIT)
            while not d.eof and (d.unconsumed_tail or len(out) == _OUT_LIMIT):
                out = d.decompress(d.unconsumed_tail, _OUT_LIMIT)

    def finish(self) -> None:
        if self.d is not None or not self.done:
            raise _BadStream("truncated compressed stream")


def _kind(name: str) -> str | None:
    name = name.lower()
    return "bz2" if name.endswith(".bz2") else "gz" if name.endswith(".gz") else None


def _scan(path: Path, label: str, kind: str | None) -> tuple[int, str]:
    """(size, sha256) in one pass, verifying the compressed stream of ``kind`` on the way."""
    h, n = hashlib.sha256(), 0
    check = _StreamCheck(kind) if kind else None
    try:
        with open(path, "rb") as f:
            while buf := f.read(CHUNK):
                h.update(buf)
                n += len(buf)
                if check:
                    check.feed(buf)
        if check:
            check.finish()
    except _BadStream as e:
        raise DownloadError(f"{label}: {e}") from None
    except OSError as e:
        raise DownloadError(f"{label}: {_describe(e, 0)}") from None
    return n, h.hexdigest()


def verify_compressed_stream(path: str | os.PathLike) -> None:
    """Raise DownloadError unless a .bz2/.gz file is complete (other suffixes pass unchecked)."""
    p = Path(path)
    _scan(p, str(p), _kind(p.name))


# ---------------------------------------------------------------- fetch

def _content_range(value: str | None) -> tuple[int | None, int | None]:
    """(start, total) from 'bytes a-b/N' or 'bytes */N'; None where absent or '*'."""
    try:
        unit, spec = (value or "").split(None, 1)
        rng, total = spec.split("/")
        start = None if rng.strip() == "*" else int(rng.split("-")[0])
        return start, (None if total.strip() == "*" else int(total))
    except ValueError:
        return None, None


def _attempt(url, f, ctx, timeout, on_bytes, on_total) -> bool:
    """One GET into the open .part, appending to what it holds when the server allows.

    Returns whether a Range continuation was used; raises _Retry for transient failures.
    ``ctx["validator"]`` (ETag/Last-Modified) survives failed attempts so resumes send If-Range.
    """
    hdrs, have = {}, f.seek(0, os.SEEK_END)
    if have:
        hdrs["Range"] = f"bytes={have}-"
        if ctx.get("validator"):  # file changed upstream -> server sends 200, we restart cleanly
            hdrs["If-Range"] = ctx["validator"]
    try:
        resp = _request(url, timeout, headers=hdrs)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # .part already complete (crash before rename) or bogus
            _, total = _content_range(e.headers.get("Content-Range"))
            e.close()
            if total == have:
                return True
            f.seek(0), f.truncate()
            raise _Retry(f"HTTP 416 for a {have}-byte resume; restarting") from None
        if e.code >= 500 or e.code in (408, 429):
            e.close()
            raise _Retry(f"HTTP {e.code} {_one_line(e.reason)}") from None
        raise _http_error(url, e) from None
    except _NET_ERRORS as e:
        raise _Retry(_describe(e, timeout)) from None
    with resp:
        resumed = False
        if resp.status == 206:
            start, total = _content_range(resp.headers.get("Content-Range"))
            if start != have:  # never splice mismatched bytes; start over next attempt
                f.seek(0), f.truncate()
                raise _Retry(f"bad Content-Range {resp.headers.get('Content-Range')!r} for offset {have}")
            resumed = have > 0
        else:  # 200: server ignored Range (or If-Range failed): full restart
            f.seek(0), f.truncate()
            have = 0
            cl = resp.headers.get("Content-Length")
            total = int(cl) if cl and cl.isdigit() else None
        etag, lm = resp.headers.get("ETag"), resp.headers.get("Last-Modified")
        ctx["validator"] = etag if etag and not etag.startswith("W/") else lm
        if on_total:
            on_total(total)
        if on_bytes and have:
            on_bytes(have)
        try:
            while buf := resp.read(CHUNK):
                console.check_stop()
                f.write(buf)
                have += len(buf)
                if on_bytes:
                    on_bytes(have)
        except _NET_ERRORS as e:
            f.flush()
            what = _describe(e, timeout)
            if not what.startswith("timed out"):
                what = "connection dropped"
            raise _Retry(f"{what} after {have} of {total if total is not None else '?'} bytes") from None
        f.flush()
        if total is not None and have != total:  # http.client returns b"" on early EOF, no error
            raise _Retry(f"connection dropped after {have} of {total} bytes")
        return resumed


def fetch(url: str | os.PathLike, dest: Path, *, timeout: float = 60.0, retries: int = 4,
          backoff: float = 1.0, on_bytes: Callable[[int], None] | None = None,
          on_total: Callable[[int | None], None] | None = None,
          check: Callable[[Path], None] | None = None,
          keep: Callable[[BaseException], bool] | None = None) -> FetchResult:
    """Download ``url`` to ``dest`` (or verify a local source in place).

    ``check(path)``, when given, replaces our compressed-stream check: the caller's own single
    pass over the file (ingest's decode, which proves every stream ends and hashes the bytes)
    runs on the complete ``.part`` before it gets the final name, so no byte is decompressed
    twice. Whatever it raises removes the ``.part`` and propagates, but for an error of
    ``check`` that ``keep(exc)`` calls the caller's own and not the file's: the ``.part``, whole
    (check runs only on a complete download), is then kept for the caller's next fetch, which
    costs one ranged request (answered 416, nothing sent) instead of the whole file again.
    ``sha256`` is "" with ``check``.

    ``on_total(n|None)`` is called per response with the full size; ``on_bytes(n)`` with the
    cumulative bytes held so far (so it can drop back to 0 when a server forces a restart).
    A ``.part`` left by a killed process is resumed; after a final failure it is removed (but
    for ``keep``'s).
    """
    dest = Path(dest)
    if not is_remote(url):
        src = _local(url)
        if not src.is_file():
            raise NotFound(f"{url}: no such file")
        if check:
            check(src)
            return FetchResult(src, src.stat().st_size, "", False, 0, True)
        n, sha = _scan(src, str(url), _kind(src.name))
        return FetchResult(src, n, sha, False, 0, True)
    if dest.is_file():  # only complete files ever get this name
        if check:
            check(dest)
            return FetchResult(dest, dest.stat().st_size, "", False, 0, True)
        n, sha = _scan(dest, str(dest), None)
        return FetchResult(dest, n, sha, False, 0, True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.parent / f".{dest.name}.part"
    with open(os.open(part, os.O_RDWR | os.O_CREAT, 0o644), "r+b") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DownloadError(f"{url}: {part} is being downloaded by another process") from None
        whole = False  # a complete download whose check failed on the caller's own error: kept
        try:
            ctx, attempts = {}, 0
            while True:
                attempts += 1
                try:
                    resumed = _attempt(url, f, ctx, timeout, on_bytes, on_total)
                    break
                except _Retry as e:
                    if attempts > retries:
                        raise DownloadError(f"{url}: {e} ({attempts} attempt{'s' * (attempts != 1)})") from None
                    time.sleep(min(backoff * 2 ** (attempts - 1), MAX_BACKOFF))
            os.fsync(f.fileno())
            if check:
                try:
                    check(part)
                except Exception as exc:
                    whole = bool(keep and keep(exc))
                    raise
                n, sha = part.stat().st_size, ""
            else:
                n, sha = _scan(part, str(url), _kind(dest.name))
            os.replace(part, dest)
        except Exception:
            if not whole:
                part.unlink(missing_ok=True)  # KeyboardInterrupt etc. keep it for a later resume
            raise
    _fsync_dir(dest.parent)
    return FetchResult(dest, n, sha, resumed, attempts, False)


def _fsync_dir(d: Path) -> None:
    """Make the rename durable; some filesystems refuse directory fsync, which is harmless."""
    try:
        fd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


# ---------------------------------------------------------------- listing / existence

class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]


def list_directory(url: str | os.PathLike, *, timeout: float = 30.0) -> list[str]:
    """Sorted names linked from an autoindex page (subdirectories keep their trailing '/').

    Only direct children of the listed directory count, which drops parent links, Apache's
    ``?C=N;O=D`` sort links and off-site links whatever their href style (relative or absolute).
    A local directory lists its entries the same way (dotfiles such as .part skipped).
    """
    if not is_remote(url):
        p = _local(url)
        if not p.exists():
            raise NotFound(f"{url}: no such directory")
        if not p.is_dir():
            raise DownloadError(f"{url}: not a directory")
        return sorted(e.name + ("/" if e.is_dir() else "") for e in os.scandir(p)
                      if not e.name.startswith("."))
    base = url if url.endswith("/") else url + "/"
    try:
        with _request(base, timeout) as resp:
            final, body = resp.geturl(), resp.read()
            charset = resp.headers.get_content_charset() or "utf-8"
    except urllib.error.HTTPError as e:
        raise _http_error(base, e) from None
    except _NET_ERRORS as e:
        raise DownloadError(f"{base}: {_describe(e, timeout)}") from None
    parser = _Links()
    parser.feed(body.decode(charset, "replace"))
    fin = urllib.parse.urlsplit(final)
    dpath = fin.path if fin.path.endswith("/") else fin.path + "/"
    names = set()
    for href in parser.hrefs:
        u = urllib.parse.urlsplit(urllib.parse.urljoin(final, href))
        if u.query or (u.scheme, u.netloc) != (fin.scheme, fin.netloc) or not u.path.startswith(dpath):
            continue
        rest = u.path[len(dpath):]
        if rest and "/" not in rest.rstrip("/"):
            names.add(urllib.parse.unquote(rest))
    return sorted(names)


def exists(url: str | os.PathLike, *, timeout: float = 30.0) -> bool:
    """HEAD (or a 1-byte ranged GET where HEAD is refused); 404/410 -> False, other errors raise."""
    if not is_remote(url):
        return _local(url).exists()
    for method, hdrs in (("HEAD", None), ("GET", {"Range": "bytes=0-0"})):
        try:
            with _request(url, timeout, method, hdrs):
                return True
        except urllib.error.HTTPError as e:
            if e.code in (404, 410):
                e.close()
                return False
            if method == "HEAD" and e.code in (400, 403, 405, 501):
                e.close()
                continue
            if e.code == 416:  # ranged GET of an empty file: it exists
                e.close()
                return True
            raise _http_error(url, e) from None
        except _NET_ERRORS as e:
            raise DownloadError(f"{url}: {_describe(e, timeout)}") from None
    raise AssertionError("unreachable")


def get_json(url: str | os.PathLike, *, timeout: float = 30.0):
    """A JSON document from an http(s) URL or a local file; DownloadError naming the URL."""
    try:
        if is_remote(url):
            try:
                with _request(str(url), timeout, headers={"Accept": "application/json"}) as resp:
                    body = resp.read()
            except urllib.error.HTTPError as e:
                raise _http_error(str(url), e) from None
            except _NET_ERRORS as e:
                raise DownloadError(f"{url}: {_describe(e, timeout)}") from None
        else:
            p = _local(url)
            if not p.is_file():
                raise NotFound(f"{url}: no such file")
            body = p.read_bytes()
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DownloadError(f"{url}: not JSON ({_one_line(exc)})") from None
