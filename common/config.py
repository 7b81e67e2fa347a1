"""The one typed configuration object, from defaults, a TOML file and command-line flags.

Precedence: flag > TOML file > default. Every command reads the same object, so a
monthly job and an analyst's one-off run can share one `congruency.toml`.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from common.params import MethodParams


class ConfigError(ValueError):
    """A bad configuration value; the message names the setting or file."""


@dataclass(frozen=True)
class Config:
    #: Collectors to ingest: names from the catalogue, or the sets all, routeviews, ris
    #: (each month plans only the collectors active in it).
    collectors: tuple[str, ...] = ("route-views2", "route-views6")
    #: A collector catalogue file (`congruency catalogue refresh` writes one); None = the shipped
    #: ingest/catalogue.toml.
    catalogue: str | None = None
    #: Days of the month and UTC times that select RIB snapshots (the method's window).
    days: tuple[int, ...] = (1, 2, 3, 4, 5)
    times: tuple[str, ...] = ("00:00",)
    #: A missing snapshot may be replaced by the nearest dump this close to it.
    tolerance_minutes: int = 120
    #: One root for every project (a mirror or a test server); None = per project below.
    archive_root: str | None = None
    #: Per-project roots (routeviews, ris) overriding the public ones of ingest/catalogue.toml.
    archive_roots: dict[str, str] = field(default_factory=dict)
    #: A BGPStream csvfile listing to take the RIB dumps from instead of the archives
    #: (ingest/bgpstream_csv.py); None = the archives.
    bgpstream_csv: str | None = None
    #: A local folder; for the Spark job also an hdfs:// or s3a:// URL (kept as a string).
    data_dir: Path | str = Path("data")
    backend: str = "native"  # the project's Rust decoder (ingest/native); or bgpdump, pybgpstream
    #: Snapshots fetched and decoded at once.
    concurrency: int = 2
    timeout_s: float = 60.0
    retries: int = 4
    backoff_s: float = 1.0
    #: With it, failed or missing snapshots don't make the exit code non-zero and the month
    #: goes on whenever at least one snapshot is ok.
    tolerate_failures: bool = False
    #: The month goes on to compare when at least this share of its planned snapshots (those
    #: of collectors active then) is ok, and at least min_project_share of each project's
    #: (RouteViews, RIS) that had any planned. 1.0 = every one (strict).
    min_snapshot_share: float = 1.0
    min_project_share: float = 1.0
    #: MRT files under DATA_DIR/cache: "keep", or "delete" each once its Parquet is
    #: published and its sha256 is in the manifest (a backfill's disk is mostly these).
    cache_policy: str = "keep"
    #: Disk a multi-month run may use under DATA_DIR ("500GB", "2TB"); the plan checks it
    #: (and the free space) before starting. None = free space only.
    disk_budget: str | None = None
    #: The download rate the plan assumes (Mbit/s), for its time estimate.
    plan_download_mbit_s: float = 100.0
    #: Entries of one RIB the plan assumes for a collector DATA_DIR has no snapshot of yet:
    #: a full 2026 route-views2 RIB (runner/plan.py).
    plan_entries_per_snapshot: int = 17_000_000
    batch_rows: int = 200_000
    #: Compare engine: "duckdb" (in-process, no Java) or "spark"; a named cluster
    #: (non-local spark_master, hdfs:// or s3a:// data_dir, spark-submit) implies Spark.
    engine: str = "duckdb"
    #: DuckDB engine: memory cap ("auto": half of this machine's memory, common/duck.py; or a
    #: size, "16GB"), spill folder (None = the month's staging folder), threads (None = all cores).
    duckdb_memory_limit: str = "auto"
    duckdb_temp_dir: str | None = None
    duckdb_threads: int | None = None
    spark_master: str = "local[*]"
    spark_conf: dict[str, str] = field(default_factory=dict)
    #: `congruency run` computes the sensitivity table and page after compare (off by default).
    sensitivity: bool = False
    method: MethodParams = field(default_factory=MethodParams)

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"

    def with_overrides(self, **values) -> "Config":
        """A copy with the given non-None values set (flags left unset stay as they are)."""
        return replace(self, **{k: v for k, v in values.items() if v is not None})


def read_toml(path: str | Path, what: str = "config file") -> dict:
    """A TOML file as a dict; ConfigError naming the file when it is missing or not TOML."""
    p = Path(path)
    try:
        return tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{p}: {what} not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{p}: is a folder; the {what} must be a TOML file") from None
    except PermissionError:
        raise ConfigError(f"{p}: {what} cannot be read (permission denied)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: not valid TOML ({str(exc).splitlines()[0]})") from None


_TUPLE_FIELDS = {"collectors", "days", "times"}

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def parse_bytes(text) -> int:
    """'500GB', '1.5TiB', '2000000' -> bytes; ValueError saying what is expected."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"expected a size like 500GB or 2TiB, got {text!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def load(path: str | Path | None = None) -> Config:
    """Defaults, updated by the TOML file at `path` if given. The groups of the method
    come from congruency/groups.toml unless the file sets [method.groups]."""
    from common.params import load_groups

    data: dict = read_toml(path) if path is not None else {}
    method_data = data.pop("method", {})
    known = {f.name for f in fields(Config)}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}")
    kw = {}
    for k, v in data.items():
        if k in _TUPLE_FIELDS:
            v = tuple(v)
        elif k == "data_dir":
            v = v if "://" in v else Path(v)
        kw[k] = v
    if kw.get("engine", "duckdb") not in ("duckdb", "spark"):
        raise ConfigError(f"{path}: engine must be \"duckdb\" or \"spark\", got {kw['engine']!r}")
    if kw.get("cache_policy", "keep") not in ("keep", "delete"):
        raise ConfigError(f"{path}: cache_policy must be \"keep\" or \"delete\", got {kw['cache_policy']!r}")
    for k in ("min_snapshot_share", "min_project_share"):
        v = kw.get(k, 1.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise ConfigError(f"{path}: {k} must be a number from 0 to 1, got {v!r}")
    if kw.get("duckdb_memory_limit", "auto") != "auto":
        try:
            parse_bytes(kw["duckdb_memory_limit"])
        except ValueError as exc:
            raise ConfigError(f"{path}: duckdb_memory_limit: {exc} or \"auto\"") from None
    if kw.get("disk_budget") is not None:
        try:
            parse_bytes(kw["disk_budget"])
        except ValueError as exc:
            raise ConfigError(f"{path}: disk_budget: {exc}") from None
    groups = method_data.pop("groups", None)
    if "reserved_asns" in method_data:
        method_data["reserved_asns"] = tuple(tuple(r) for r in method_data["reserved_asns"])
    try:
        method = MethodParams(groups=groups if groups is not None else load_groups(), **method_data)
        return Config(method=method, **kw)
    except TypeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except ValueError as exc:  # a method value out of its set (MethodParams.__post_init__)
        raise ConfigError(f"{path}: [method] {exc}") from None
