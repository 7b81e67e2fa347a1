"""Per-month locks, so two runs of one month never write it at once.

An advisory `flock` on DATA_DIR/_locks/month=M[.suffix].lock: the kernel drops it when the
holder dies (even by SIGKILL), so a killed run never leaves a stale lock behind. Locks
are re-entrant within a process (the monthly runner holds the month, and the compare job
it calls takes the same lock again). Data dirs given as URLs (hdfs://, s3a://) are not
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


class LockBusy(RuntimeError):
    """Another process holds the month; the message is one line naming it."""


_held: dict[str, list] = {}  # lock file -> [fd, depth] of the locks this process holds
_guard = threading.Lock()


def lock_path(data_dir: Path, month: str, part: str | None = None) -> Path:
    return Path(data_dir) / "_locks" / f"month={month}{'.' + part if part else ''}.lock"


@contextmanager
def month_lock(data_dir, month: str, *, part: str | None = None, shared: bool = False,
               wait_s: float = 0.0):
    """Hold the month (exclusively, or shared with other `shared` holders) for the block.

    Waits up to `wait_s` seconds for another holder, then raises LockBusy.
    """
    if isinstance(data_dir, str) and "://" in data_dir:
        yield None
        return
    p = lock_path(data_dir, month, part)
    key = os.path.abspath(p)
    with _guard:
        if key in _held:
            _held[key][1] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield p
        finally:
            with _guard:
                _held[key][1] -= 1
        return
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + max(0.0, wait_s)
    try:
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                if time.monotonic() >= deadline:
                    holder = _holder(p)
                    raise LockBusy(
                        f"month {month} is being run by another process{holder} "
                        f"(lock {p}); wait for it to finish, or pass --wait") from None
                time.sleep(0.2)
        if not shared:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        with _guard:
            _held[key] = [fd, 1]
        try:
            yield p
        finally:
            with _guard:
                _held.pop(key, None)
    finally:
        os.close(fd)  # releases the flock


def _holder(p: Path) -> str:
    try:
        pid = p.read_text().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""
