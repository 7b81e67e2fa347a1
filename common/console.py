"""Terminal output shared by every command: progress and messages on stderr, data on stdout."""
from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

err = Console(stderr=True, highlight=False)


def error(message: str) -> None:
    """One line, prefixed, on stderr: what a user or a log scraper needs to act on."""
    print(f"error: {message}", file=sys.stderr, flush=True)


def progress(*, transfer: bool = False) -> Progress:
    cols = [TextColumn("{task.description}"), BarColumn()]
    cols += [DownloadColumn(), TransferSpeedColumn()] if transfer else [MofNCompleteColumn()]
    cols.append(TimeElapsedColumn())
    # Off a terminal (CI logs) rich draws the bars once, at the end: a compact record.
    return Progress(*cols, console=err, transient=False)
