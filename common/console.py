"""Terminal output shared by every command: progress and messages on stderr, data on stdout."""
from __future__ import annotations

import itertools
import sys
import threading
import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

#: No markup anywhere: messages carry paths and names as they are (a data dir named
#: `run [x]` is printed so; rich would read `[x]` as a style and drop it).
err = Console(stderr=True, highlight=False, markup=False)
#: Off a terminal (cron, Airflow, `2> log`) nothing wraps: a line is a line, whatever its length.
LINES = not err.is_terminal
if LINES:
    err = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)


def error(message: str) -> None:
    """One line, prefixed, on stderr: what a user or a log scraper needs to act on."""
    print(f"error: {message}", file=sys.stderr, flush=True)


def note(message: str) -> None:
    """One line on stderr about a choice made for the user (the work still succeeds)."""
    print(f"note: {message}", file=sys.stderr, flush=True)


def warning(message: str) -> None:
    """One line on stderr about something that looks wrong (the work still succeeds)."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


def progress(*, transfer: bool = False):
    """Bars on a terminal; off one, a log line per event (LineProgress)."""
    if LINES:
        return LineProgress()
    cols = [TextColumn("{task.description}", markup=False), BarColumn()]
    cols += [_Amount(), _Speed()] if transfer else [MofNCompleteColumn()]
    cols.append(TimeElapsedColumn())
    return Progress(*cols, console=err, transient=False)


class LineProgress:
    """rich.progress.Progress's calls as log lines, in the order things happen: a line when a
    task starts, when its description changes (the step it is on) and when it completes,
    each stamped with the UTC time. (rich off a terminal draws every bar once at the end,
    out of order with the messages between.)"""

    def __init__(self, out=None):
        self.out = out
        self.tasks: dict[int, dict] = {}
        self.ids = itertools.count()  # never reused: a removed task's id stays its own
        self.lock = threading.RLock()  # ingest's worker threads update their tasks at once

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def _say(self, text: str) -> None:
        stamp = time.strftime("%H:%M:%S", time.gmtime())
        print(f"{stamp} {text}", file=self.out or sys.stderr, flush=True)

    def add_task(self, description: str, total=None, completed=0, **_) -> int:
        with self.lock:
            tid = next(self.ids)
            self.tasks[tid] = {"name": description, "d": description, "total": total, "done": completed,
                               "t0": time.monotonic(), "ended": False}
            self._say(f"{description.strip()}: started")
        return tid

    def update(self, task: int, *, description: str | None = None, total=None, completed=None,
               advance=None, **_) -> None:
        with self.lock:
            t = self.tasks.get(task)
            if t is None:
                return
            if description is not None and description != t["d"]:
                t["d"] = description
                self._say(description.strip())
            if total is not None:
                t["total"] = total
            if completed is not None:
                t["done"] = completed
            if advance:
                t["done"] += advance
            self._end_if_done(t)

    def advance(self, task: int, advance: float = 1) -> None:
        self.update(task, advance=advance)

    def remove_task(self, task: int) -> None:
        with self.lock:
            self.tasks.pop(task, None)

    def _end_if_done(self, t: dict) -> None:
        total = t["total"]
        if not t["ended"] and not _is_transfer_total(total) and t["done"] >= total:
            t["ended"] = True
            name = t["name"].split(":")[0].strip()  # the task, not the step it was last on
            self._say(f"{name}: done ({t['done']:g}/{total:g}, {time.monotonic() - t['t0']:.1f} s)")


def _is_transfer_total(total) -> bool:
    """Bytes (an unknown or large total), not counted steps: no "done" line, bytes columns."""
    return total is None or total > 10_000


class _Amount(ProgressColumn):
    """Bytes for a download (an unknown or large total), "done/total" for counted steps."""

    def __init__(self):
        super().__init__()
        self.bytes, self.count = DownloadColumn(), MofNCompleteColumn()

    def render(self, task):
        return (self.bytes if _is_transfer(task) else self.count).render(task)


class _Speed(TransferSpeedColumn):
    def render(self, task):
        return super().render(task) if _is_transfer(task) else ""


def _is_transfer(task) -> bool:
    return _is_transfer_total(task.total)


def interrupted(exc: BaseException) -> bool:
    """Ctrl-C, however a library reports it: KeyboardInterrupt; DuckDB's Python client turns
    the signal arriving during a query into RuntimeError("Query interrupted"), and an
    interrupted connection into InterruptException."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    if type(exc) is RuntimeError and str(exc) == "Query interrupted":
        return True
    try:
        import duckdb
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, duckdb.InterruptException)


#: Set when Ctrl-C reached the main thread: worker threads (ingest's snapshots and
#: downloads) stop at their next batch or chunk, so the process ends promptly.
stopping = threading.Event()


def check_stop() -> None:
    """In a worker thread: end it (KeyboardInterrupt) once Ctrl-C was pressed."""
    if stopping.is_set():
        raise KeyboardInterrupt
