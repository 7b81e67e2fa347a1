"""The collector catalogue (ingest/catalogue.toml): which collectors exist, where their RIBs live."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CATALOGUE = Path(__file__).with_name("catalogue.toml")


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
    afis: tuple[int, ...]
    path: str  # folder under the root
    legacy_path: str | None  # older folder under the root ("" = the root itself)


@lru_cache(maxsize=None)
def load(path: Path = CATALOGUE) -> dict[str, Collector]:
    data = tomllib.loads(path.read_text())
    projects = {
        name: Project(name, p["root"].rstrip("/"), p["layout"], tuple(p["rib_hours"]))
        for name, p in data["projects"].items()
    }
    return {
        name: Collector(
            name=name,
            project=projects[c["project"]],
            afis=tuple(c["afis"]),
            path=c.get("path", name),
            legacy_path=c.get("legacy_path"),
        )
        for name, c in data["collectors"].items()
    }


def get(name: str) -> Collector:
    cat = load()
    if name not in cat:
        raise KeyError(f"unknown collector {name!r} (known: {', '.join(sorted(cat))})")
    return cat[name]
