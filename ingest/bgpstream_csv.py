"""A BGPStream `csvfile` listing as the source of a month's RIB dumps, instead of the archives.

A lab with its own mirror and BGPStream index feeds the project directly: each line of
libbgpstream's csvfile format is `path, project, type, collector, file time, time span,
time written` (its test/csv_test.csv). The `ribs` lines of the selected collectors in the
month stand for the slots the same way an archive listing does (the nearest dump within the
tolerance, ingest/discovery.py). Relative paths are relative to the listing's folder;
http(s) URLs are downloaded like archive files.
"""
from __future__ import annotations

import csv
from datetime import datetime, timezone
from pathlib import Path

from bgp_congruency.common.errors import BadInput

FIELDS = ("path", "project", "type", "collector", "file_time", "time_span", "written")


class ListingError(BadInput):
    """A listing that cannot be read; one line naming the file and the line."""


def read(listing: str | Path) -> list[dict]:
    """Every line of the listing as a dict of FIELDS (times as UTC datetimes)."""
    p = Path(listing)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ListingError(f"{p}: BGPStream csvfile listing not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ListingError(f"{p}: cannot read it ({exc})") from None
    out = []
    for n, row in enumerate(csv.reader(text.splitlines()), 1):
        if not row or row[0].startswith("#"):
            continue
        if len(row) != len(FIELDS):
            raise ListingError(f"{p}:{n}: expected {len(FIELDS)} fields ({', '.join(FIELDS)}), got {len(row)}")
        r = dict(zip(FIELDS, (x.strip() for x in row)))
        if r["type"] not in ("ribs", "updates"):
            raise ListingError(f"{p}:{n}: type must be ribs or updates, got {r['type']!r}")
        try:
            r["file_time"] = datetime.fromtimestamp(int(r["file_time"]), timezone.utc)
        except ValueError:
            raise ListingError(f"{p}:{n}: file time must be a Unix time, got {r['file_time']!r}") from None
        if "://" not in r["path"] and not Path(r["path"]).is_absolute():
            r["path"] = str((p.parent / r["path"]).resolve())
        out.append(r)
    return out


def dumps(rows: list[dict], collector: str, month: str) -> dict[datetime, str]:
    """time -> path of the collector's RIB dumps listed in the month."""
    return {r["file_time"]: r["path"] for r in rows
            if r["type"] == "ribs" and r["collector"] == collector and f"{r['file_time']:%Y-%m}" == month}
