"""The one typed configuration object, from defaults, a TOML file and command-line flags.

Precedence: flag > TOML file > default. Every command reads the same object, so a
monthly job and an analyst's one-off run can share one `congruency.toml`.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from bgp_congruency.common import layout, s3
from bgp_congruency.common.errors import BadInput
from bgp_congruency.common.params import MethodParams, RelationshipParams, SourceParams, load_groups, read_asn_list

#: The compare engines (pipeline/engines/): every flag and setting that names one takes these.
ENGINES = ("duckdb", "spark")
#: The MRT decoders (ingest/backends/, one module each), the default first.
BACKENDS = ("native", "bgpdump", "pybgpstream")


class ConfigError(BadInput):
    """A bad configuration value; the message names the setting or file."""


@dataclass(frozen=True)
class Config:
    #: Collectors to ingest: names from the catalogue, or the sets all, routeviews, ris
    #: (each month plans only the collectors active in it).
    collectors: tuple[str, ...] = ("route-views2", "route-views6")
    #: A collector catalogue file (`congruency catalogue refresh` writes one); None = the shipped
    #: ingest/catalogue.toml.
    catalogue: str | None = None
    #: Days of the month that select RIB snapshots (the method's window).
    days: tuple[int, ...] = (1, 2, 3, 4, 5)
    #: UTC times of those days ("HH:MM"), one snapshot per collector each.
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
    #: A local folder; an S3 bucket and prefix, "s3://BUCKET/PREFIX" (both engines; the catalog
    #: then in PostgreSQL, `catalog`; reached as the [s3] table and the AWS environment say,
    #: common/s3.py); for the Spark job also an hdfs:// or s3a:// URL (kept as a string).
    data_dir: Path | str = Path("data")
    backend: str = "native"  # the project's Rust decoder (ingest/native); or bgpdump, pybgpstream
    #: Snapshots fetched and decoded at once.
    concurrency: int = 2
    #: Seconds without progress before a download attempt is given up.
    timeout_s: float = 60.0
    #: Download attempts after the first, with exponential backoff from backoff_s seconds.
    retries: int = 4
    #: The first retry's wait (seconds); each later one doubles it.
    backoff_s: float = 1.0
    #: With it, failed or missing snapshots don't make the exit code non-zero and the month
    #: goes on whenever at least one snapshot is ok.
    tolerate_failures: bool = False
    #: The month goes on to compare when at least this share of its planned snapshots (those
    #: of collectors active then) is ok, and at least min_project_share of each project's
    #: (RouteViews, RIS) that had any planned. 1.0 = every one (strict).
    min_snapshot_share: float = 1.0
    #: The share of each project's planned snapshots that must be ok (see min_snapshot_share).
    min_project_share: float = 1.0
    #: MRT files under DATA_DIR/cache: "keep", or "delete" each once its Parquet is
    #: published and its sha256 is in the manifest (a backfill's disk is mostly these).
    cache_policy: str = "keep"
    #: Disk a multi-month run may use under DATA_DIR ("500GB", "2TB"); the plan checks it
    #: (and the free space) before starting. None = free space only.
    disk_budget: str | None = None
    #: The download rate the plan assumes (Mbit/s), for its time estimate.
    plan_download_mbit_s: float = 100.0
    #: Entries of one RIB the plan assumes for a collector DATA_DIR has no snapshot of yet
    #: and no local archive holds: a full 2026 route-views2 RIB (runner/plan.py).
    plan_entries_per_snapshot: int = 17_000_000
    #: Rows per Arrow batch the decoder hands to the Parquet writer (memory per snapshot).
    batch_rows: int = 200_000
    #: Compare engine: "duckdb" (in-process, no Java) or "spark"; a named cluster
    #: (non-local spark_master, hdfs:// or s3a:// data_dir, spark-submit) implies Spark.
    engine: str = "duckdb"
    #: DuckDB engine's memory cap: "auto" (half of this machine's memory, common/duck.py) or
    #: a size, "16GB".
    duckdb_memory_limit: str = "auto"
    #: DuckDB's spill folder, for the compare and every other DuckDB query (each in a folder
    #: of its own under it); None = the month's staging folder for the compare and the
    #: hints, the system's temp folder (TMPDIR) elsewhere (the VP partitions' aggregates are
    #: kept in the staging folder either way, for a killed compare's next run to resume).
    duckdb_temp_dir: str | None = None
    #: DuckDB engine's threads; None = all cores.
    duckdb_threads: int | None = None
    #: VP partitions of the DuckDB compare (K even hash ranges); None = cut from the month's
    #: per-VP counts and duckdb_memory_limit (pipeline/partitions.py). Spark runs one.
    compare_partitions: int | None = None
    #: Spark engine's master: local[*], or spark://host:port, k8s://..., yarn for a cluster.
    spark_master: str = "local[*]"
    #: Extra Spark settings (key = value), added to pipeline/sparkconf's defaults.
    spark_conf: dict[str, str] = field(default_factory=dict)
    #: `congruency run` computes the sensitivity table and page after compare (off by default).
    sensitivity: bool = False
    #: `congruency run`'s hints step writes the JSON Lines export for tunnel tools,
    #: DATA_DIR/exports/month=M/tunnels.jsonl (about 1.7 KB per pair: 9.9 GiB for a month of
    #: 6.2M pairs); false leaves it out and removes an earlier run's (`congruency export`
    #: writes it when needed). `congruency plan` counts its time and disk when it is on (an
    #: upper bound until a local DATA_DIR holds an exported month of its own).
    tunnels_export: bool = True
    #: Where the published tables' catalog is: None, DATA_DIR/catalog.sqlite (one host); or a
    #: PostgreSQL database, "postgresql://USER@HOST:PORT/DB" (or "postgres:" and a libpq
    #: conninfo), for a data dir several hosts publish to or read. The first compare records
    #: it in DATA_DIR/catalog.url, where every reader finds it (lake/attach.py).
    catalog: str | None = None
    #: Catalog snapshots `congruency run` keeps (its `lake` step expires older ones once there
    #: are more; lake/catalog.vacuum). Time travel reaches back this many publishes.
    lake_keep_snapshots: int = 100
    #: Seconds a file no kept snapshot needs stays on disk before vacuum deletes it (a reader
    #: that began before the expiry may still be reading it).
    lake_vacuum_grace_s: int = 3600
    #: The method's parameters: the [method] table.
    method: MethodParams = field(default_factory=MethodParams)
    #: The AS-relationship inference's parameters (relationships/METHOD.md): the
    #: [relationships] table.
    relationships: RelationshipParams = field(default_factory=RelationshipParams)
    #: The operator's host, for advice from it (advise, export, run's tunnels export): the
    #: [source] table.
    source: SourceParams = field(default_factory=SourceParams)
    #: How an s3:// data dir is reached, over the AWS environment: the [s3] table.
    s3: s3.S3Params = field(default_factory=s3.S3Params)

    def __post_init__(self):
        # Every reader and writer of an s3:// data dir in this process reaches its bucket the
        # way this config says (common/s3.register).
        s3.register(self.data_dir, self.s3)

    @property
    def cache_dir(self) -> Path:
        """The MRT cache: in the data dir, or on S3 in this host's mirror (ingest/onto_s3.py)."""
        return (s3.mirror_dir(self.data_dir) if s3.is_s3(self.data_dir) else self.data_dir) / "cache"

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
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"expected a size like 500GB or 2TiB, got {text!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


