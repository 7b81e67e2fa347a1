"""The collector catalogue (ingest/catalogue.toml): which collectors exist, when, and where
their RIBs live.

A backfill from 2009 must know which collectors were running in each month: a collector
that did not exist yet (or was retired) is `inactive`, not a failed download. Lifetimes
come from the projects' own metadata (RIPEstat rrc-info, the RouteViews collector API; see
ingest/catalogue_sources.py and `congruency catalogue refresh`), each with its source.
Dates are kept at the precision the source gives: `YYYY-MM` (RIPEstat) counts the whole
month as active; `YYYY-MM-DDTHH:MMZ` (RouteViews) is exact to the minute. A collector
whose start no source gives has `evidence_from`, the first month a source shows it
running: slots before it are probed (`unknown`: a missing month folder then means
`inactive`, a present one is ingested).
"""
from __future__ import annotations

import calendar
import re
import tomllib
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from bgp_congruency.common.errors import BadInput

CATALOGUE = Path(__file__).with_name("catalogue.toml")
#: Collector sets `--collectors` takes besides names.
SETS = ("all", "routeviews", "ris")
#: Bytes of a project's compressed RIB dump per entry in it, from the real samples in
#: ../shared/data (RouteViews: the route-views2 and route-views6 .bz2 RIBs of 2026-07-30 14:00;
#: RIS: rrc00 bview.20020722.2337.gz, TABLE_DUMP v1, the only RIS RIB there), their entries as
#: `bgpdump -m` counts them: `congruency plan` sizes downloads by it, ingest a dump's entries
#: before decoding it (ingest/routes.Feed).
MRT_BYTES_PER_ENTRY = {"routeviews": (2_054_819 + 1_018_645) / (679_347 + 164_279), "ris": 1_180_359 / 115_521}


class CatalogueError(BadInput):
    """A bad catalogue file or collector name; the message names the file or the name."""


@dataclass(frozen=True)
class Project:
    name: str
    root: str
    layout: str  # "routeviews" | "ris"
    rib_hours: tuple[int, ...]


@dataclass(frozen=True)
class Collector:
    name: str
    project: Project
    afis: tuple[int, ...]  # the families its RIBs carry; () = unknown (no source)
    path: str  # folder under the root
    legacy_paths: tuple[str, ...] = ()  # older folders tried when `path` has no month folder
    active_from: str | None = None  # YYYY-MM or YYYY-MM-DDTHH:MMZ; None = unknown
    active_until: str | None = None  # idem, last active moment; None = still active
    evidence_from: str | None = None  # YYYY-MM: first month a source shows it running
    multihop: bool | None = None
    source: str = ""
    afis_source: str = ""
    note: str = ""

    @property
    def legacy_path(self) -> str | None:
        """The first legacy folder (older callers); None when there is none."""
        return self.legacy_paths[0] if self.legacy_paths else None

    def state_at(self, t: datetime) -> str:
        """'active', 'inactive' or 'unknown' (no source says: probe the archive) at time t."""
        if self.active_until is not None and t > _end(self.active_until):
            return "inactive"
        if self.active_from is not None:
            return "active" if t >= _start(self.active_from) else "inactive"
        if self.evidence_from is not None and t >= _start(self.evidence_from):
            return "active"
        return "unknown"

    def month_state(self, month: str) -> str:
        """'active' (the whole month), 'partial' (it starts or ends inside the month),
        'inactive', or 'unknown'."""
        y, m = (int(x) for x in month.split("-"))
        first = datetime(y, m, 1, tzinfo=timezone.utc)
        last = datetime(y, m, calendar.monthrange(y, m)[1], 23, 59, tzinfo=timezone.utc)
        a, b = self.state_at(first), self.state_at(last)
        if a == b:
            return a
        if "active" in (a, b):
            return "partial"
        return "unknown"


#: The word for a collector in a month no source dates ('unknown' above): `catalogue list`
#: and `plan` both say it, and a run probes the archive for it.
PROBE = "probe"

_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
_EXACT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z$")


