"""Terminal output shared by every command: progress and messages on stderr, data on stdout."""
from __future__ import annotations

import sys
import threading

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

err = Console(stderr=True, highlight=False)


def error(message: str) -> None:
    """One line, prefixed, on stderr: what a user or a log scraper needs to act on."""
    print(f"error: {message}", file=sys.stderr, flush=True)


def note(message: str) -> None:
    """One line on stderr about a choice made for the user (the work still succeeds)."""
    print(f"note: {message}", file=sys.stderr, flush=True)


def warning(message: str) -> None:
    """One line on stderr about something that looks wrong (the work still succeeds)."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


def progress(*, transfer: bool = False) -> Progress:
    cols = [TextColumn("{task.description}"), BarColumn()]
    cols += [_Amount(), _Speed()] if transfer else [MofNCompleteColumn()]
    cols.append(TimeElapsedColumn())
    # Off a terminal (CI logs) rich draws the bars once, at the end: a compact record.
    return Progress(*cols, console=err, transient=False)


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
    return task.total is None or task.total > 10_000


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