# --- every value checked once, when the config is read ---------------------------------
# Each check returns the value (normalised) or raises ValueError/TypeError saying what is
# expected; load() adds the file and key. Flags are checked by their own parsers (cli/).

def _expect(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"expected {what}")


def _number(lo: float | None = None, hi: float | None = None, *, integer: bool = False, above: bool = False,
            optional: bool = False):
    kind = "a whole number" if integer else "a number"
    rng = (f" from {lo:g} to {hi:g}" if hi is not None else f" above {lo:g}" if above else
           f" of at least {lo:g}" if lo is not None else "")

    def check(v):
        if v is None and optional:
            return v
        if integer and isinstance(v, float) and v.is_integer():
            v = int(v)  # 120.0 is the whole number 120
        good = not isinstance(v, bool) and isinstance(v, int if integer else (int, float))
        good = good and (lo is None or (v > lo if above else v >= lo)) and (hi is None or v <= hi)
        _expect(good, kind + rng)
        return v
    return check


def _text(optional: bool = False, choices: tuple[str, ...] = ()):
    def check(v):
        if v is None and optional:
            return v
        if choices:
            _expect(v in choices, "one of " + ", ".join(f'"{c}"' for c in choices))
        _expect(isinstance(v, str) and v.strip() != "", "a text")
        return v
    return check


def _bool(v):
    _expect(isinstance(v, bool), "true or false")
    return v


def _list_of(item, what: str, nonempty: bool = True):
    def check(v):
        _expect(isinstance(v, list) and (v or not nonempty), f"a list of {what}")
        return [item(x) for x in v]
    return check


