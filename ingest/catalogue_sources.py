"""`congruency catalogue refresh`: rebuild the collector catalogue from the projects' own metadata.

Two sources, one module each in spirit, one entry shape (`Entry`):
- RIPEstat `rrc-info` (https://stat.ripe.net/data/rrc-info/data.json): `rrcs[].name`,
  `activated_on` / `deactivated_on` as YYYY-MM, `multihop`, and per peer
  `v4_prefix_count` / `v6_prefix_count` (the families a collector's RIBs carry; historic
  RRCs list no peers, so theirs stay unknown);
- the RouteViews API collector list (https://api.routeviews.org/collector/?format=json,
  paginated through `next`): `name`, `installed`, `removed` (RFC 3339), `multihop`, `type`.
  Its `ipv4`/`ipv6` fields are the collector's own peering addresses, not the families its
  RIBs carry, so they are not read. The Cisco `route-views` has no MRT archive (text dumps
  under oix-route-views/) and is left out.

A refresh updates what the sources say (lifetimes, multihop, families seen in RIS peer
tables) and keeps what they don't (archive paths and legacy paths, families from other
sources, notes, collectors the APIs don't list yet). Families observed in RIBs this
project ingested (the manifests of a data dir) fill in where no source gives them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

from bgp_congruency.common import layout
from bgp_congruency.common.errors import CongruencyError
from bgp_congruency.common.months import listed
from bgp_congruency.ingest import catalogue, download, manifest
from bgp_congruency.ingest.catalogue import Collector

RIPESTAT_URL = "https://stat.ripe.net/data/rrc-info/data.json"
ROUTEVIEWS_URL = "https://api.routeviews.org/collector/?format=json"
#: Pages of the RouteViews list followed at most (50 collectors fit on one today).
MAX_PAGES = 50


class SourceError(CongruencyError, ValueError):
    """A source's document does not have the expected shape; the message names the URL."""


@dataclass
class Entry:
    """What one source says of one collector."""

    name: str
    project: str
    active_from: str | None
    active_until: str | None
    multihop: bool | None
    afis: tuple[int, ...] = ()
    source: str = ""


def _month(value, url: str, what: str) -> str | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str) or not catalogue._MONTH.match(value):
        raise SourceError(f"{url}: {what}: expected YYYY-MM, got {value!r}")
    return value


def _exact(value, url: str, what: str, *, up: bool) -> str | None:
    """RFC 3339 -> YYYY-MM-DDTHH:MMZ; seconds round up for a start (never before it began)
    and down for an end (never after it stopped)."""
    if value in (None, ""):
        return None
    try:
        t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise SourceError(f"{url}: {what}: expected an RFC 3339 time, got {value!r}") from None
    if up and (t.second or t.microsecond):
        t = t.replace(second=0, microsecond=0) + timedelta(minutes=1)
    return t.strftime("%Y-%m-%dT%H:%MZ")


def parse_ripestat(doc: dict, url: str = RIPESTAT_URL) -> list[Entry]:
    try:
        rrcs = doc["data"]["rrcs"]
        when = str(doc.get("time", ""))[:10]
        out = []
        for r in rrcs:
            name = str(r["name"]).lower()
            peers = r.get("peers") or []
            afis = tuple(a for a, key in ((4, "v4_prefix_count"), (6, "v6_prefix_count"))
                         if any((p.get(key) or 0) > 0 for p in peers))
            out.append(Entry(name, "ris", _month(r["activated_on"], url, f"{name}.activated_on"),
                             _month(r.get("deactivated_on"), url, f"{name}.deactivated_on"),
                             bool(r.get("multihop")), afis, f"RIPEstat rrc-info {when}".strip()))
        return out
    except (KeyError, TypeError) as exc:
        raise SourceError(f"{url}: not a RIPEstat rrc-info document (missing {exc})") from None


