"""Months as the pipeline names them, 'YYYY-MM': parsing (with the flag's name in the error)
and calendar steps. One place, as ingest, the job, the runner and the reports all need them."""
from __future__ import annotations

import calendar
import re
from datetime import datetime, timezone

from bgp_congruency.common.errors import BadInput


def parse_month(text: str, flag: str = "--month") -> tuple[int, int]:
    m = re.fullmatch(r"(\d{4})-(\d{2})", text or "")
    if not m or not 1 <= int(m.group(2)) <= 12:
        raise BadInput(f"{flag}: expected YYYY-MM, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def parse_month_range(spec: str, flag: str = "--months") -> list[str]:
    """'2026-07' or '2026-01..2026-06' (inclusive) -> the months in order."""
    a, sep, b = (spec or "").strip().partition("..")
    try:
        ends = [parse_month(m) for m in ((a, b) if sep else (a,))]
    except ValueError:
        raise BadInput(f"{flag}: expected YYYY-MM{' or YYYY-MM..YYYY-MM' * (flag == '--months')}, "
                         f"got {spec!r}") from None
    (y, m), (y2, m2) = ends[0], ends[-1]
    if (y2, m2) < (y, m):
        raise BadInput(f"{flag}: {b} is before {a}")
    out = []
    while (y, m) <= (y2, m2):
        out.append(f"{y}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def previous_month(month: str) -> str:
    """The calendar month before 'YYYY-MM' (a valid month)."""
    y, m = parse_month(month)
    return f"{y - 1}-12" if m == 1 else f"{y}-{m - 1:02d}"


def check_not_future(months: list[str], flag: str = "--month", today=None) -> None:
    """ValueError for a month after the current (UTC) one: no archive has its RIBs yet."""
    now = today or datetime.now(timezone.utc)
    current = f"{now.year}-{now.month:02d}"
    late = [m for m in months if m > current]
    if late:
        raise BadInput(f"{flag}: {late[0]} is in the future (this is {current}); no archive has its RIBs yet")


def check_days(months: list[str], days, flag: str = "--days") -> None:
    """ValueError when a selected day is not in every month: `--days 31` is refused for a
    30-day month, in every command alike (choose days each month has, e.g. 1-28)."""
    for m in months:
        y, mo = parse_month(m)
        last = calendar.monthrange(y, mo)[1]
        bad = [d for d in days if d > last]
        if bad:
            raise BadInput(f"{flag}: {m} has {last} days, not {bad[0]} (choose days every month of "
                             f"the range has, e.g. 1-28)")


def listed(months: list[str]) -> str:
    """Months for a message: `none`, `2026-07`, `2026-01, 2026-03`, or a contiguous run as
    `2026-01..2026-06`; a long uneven list by its ends and count."""
    months = sorted(months)
    if not months:
        return "none"
    if len(months) == 1:
        return months[0]
    if months == parse_month_range(f"{months[0]}..{months[-1]}"):
        return f"{months[0]}..{months[-1]}"
    return ", ".join(months) if len(months) <= 4 else f"{len(months)} months from {months[0]} to {months[-1]}"