def _start(d: str) -> datetime:
    if _MONTH.match(d):
        return datetime.strptime(d, "%Y-%m").replace(tzinfo=timezone.utc)
    return datetime.strptime(d, "%Y-%m-%dT%H:%MZ").replace(tzinfo=timezone.utc)


def _end(d: str) -> datetime:
    """The last moment a date counts as active: a month's end, or the exact time."""
    if _MONTH.match(d):
        y, m = (int(x) for x in d.split("-"))
        return datetime(y, m, calendar.monthrange(y, m)[1], 23, 59, 59, tzinfo=timezone.utc)
    return _start(d)


def _date(path: Path, name: str, key: str, value) -> str | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str) or not (_MONTH.match(value) or _EXACT.match(value)):
        raise CatalogueError(f"{path}: collector {name!r}: {key} must be YYYY-MM or YYYY-MM-DDTHH:MMZ, got {value!r}")
    return value


@lru_cache(maxsize=8)
def _load(path: Path) -> tuple[dict[str, Project], dict[str, Collector]]:
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise CatalogueError(f"{path}: catalogue file not found") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CatalogueError(f"{path}: not valid TOML ({str(exc).splitlines()[0]})") from None
    try:
        projects = {
            name: Project(name, p["root"].rstrip("/"), p["layout"], tuple(p["rib_hours"]))
            for name, p in data["projects"].items()
        }
        out = {}
        for name, c in data["collectors"].items():
            if c["project"] not in projects:
                raise CatalogueError(f"{path}: collector {name!r}: unknown project {c['project']!r}")
            afis = tuple(c.get("afis", ()))
            if any(a not in (4, 6) for a in afis):
                raise CatalogueError(f"{path}: collector {name!r}: afis must list 4 and/or 6, got {list(afis)}")
            legacy = c.get("legacy_paths", ())
            out[name] = Collector(
                name=name, project=projects[c["project"]], afis=afis, path=c.get("path", name),
                legacy_paths=tuple(legacy),
                active_from=_date(path, name, "active_from", c.get("active_from")),
                active_until=_date(path, name, "active_until", c.get("active_until")),
                evidence_from=_date(path, name, "evidence_from", c.get("evidence_from")),
                multihop=c.get("multihop"), source=c.get("source", ""),
                afis_source=c.get("afis_source", ""), note=c.get("note", ""),
            )
        return projects, out
    except (KeyError, TypeError) as exc:
        raise CatalogueError(f"{path}: missing or bad field {exc}") from None


def load(path: str | Path | None = None) -> dict[str, Collector]:
    """The catalogue at `path` (a refreshed one), or the shipped one."""
    return _load(Path(path) if path else CATALOGUE)[1]


def projects(path: str | Path | None = None) -> dict[str, Project]:
    return _load(Path(path) if path else CATALOGUE)[0]


def get(name: str, path: str | Path | None = None) -> Collector:
    cat = load(path)
    if name not in cat:
        raise KeyError(f"unknown collector {name!r} (known: all, routeviews, ris, or one of "
                       f"{', '.join(sorted(cat))})")
    return cat[name]


def expand(spec: tuple[str, ...] | list[str], path: str | Path | None = None) -> list[str]:
    """Collector names of a selection: 'all', 'routeviews', 'ris' and names, in catalogue
    order, each once. KeyError naming the first unknown name."""
    cat = load(path)
    want: set[str] = set()
    for item in spec:
        if item == "all":
            want.update(cat)
        elif item in ("routeviews", "ris"):
            want.update(n for n, c in cat.items() if c.project.name == item)
        else:
            get(item, path)
            want.add(item)
    return [n for n in cat if n in want]


def parse_spec(text: str) -> tuple[str, ...]:
    """'all', 'ris,route-views2', ... -> the items (checked against the shipped names later)."""
    items = tuple(c.strip() for c in (text or "").split(",") if c.strip())
    if not items:
        raise BadInput("--collectors: expected 'all', 'routeviews', 'ris' or collector names, got nothing")
    return items


def active(spec, month: str, path: str | Path | None = None) -> dict[str, str]:
    """name -> month_state for the selection's collectors in `month`."""
    cat = load(path)
    return {n: cat[n].month_state(month) for n in expand(spec, path)}