def parse_routeviews(pages: list[dict], url: str = ROUTEVIEWS_URL, when: str | None = None) -> list[Entry]:
    """`when`: the date the list was fetched (the list carries none); today by default."""
    out = []
    label = f"RouteViews API collector list {when or datetime.now(timezone.utc):%Y-%m-%d}" if not isinstance(when, str) \
        else f"RouteViews API collector list {when}"
    try:
        for doc in pages:
            for r in doc["results"]:
                if str(r.get("type", "")).lower() == "cisco":
                    continue  # no MRT archive (text dumps under oix-route-views/)
                name = str(r["name"])
                out.append(Entry(name, "routeviews", _exact(r["installed"], url, f"{name}.installed", up=True),
                                 _exact(r.get("removed"), url, f"{name}.removed", up=False),
                                 None if r.get("multihop") is None else bool(r["multihop"]),
                                 (), label))
    except (KeyError, TypeError) as exc:
        raise SourceError(f"{url}: not a RouteViews collector list (missing {exc})") from None
    return out


def fetch_routeviews(url: str, timeout: float) -> list[dict]:
    """Every page of the list, following `next` (bounded)."""
    pages, seen = [], set()
    while url and url not in seen and len(pages) < MAX_PAGES:
        seen.add(url)
        doc = download.get_json(url, timeout=timeout)
        if not isinstance(doc, dict):
            raise SourceError(f"{url}: not a RouteViews collector list (a JSON object expected)")
        pages.append(doc)
        url = doc.get("next")
    return pages


def observed_afis(data_dir: Path) -> dict[str, tuple[tuple[int, ...], list[str]]]:
    """collector -> (families with entries, months) from every manifest under data_dir."""
    seen: dict[str, tuple[set[int], set[str]]] = {}
    for m in layout.months_in(data_dir, "manifest"):
        for r in manifest.read(data_dir, m).values():
            if r["status"] != "ok":
                continue
            fams, months = seen.setdefault(r["collector"], (set(), set()))
            fams.update(a for a, k in ((4, "entries_v4"), (6, "entries_v6")) if (r[k] or 0) > 0)
            months.add(r["month"])
    return {c: (tuple(sorted(f)), sorted(m)) for c, (f, m) in seen.items() if f}


@dataclass
class Refresh:
    collectors: dict[str, Collector]
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    learned: list[str] = field(default_factory=list)
    projects: dict = field(default_factory=dict)


def merge(base: dict[str, Collector], projects: dict, entries: list[Entry], observed: dict | None = None) -> Refresh:
    """The catalogue `base` updated by the sources' entries and the observed families."""
    out = dict(base)
    res = Refresh(out)
    for e in entries:
        old = out.get(e.name)
        if old is None:
            new = Collector(name=e.name, project=projects[e.project], afis=e.afis, path=e.name,
                            active_from=e.active_from, active_until=e.active_until, multihop=e.multihop,
                            source=e.source, afis_source=f"{e.source} peers" if e.afis else "")
            res.added.append(e.name)
        else:
            afis, afis_source = old.afis, old.afis_source
            if e.afis and (not old.afis or old.afis_source.startswith(("RIPEstat", "observed"))):
                afis, afis_source = e.afis, f"{e.source} peers"
            new = replace(old, active_from=e.active_from, active_until=e.active_until,
                          evidence_from=None if e.active_from else old.evidence_from,
                          multihop=e.multihop if e.multihop is not None else old.multihop,
                          source=e.source, afis=afis, afis_source=afis_source)
            if new != old:
                res.changed.append(e.name)
        out[e.name] = new
    for name, (afis, months) in sorted((observed or {}).items()):
        c = out.get(name)
        if c is not None and not c.afis:
            out[name] = replace(c, afis=afis, afis_source=f"observed in ingested RIBs ({listed(months)})")
            res.learned.append(name)
    return res


# --- the file -------------------------------------------------------------------------