def _table_of_text(v):
    _expect(isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, (str, int, float, bool))
                                        for k, x in v.items()), "a table of names to values")
    return {k: str(x).lower() if isinstance(x, bool) else str(x) for k, x in v.items()}


def _size(optional: bool = False, auto: bool = False):
    def check(v):
        if (v is None and optional) or (auto and v == "auto"):
            return v
        try:
            parse_bytes(v)
        except ValueError:
            raise ValueError("expected a size like 500GB or 2TiB" + (' or "auto"' if auto else "")) from None
        return v
    return check


def _day(v):
    _expect(not isinstance(v, bool) and isinstance(v, int) and 1 <= v <= 31, "days of the month, 1 to 31")
    return v


def _time(v):
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", v) if isinstance(v, str) else None
    _expect(bool(m) and int(m.group(1)) <= 23 and int(m.group(2)) <= 59, 'UTC times "HH:MM" (00:00 to 23:59)')
    return f"{int(m.group(1)):02d}:{m.group(2)}"


def _roots(v):
    _expect(isinstance(v, dict) and all(isinstance(x, str) and x for x in v.values()),
            'a table of project roots: { routeviews = "URL or folder", ris = "..." }')
    return v


def _collectors(v):
    """A list of names or sets; a text is one name, or several with commas as on the command
    line (`collectors = "route-views2"` once read as the letters r, o, u, ...)."""
    if isinstance(v, str):
        v = [x.strip() for x in v.split(",")]
    return _list_of(_text(), 'collector names or sets, like ["route-views2", "rrc00"] or ["all"]')(v)


_CHECKS = {
    "collectors": _collectors,
    "catalogue": _text(optional=True),
    "days": _list_of(_day, "days of the month, 1 to 31"),
    "times": _list_of(_time, 'UTC times "HH:MM"'),
    "tolerance_minutes": _number(0, integer=True),
    "archive_root": _text(optional=True),
    "archive_roots": _roots,
    "bgpstream_csv": _text(optional=True),
    "data_dir": _text(),
    "backend": _text(choices=BACKENDS),
    "concurrency": _number(1, integer=True),
    "timeout_s": _number(0, above=True),
    "retries": _number(0, integer=True),
    "backoff_s": _number(0),
    "tolerate_failures": _bool,
    "min_snapshot_share": _number(0, 1),
    "min_project_share": _number(0, 1),
    "cache_policy": _text(choices=("keep", "delete")),
    "disk_budget": _size(optional=True),
    "plan_download_mbit_s": _number(0, above=True),
    "plan_entries_per_snapshot": _number(1, integer=True),
    "batch_rows": _number(1, integer=True),
    "engine": _text(choices=ENGINES),
    "duckdb_memory_limit": _size(auto=True),
    "duckdb_temp_dir": _text(optional=True),
    "duckdb_threads": _number(1, integer=True, optional=True),
    "compare_partitions": _number(1, integer=True, optional=True),
    "spark_master": _text(),
    "spark_conf": _table_of_text,
    "sensitivity": _bool,
    "tunnels_export": _bool,
    "catalog": _text(optional=True),
    "lake_keep_snapshots": _number(1, integer=True),
    "lake_vacuum_grace_s": _number(0, integer=True),
}


def _asn_range(v):
    _expect(isinstance(v, list) and len(v) == 2 and all(not isinstance(x, bool) and isinstance(x, int) for x in v)
            and 0 <= v[0] <= v[1] <= 2**32 - 1, "[low, high] ASN ranges with low <= high")
    return tuple(v)


_METHOD_CHECKS = {
    "min_coverage": _number(0, 1),
    "first_as_rule": _bool,
    "reserved_asns": lambda v: tuple(_list_of(_asn_range, "[low, high] ASN ranges", nonempty=False)(v)),
    "groups": lambda v: _expect(isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
                                "a table of collector = group") or v,
}


def _asn(v):
    _expect(not isinstance(v, bool) and isinstance(v, int) and 0 <= v <= 2**32 - 1, "ASNs (whole numbers)")
    return v


_RELATIONSHIP_CHECKS = {
    "route_servers": lambda v: frozenset(_list_of(_asn, "ASNs", nonempty=False)(v)),
    "route_servers_file": _text(optional=True),
    "clique_candidates": _number(2, 40, integer=True),
    "ipv6_clique_missing": _number(0, integer=True),
    "ipv6_open_peering": _bool,
    "clique_refute_dests": _number(1, integer=True),
    "min_triplet_paths": _number(1, integer=True),
    "partial_feed_share": _number(0, 1),
    "provider_less_transit": _number(1, integer=True),
}


