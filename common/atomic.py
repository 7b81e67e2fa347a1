"""The one way to write a file: a dot-temp name beside it, then os.replace.

Readers see the old file or the whole new one, never a part: the temp name starts with a
dot (no reader's glob matches it) and carries the writer's pid, so what a killed writer
left can be told from what a live one is writing (`clean_stale`).
"""
from __future__ import annotations

import contextlib
import os
import re
import uuid
from pathlib import Path


def read_only(folder) -> bool:
    """Whether `folder` sits on a read-only mount (False when it is not there)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def require_writable(folder, command: str) -> None:
    """OSError EROFS (the command line's one line for a read-only file system) when `folder`
    sits on a read-only mount: before a command that writes there begins, so it says so and
    not what its first failed write would (a locked database, a moved catalog)."""
    if read_only(folder):
        import errno

        raise OSError(errno.EROFS, f"read-only file system: `congruency {command}` writes there", str(folder))


def temp_name(final: Path) -> Path:
    """`.NAME.PID.RAND.tmp` beside `final`."""
    return final.with_name(f".{final.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


class Pending:
    """A file written under its temp name beside `final`, for writers that keep it open
    across calls (Parquet and MRT writers); `replacing` is the same for one block of code."""

    def __init__(self, final: str | Path, mode: int | None = None):
        self.final, self.mode = Path(final), mode
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = temp_name(self.final)

    def commit(self) -> Path:
        """fsync the temp file and rename it over `final` (with permissions `mode` if given)."""
        with open(self.tmp, "rb") as fh:
            os.fsync(fh.fileno())
        if self.mode is not None:
            os.chmod(self.tmp, self.mode)
        os.replace(self.tmp, self.final)
        return self.final

    def discard(self) -> None:
        """Remove the temp file (if any); `final` untouched."""
        self.tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def replacing(final: str | Path, mode: int | None = None):
    """Yield a temp path beside `final`; on success fsync it and rename it over `final`
    (with permissions `mode` if given); on error remove it, `final` untouched."""
    pending = Pending(final, mode)
    try:
        yield pending.tmp
        pending.commit()
    finally:
        pending.discard()


def write_text(final: str | Path, text: str, mode: int | None = None) -> Path:
    with replacing(final, mode) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(final)


def alive(pid: int) -> bool:
    """Whether a process of this pid runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale(final: str | Path) -> list[Path]:
    """Temp files of `final` whose writer is gone (its pid is not a live process on this
    host), with a DuckDB temp's `.wal`; also older temp names that carry no pid."""
    final = Path(final)
    pat = re.compile(rf"\.{re.escape(final.name)}\.(\w+?)(?:\.[0-9a-f]{{8}})?\.tmp(?:\.wal)?")
    out = []
    for p in final.parent.glob(".*.tmp*") if final.parent.is_dir() else ():
        m = pat.fullmatch(p.name)
        if m and not (m.group(1).isdigit() and alive(int(m.group(1)))):
            out.append(p)
    return sorted(out)


_TEMP = re.compile(r"\..+\.(\d+)\.[0-9a-f]{8}\.tmp")


def clean_dead_under(folder: str | Path) -> list[Path]:
    """Remove the temp files (temp_name's form) of writers that are gone, anywhere under
    `folder`: what a killed command left, never what a live one is writing."""
    gone = []
    for dp, _, names in os.walk(folder):
        for n in names:
            m = _TEMP.fullmatch(n)
            if m and not alive(int(m.group(1))):
                p = Path(dp) / n
                p.unlink(missing_ok=True)
                gone.append(p)
    return sorted(gone)


def clean_stale(*finals: str | Path) -> list[Path]:
    """Remove what killed writers of these files left; returns what was removed."""
    gone = [p for f in finals for p in stale(f)]
    for p in gone:
        p.unlink(missing_ok=True)
    return gone
