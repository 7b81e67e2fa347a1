"""Per-month locks, so two runs of one month never write it at once.

An advisory `flock` on DATA_DIR/_staging/M[.part].lock: the kernel drops it when the
holder dies (even by SIGKILL), so a killed run never leaves a stale lock behind. Locks
are re-entrant within a process (the monthly runner holds the month, and the compare job
it calls takes the same lock again). An exclusive holder removes the file when it is done. Data dirs given as URLs (hdfs://, s3a://) are not
locked here: there the scheduler (one Airflow run per month) is the guard.
"""
from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from bgp_congruency.common import layout, s3
from bgp_congruency.common.errors import CongruencyError


class LockBusy(CongruencyError, RuntimeError):
    """Another process holds the month; the message is one line naming it."""


_held: dict[str, list] = {}  # lock file -> [fd, depth, shared] of the locks this process holds
_guard = threading.Lock()
#: lock file -> the lock one thread of the process holds while it takes the file's flock: two
#: threads taking a month at once (ingest's merges, side by side) would each open the file and
#: the second's flock would fail against the first's, as if another process held it.
_taking: dict[str, threading.Lock] = {}


def lock_path(data_dir: Path, month: str, part: str | None = None) -> Path:
    """Beside the month's staging folders (DATA_DIR/_staging/<month>-<id>/) they guard."""
    return Path(layout.staging_dir(data_dir)) / f"{month}{'.' + part if part else ''}.lock"


@contextmanager
def month_lock(data_dir, month: str, *, part: str | None = None, shared: bool = False,
               wait_s: float = 0.0):
    """Hold the month (exclusively, or shared with other `shared` holders) for the block.

    Waits up to `wait_s` seconds for another holder, then raises LockBusy. An s3:// data
    dir's months are locked on this host (its local folder, common/s3.local_dir): S3 has
    no lock every host sees.
    """
    if s3.is_s3(data_dir):
        data_dir = s3.local_dir(data_dir)
    elif layout.is_cluster(data_dir):
        yield None
        return
    p = lock_path(data_dir, month, part)
    key = os.path.abspath(p)
    with _guard:
        taking = _taking.setdefault(key, threading.Lock())
    with taking:  # another thread of the process taking it meanwhile: this one re-enters
        with _guard:
            if key in _held:
                _held[key][1] += 1
                reentered = True
            else:
                reentered = False
        if not reentered:
            deadline = time.monotonic() + max(0.0, wait_s)
            fd = _acquire(p, shared)
            while fd is None:
                if time.monotonic() >= deadline:
                    raise LockBusy(f"month {month} is being run by another process{_holder(p)} "
                                   f"(lock {p}); wait for it to finish, or pass --wait")
                time.sleep(0.2)
                fd = _acquire(p, shared)
            with _guard:
                _held[key] = [fd, 1, shared]
    try:
        yield p
    finally:
        _release(key, p)


def _release(key: str, p: Path) -> None:
    """One holder of the process's lock done: the last one, whichever thread it is (ingest
    merges collectors side by side, each taking the month), lets the flock go, as it was
    taken (an exclusive one removes its file)."""
    with _guard:
        _held[key][1] -= 1
        if _held[key][1] > 0:
            return
        fd, _, shared = _held.pop(key)
        if not shared:  # gone with the run; a process waiting on it retries on a new file
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        os.close(fd)  # releases the flock


def wait_for(data_dir, month: str, wait_s: float) -> bool:
    """Wait until no process holds `month` (a run of it in flight ends); creates no file.
    True if one was waited for; LockBusy after `wait_s` seconds."""
    p = lock_path(data_dir, month)
    with _guard:
        if os.path.abspath(p) in _held:
            return False  # this process holds it: it is the run in flight
    waited = False
    deadline = time.monotonic() + max(0.0, wait_s)
    while True:
        try:
            fd = os.open(p, os.O_RDONLY)
        except FileNotFoundError:
            return waited  # nobody holds it: an exclusive holder removes the file when done
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return waited  # free (a file a shared holder left, or one just released)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
        finally:
            os.close(fd)
        if time.monotonic() >= deadline:
            raise LockBusy(f"month {month} is still being run by another process{_holder(p)} after "
                           f"{wait_s:g} s (lock {p})")
        waited = True
        time.sleep(0.5)


def _acquire(p: Path, shared: bool) -> int | None:
    """The locked descriptor of the lock file at p, or None if another process holds it."""
    while True:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return None
            raise
        try:
            same = os.stat(p).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            if not shared:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)  # locked a file its holder had just removed: take the new one


def _holder(p: Path) -> str:
    try:
        pid = p.read_text().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""