HEADER = """\
# The collector catalogue: every RouteViews and RIPE RIS collector with an MRT archive.
# Written by `congruency catalogue refresh` (ingest/catalogue_sources.py); the shipped copy
# was built from the stored outputs of RIPEstat rrc-info (2025-05-24) and the RouteViews API
# collector list (2025-05-24), plus the sourced facts of ../shared/data/collectors/COLLECTORS.md
# for what those don't carry (archive paths, legacy paths, families, collectors added later).
#
# Per collector:
#   project       routeviews | ris
#   afis          families its RIBs carry; [] = unknown (no source; learned from ingested data)
#   path          folder under the project's root; legacy_paths: older folders tried in order
#                 when `path` has no folder for the month ("" = the root itself)
#   active_from / active_until   YYYY-MM (the whole month counts) or YYYY-MM-DDTHH:MMZ (exact);
#                 no active_until = still active
#   evidence_from YYYY-MM: where no source gives the start, the first month a source shows it
#                 running; earlier slots are probed (no month folder = inactive)
# Layouts: "routeviews" = <root>/<path>/bgpdata/YYYY.MM/RIBS/rib.YYYYMMDD.HHMM.bz2;
# "ris" = <root>/<path>/YYYY.MM/bview.YYYYMMDD.HHMM.gz. rib_hours: the UTC hours RIBs are
# dumped at. Early RIS bviews are not always on the 8-hour grid (rrc00's bview.20020722.2337):
# discovery takes the nearest dump within --tolerance-minutes. Legacy TABLE_DUMP (v1) RIBs
# (RouteViews until 2009 on some collectors, RIS before 2002) are read by every backend.
# Not here: the Cisco `route-views` (text dumps under oix-route-views/, not MRT), rrc17 (no
# source shows it was ever deployed), route-views.paix (named in 2009; no dates in any source).
"""


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, int):
        return str(v)
    return json.dumps(str(v), ensure_ascii=False)


def _key(name: str) -> str:
    return name if all(ch.isalnum() or ch in "-_" for ch in name) else json.dumps(name)


def to_toml(cat: dict[str, Collector], projects: dict) -> str:
    """The catalogue as TOML: projects, then collectors in catalogue order."""
    lines = [HEADER]
    for p in sorted(projects.values(), key=lambda p: p.name != "routeviews"):
        lines += [f"[projects.{p.name}]", f"root = {_value(p.root)}", f"layout = {_value(p.layout)}",
                  f"rib_hours = {_value(list(p.rib_hours))}", ""]
    for c in cat.values():
        lines.append(f"[collectors.{_key(c.name)}]")
        fields = [("project", c.project.name), ("afis", list(c.afis)), ("afis_source", c.afis_source),
                  ("path", c.path), ("legacy_paths", list(c.legacy_paths)), ("active_from", c.active_from),
                  ("active_until", c.active_until), ("evidence_from", c.evidence_from),
                  ("multihop", c.multihop), ("source", c.source), ("note", c.note)]
        for k, v in fields:
            if v is None or (v in ("", []) and k not in ("afis",)):
                continue
            lines.append(f"{k} = {_value(v)}")
        lines.append("")
    return "\n".join(lines)


def order(cat: dict[str, Collector]) -> dict[str, Collector]:
    """RouteViews first, then RIS; each by start (unknown starts last), then name."""
    def key(c: Collector):
        start = c.active_from or c.evidence_from or "9999"
        return (c.project.name != "routeviews", start[:7], c.name)
    return {c.name: c for c in sorted(cat.values(), key=key)}


def refresh(base_path: str | Path | None, *, ripestat: str = RIPESTAT_URL, routeviews: str = ROUTEVIEWS_URL,
            data_dir: Path | None = None, timeout: float = 30.0, routeviews_date: str | None = None) -> Refresh:
    """Fetch both sources and merge them into the catalogue at base_path (shipped if None)."""
    base, projects = catalogue.load(base_path), catalogue.projects(base_path)
    rs = download.get_json(ripestat, timeout=timeout)
    if not isinstance(rs, dict):
        raise SourceError(f"{ripestat}: not a RIPEstat rrc-info document (a JSON object expected)")
    entries = parse_ripestat(rs, ripestat) + parse_routeviews(fetch_routeviews(routeviews, timeout), routeviews,
                                                               routeviews_date)
    res = merge(base, projects, entries, observed_afis(data_dir) if data_dir is not None else None)
    res.collectors, res.projects = order(res.collectors), projects
    return res