def _relationships(path, data) -> RelationshipParams:
    """The [relationships] table; a route-server file is read here (relative to the config
    file), so a bad one fails before any month is computed."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: relationships: expected a [relationships] table, got {data!r}")
    kw = {}
    for k, v in data.items():
        if k not in _RELATIONSHIP_CHECKS:
            raise ConfigError(f"{path}: [relationships] unknown setting {k}")
        try:
            kw[k] = _RELATIONSHIP_CHECKS[k](v)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: [relationships] {k}: {exc}, got {v!r}") from None
    if kw.get("route_servers_file"):
        f = Path(kw["route_servers_file"]).expanduser()
        f = f if f.is_absolute() or path is None else Path(path).resolve().parent / f
        kw["route_servers_file"] = str(f)
        try:
            kw["route_servers"] = kw.get("route_servers", frozenset()) | read_asn_list(f)
        except BadInput as exc:
            raise ConfigError(f"{path}: [relationships] route_servers_file: {exc}") from None
    return RelationshipParams(**kw)


_VIA = re.compile(r"(?:AS|as)?\d{1,10}(?::(?:provider|peer|customer))?")


def _vias(v):
    items = [x.strip() for x in v.split(",")] if isinstance(v, str) else v
    _expect(isinstance(items, list) and items and all(isinstance(x, str) and _VIA.fullmatch(x.strip()) for x in items),
            'neighbours like ["3356", "174:peer"] (AS[:provider|peer|customer])')
    return tuple(x.strip() for x in items)


def _source(path, data) -> SourceParams:
    """The [source] table: asn, via4, via6."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: source: expected a [source] table, got {data!r}")
    checks = {"asn": _asn, "via4": _vias, "via6": _vias}
    kw = {}
    for k, v in data.items():
        if k not in checks:
            raise ConfigError(f"{path}: [source] unknown setting {k} (asn, via4, via6)")
        try:
            kw[k] = checks[k](v)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: [source] {k}: {exc}, got {v!r}") from None
    if kw and "asn" not in kw:
        raise ConfigError(f"{path}: [source] asn: required with via4/via6 (the source host's AS)")
    return SourceParams(**kw)


def _s3(path, data) -> s3.S3Params:
    """The [s3] table: endpoint, region, url_style."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: s3: expected an [s3] table, got {data!r}")
    checks = {"endpoint": _text(), "region": _text(), "url_style": _text(choices=s3.URL_STYLES)}
    kw = {}
    for k, v in data.items():
        if k not in checks:
            raise ConfigError(f"{path}: [s3] unknown setting {k} (endpoint, region, url_style; credentials come "
                              "from the AWS environment or profile)")
        try:
            kw[k] = checks[k](v)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: [s3] {k}: {exc}, got {v!r}") from None
    return s3.S3Params(**kw)


def load(path: str | Path | None = None) -> Config:
    """Defaults, updated by the TOML file at `path` if given. The groups of the method
    come from common/groups.toml unless the file sets [method.groups]."""
    data: dict = read_toml(path) if path is not None else {}
    method_data = data.pop("method", {})
    relationships = _relationships(path, data.pop("relationships", {}))
    source = _source(path, data.pop("source", {}))
    s3_params = _s3(path, data.pop("s3", {}))
    known = {f.name for f in fields(Config)}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}")
    kw = {}
    for k, v in data.items():
        try:
            v = _CHECKS[k](v)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: {k}: {exc}, got {v!r}") from None
        if k in _TUPLE_FIELDS:
            v = tuple(v)
        elif k == "data_dir":
            v = layout.root_of(v)
        kw[k] = v
    if not isinstance(method_data, dict):
        raise ConfigError(f"{path}: method: expected a [method] table, got {method_data!r}")
    for k, v in method_data.items():
        if k in _METHOD_CHECKS:
            try:
                method_data[k] = _METHOD_CHECKS[k](v)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"{path}: [method] {k}: {exc}, got {v!r}") from None
    groups = method_data.pop("groups", None)
    try:
        method = MethodParams(groups=groups if groups is not None else load_groups(), **method_data)
        return Config(method=method, relationships=relationships, source=source, s3=s3_params, **kw)
    except TypeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except ValueError as exc:  # a method value out of its set (MethodParams.__post_init__)
        raise ConfigError(f"{path}: [method] {exc}") from None
