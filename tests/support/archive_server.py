"""A local stand-in for the RouteViews / RIPE RIS HTTP archives, with fault injection.

Tests have no internet, and the real failure modes (dropped connections, 5xx bursts, stalls,
short bodies) are what the downloader exists for, so this server makes them reproducible.

``faults`` maps a URL path to a comma-separated list of specs; ``K`` (optional) limits a
fault to the first K requests for that path, otherwise it applies to every request:
    'truncate[:K]'   announce the full Content-Length, send half the body, close
    'drop:N[:K]'     announce the full length, send N body bytes, close
    '500[:K]'        answer 500 Internal Server Error
    'slow:S[:K]'     send headers, then sleep S seconds before the body (interrupted on exit)
    '404[:K]'        answer 404 even though the file exists
    'norange[:K]'    ignore Range headers (answer 200 with the whole file)
    'redirect:LOC'   answer 302 to LOC (a path or URL)
"""
from __future__ import annotations

import html
import threading
import urllib.parse
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator


class ArchiveURL(str):
    """The base URL (a plain str for building URLs) that also exposes what the server saw."""

    state: "_State"

    def hits(self, path: str) -> int:
        """Requests (any method) made for ``path``."""
        with self.state.lock:
            return self.state.hits[_norm(path)]

    def requests(self, path: str) -> list[tuple[str, dict]]:
        """(method, headers with lower-cased names) of each request for ``path``, in order."""
        with self.state.lock:
            return [(m, h) for m, p, h in self.state.log if p == _norm(path)]

    @property
    def total_hits(self) -> int:
        with self.state.lock:
            return len(self.state.log)

    @property
    def faults(self) -> dict[str, str]:
        """Live fault table; tests may change it between requests."""
        return self.state.faults


@dataclass
class _State:
    root: Path
    faults: dict[str, str]
    hits: Counter = field(default_factory=Counter)
    log: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)


def _norm(path: str) -> str:
    return "/" + urllib.parse.unquote(urllib.parse.urlsplit(path).path).lstrip("/")


def _active(spec: str | None, n: int) -> dict[str, str]:
    """Fault kinds (-> argument) that apply to the n-th request for a path."""
    out = {}
    for item in filter(None, (s.strip() for s in (spec or "").split(","))):
        kind, _, rest = item.partition(":")
        if kind == "redirect":
            out[kind] = rest
            continue
        args = rest.split(":") if rest else []
        arg = args.pop(0) if kind in ("drop", "slow") else ""
        if not args or n <= int(args[0]):
            out[kind] = arg
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: simple, and closes are real EOFs
    server_version = "ArchiveServer/1"
    timeout = 10  # per-socket-op bound on the server side too

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_HEAD(self):
        self._serve(head=True)

    def do_GET(self):
        self._serve(head=False)

    def _serve(self, head: bool) -> None:
        st: _State = self.server.state
        path = _norm(self.path)
        with st.lock:
            st.hits[path] += 1
            st.log.append((self.command, path, {k.lower(): v for k, v in self.headers.items()}))
            fault = _active(st.faults.get(path, st.faults.get(path.lstrip("/"))), st.hits[path])
        try:
            self._respond(st, path, fault, head)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True  # the client gave up (e.g. its timeout fired)

    def _respond(self, st: _State, path: str, fault: dict, head: bool) -> None:
        if "redirect" in fault:
            return self._plain(302, b"", Location=fault["redirect"])
        if "404" in fault:
            return self.send_error(404)
        if "500" in fault:
            return self.send_error(500)
        root = st.root.resolve()
        fs = (root / path.lstrip("/")).resolve()
        if fs != root and root not in fs.parents or not fs.exists():
            return self.send_error(404)
        if fs.is_dir():
            if not path.endswith("/"):
                return self._plain(301, b"", Location=urllib.parse.quote(path) + "/")
            return self._plain(200, _index(fs, path), **{"Content-Type": "text/html; charset=utf-8"},
                               head=head)
        size = fs.stat().st_size
        last_mod = formatdate(fs.stat().st_mtime, usegmt=True)
        start, end, code = 0, size - 1, 200
        rng = self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        if rng and "norange" not in fault and (not if_range or if_range == last_mod):
            parsed = _parse_range(rng, size)
            if parsed is None:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                return self.end_headers()
            if parsed != ():
                (start, end), code = parsed, 206
        length = max(0, end - start + 1)
        self.send_response(code)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(length))
        self.send_header("Last-Modified", last_mod)
        self.send_header("Accept-Ranges", "bytes")
        if code == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        if head:
            return
        if "slow" in fault and st.stop.wait(float(fault["slow"])):
            return
        send = length // 2 if "truncate" in fault else min(int(fault["drop"]), length) if "drop" in fault else length
        with open(fs, "rb") as f:
            f.seek(start)
            while send > 0 and (buf := f.read(min(send, 1 << 16))):
                self.wfile.write(buf)
                send -= len(buf)
        if "truncate" in fault or "drop" in fault:
            self.close_connection = True

    def _plain(self, code: int, body: bytes, head: bool = False, **headers: str) -> None:
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)


def _parse_range(value: str, size: int):
    """(start, end) for a single 'bytes=' range; () to ignore it; None if unsatisfiable."""
    unit, _, spec = value.partition("=")
    if unit.strip() != "bytes" or "," in spec:
        return ()
    a, _, b = spec.strip().partition("-")
    try:
        if not a:
            n = int(b)
            return (max(0, size - n), size - 1) if n > 0 and size else None
        start, end = int(a), (int(b) if b else size - 1)
    except ValueError:
        return ()
    return (start, min(end, size - 1)) if start < size and start <= end else None


def _index(d: Path, path: str) -> bytes:
    """Apache-style autoindex, including the sort/parent/off-site links a parser must skip."""
    parent = path.rstrip("/").rsplit("/", 1)[0] + "/"
    rows = [f'<tr><td><a href="{urllib.parse.quote(p.name)}{"/" if p.is_dir() else ""}">'
            f'{html.escape(p.name)}</a></td></tr>' for p in sorted(d.iterdir())]
    return (f'<!DOCTYPE HTML><html><head><title>Index of {html.escape(path)}</title></head><body>'
            f'<h1>Index of {html.escape(path)}</h1><table>'
            f'<tr><th><a href="?C=N;O=D">Name</a></th><th><a href="?C=M;O=A">Last modified</a></th></tr>'
            f'<tr><td><a href="{urllib.parse.quote(parent)}">Parent Directory</a></td></tr>'
            f'<tr><td><a href="../">..</a></td></tr>' + "".join(rows) +
            '</table><address><a href="http://www.routeviews.org/">RouteViews</a></address>'
            '</body></html>').encode()


@contextmanager
def serve(root: Path, faults: dict[str, str] | None = None) -> Iterator[ArchiveURL]:
    """Serve ``root`` on 127.0.0.1 (ephemeral port) for the duration of the block."""
    state = _State(Path(root), {_norm(k): v for k, v in (faults or {}).items()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.state = state
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="archive-server", daemon=True)
    thread.start()
    url = ArchiveURL(f"http://127.0.0.1:{server.server_address[1]}")
    url.state = state
    try:
        yield url
    finally:
        state.stop.set()  # wake any 'slow' sleepers
        server.shutdown()
        server.server_close()
        thread.join(5)
