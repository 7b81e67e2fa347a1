"""Which RIB dump stands for each (collector, day, time) slot of a month window.

Reads the archive's month folders (HTML index over HTTP, or a local folder) once per
collector and month, so a missing file costs no request of its own and the nearest dump
within the tolerance can stand in, recorded as a substitution.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from bgp_congruency.common.errors import BadInput
from bgp_congruency.common.months import check_days, parse_month
from bgp_congruency.ingest import download
from bgp_congruency.ingest.catalogue import Collector

_NAME = re.compile(r"^(rib|bview)\.(\d{8})\.(\d{4})\.(bz2|gz)$")


@dataclass(frozen=True)
class Slot:
    """One snapshot the window asks for, and what the archive has for it."""

    collector: str
    project: str
    month: str  # YYYY-MM
    target: datetime
    url: str | None = None
    dump_time: datetime | None = None
    substituted: bool = False
    error: str | None = None
    #: With an error: 'missing' (the archive has no such dump or folder) or 'failed' (the
    #: archive could not be listed: DNS, connection, HTTP 5xx: it may well have the dump).
    status: str = "missing"

    @property
    def key(self) -> str:
        return f"{self.collector}@{self.target:%Y%m%dT%H%M}"

    @property
    def file_name(self) -> str | None:
        return self.url.rstrip("/").rsplit("/", 1)[-1] if self.url else None


def parse_days(text: str) -> tuple[int, ...]:
    """'30', '1-5', '1,15', '1-3,10' -> sorted distinct days."""
    days: set[int] = set()
    for part in (text or "").split(","):
        m = re.fullmatch(r"\s*(\d{1,2})\s*(?:-\s*(\d{1,2})\s*)?", part)
        if not m:
            raise BadInput(f"--days: expected a list or range of days like 1-5 or 1,15, got {text!r}")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if not 1 <= lo <= hi <= 31:
            raise BadInput(f"--days: {part.strip()!r} is not a range of days 1-31")
        days.update(range(lo, hi + 1))
    return tuple(sorted(days))


def parse_times(text: str) -> tuple[str, ...]:
    out = []
    for part in (text or "").split(","):
        m = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*", part)
        if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
            raise BadInput(f"--times: expected HH:MM[,HH:MM...], got {text!r}")
        out.append(f"{int(m.group(1)):02d}:{m.group(2)}")
    return tuple(sorted(set(out)))


def window(month: str, days: tuple[int, ...], times: tuple[str, ...]) -> list[datetime]:
    check_days([month], days)
    y, m = parse_month(month)
    out = []
    for d in days:
        for t in times:
            hh, mm = map(int, t.split(":"))
            out.append(datetime(y, m, d, hh, mm, tzinfo=timezone.utc))
    return out


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") if i else p.rstrip("/") for i, p in enumerate(parts) if p != "")


def month_dirs(col: Collector, root: str, y: int, m: int) -> list[str]:
    """The folders where the collector's RIBs of that month may be, in preference order."""
    if col.project.layout == "routeviews":
        dirs = [_join(root, col.path, "bgpdata", f"{y:04d}.{m:02d}", "RIBS")]
        if col.legacy_path is not None:
            dirs.append(_join(root, col.legacy_path, "bgpdata", f"{y:04d}.{m:02d}", "RIBS"))
        return dirs
    return [_join(root, col.path, f"{y:04d}.{m:02d}")]


def _dumps(names: list[str], layout: str) -> dict[datetime, str]:
    prefix = "rib" if layout == "routeviews" else "bview"
    out = {}
    for n in names:
        mt = _NAME.match(n)
        if mt and mt.group(1) == prefix:
            out[datetime.strptime(mt.group(2) + mt.group(3), "%Y%m%d%H%M").replace(tzinfo=timezone.utc)] = n
    return out


def discover(
    col: Collector,
    month: str,
    targets: list[datetime],
    *,
    root: str | None = None,
    tolerance: timedelta = timedelta(hours=2),
    timeout: float = 30.0,
) -> list[Slot]:
    """One Slot per target: the exact dump, the nearest within `tolerance`, or an error."""
    y, m = parse_month(month)
    root = root or col.project.root
    base = dict(collector=col.name, project=col.project.name, month=month)
    folder, dumps, errors, unlisted = None, {}, [], False
    for d in month_dirs(col, root, y, m):
        try:
            dumps = _dumps(download.list_directory(d, timeout=timeout), col.project.layout)
        except download.NotFound:
            errors.append(f"{d}: no such folder")
            continue
        except download.DownloadError as exc:
            errors.append(str(exc))
            unlisted = True
            continue
        if dumps:
            folder = d
            break
        errors.append(f"{d}: no RIB dumps listed")
    if folder is None:
        return [Slot(target=t, error="; ".join(errors), status="failed" if unlisted else "missing", **base)
                for t in targets]
    kind = "rib" if col.project.layout == "routeviews" else "bview"
    return match(targets, {dt: f"{folder}/{n}" for dt, n in dumps.items()}, tolerance, base,
                 lambda t: f"{folder}/{kind}.{t:%Y%m%d.%H%M}: not in the archive")


def match(targets: list[datetime], dumps: dict[datetime, str], tolerance: timedelta, base: dict,
          absent) -> list[Slot]:
    """One Slot per target from the dumps at hand (time -> URL): the exact one, else the
    nearest within `tolerance`, each dump standing for one target at most. `absent(t)`:
    how to say that no dump is near t."""
    slots, used = [], {}
    for t in targets:
        best = min(dumps, key=lambda dt: (abs(dt - t), dt)) if dumps else None
        if best is None or abs(best - t) > tolerance:
            near = f" (nearest dump {dumps[best].rsplit('/', 1)[-1]} is more than {tolerance} away)" if best else ""
            slots.append(Slot(target=t, error=absent(t) + near, **base))
            continue
        if best in used:
            slots.append(
                Slot(target=t, error=f"{dumps[best]} already stands for "
                     f"{used[best]:%Y-%m-%d %H:%M}; no other dump within {tolerance}", **base)
            )
            continue
        used[best] = t
        slots.append(Slot(target=t, url=dumps[best], dump_time=best, substituted=best != t, **base))
    return slots
