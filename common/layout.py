"""Where everything lives in a data dir: the one owner of DATA_DIR's layout.

    DATA_DIR/
      routes/month=M/collector=C/gen-N/                ingest: the collector's routes, each with the
                                                       snapshots that saw it (common/routes.py)
      manifest/month=M/collector=C.parquet             ingest: what was read, from where
      <table>/month=M/<M>-<id>/*.parquet               published tables (common/tables.py), one
                                                       folder per publish; which are current:
      catalog.sqlite                                   the DuckLake catalog (lake/attach.py), or
      catalog.url                                      where it is (PostgreSQL: the config's `catalog`)
      _staging/<M>-<id>/<table>/                       a month being computed, then published
      _staging/ingest-<M>/collector=C/<dump>.parquet   dumps decoded, not yet merged into routes
      _staging/<M>.lock                                the month's lock (common/locks.py)
      _runs/month=M/state.json, _runs/shared.json      the monthly run's steps (runner/); beside
      _runs/month=M/ingest.collector=C.json            state.json, the DAG's ingest per collector
      exports/month=M/tunnels.jsonl                    the hints for tunnel tools
      reports/month=M/report.html, sensitivity.html    offline pages; reports/trend.html

A data dir is a local folder; an S3 bucket and prefix, s3://BUCKET/PREFIX, for both engines
(common/s3.py; its staging folders are local: pipeline/publish.ObjectStore); or (Spark only)
a URL such as hdfs://... or s3a://.... Every function here takes either and returns the same
kind: a Path for a local folder, a string for a URL. Writers name their own files inside these folders.
"""
from __future__ import annotations

import os
import shlex
from pathlib import Path

from bgp_congruency.common.errors import BadInput

#: Hive-style partition folder of a month: `month=YYYY-MM`.
MONTH = "month="
STAGING, RUNS = "_staging", "_runs"
#: The scheme of a data dir on S3 (common/s3.py reaches it).
S3_SCHEME = "s3://"
CATALOG, CATALOG_POINTER = "catalog.sqlite", "catalog.url"


class NotLocal(BadInput):
    """A step that reads files in place was given a cluster data dir (exit 2)."""


def is_cluster(root: str | os.PathLike) -> bool:
    """True for data dirs that are URLs, not local folders (s3://, hdfs://, s3a://, ...)."""
    s = str(root)
    return "://" in s and not s.startswith("file://")


def hadoop_only(root: str | os.PathLike) -> bool:
    """True for data dirs only a Hadoop FileSystem (the Spark engine) reaches: every URL but
    s3:// (common/s3.py), which DuckDB and pyarrow reach too."""
    return is_cluster(root) and not str(root).startswith(S3_SCHEME)


def root_of(text: str | os.PathLike) -> str | Path:
    """A --data-dir as given: a URL stays a string (Path would fold '//'), a folder a Path."""
    return str(text) if is_cluster(text) else Path(str(text).removeprefix("file://"))


def local(root: str | os.PathLike, who: str) -> Path:
    """The local folder `root`, or NotLocal saying that `who` (reading files in place) needs one."""
    if is_cluster(root):
        raise NotLocal(f"{root}: {who} needs a local data dir, not cluster storage")
    return Path(str(root).removeprefix("file://"))


def is_data_file(name: str) -> bool:
    """A table's data file by its name: Parquet, not a writer's dot-temp nor Spark's markers
    (`_SUCCESS`, `.crc`)."""
    return name.endswith(".parquet") and not name.startswith((".", "_"))


def home(root: str | os.PathLike) -> str:
    """The data dir as one string names it wherever it is read from: a local folder's absolute
    path, a URL without its trailing slash (the catalog's DATA_PATH, a process's keys)."""
    return str(root).rstrip("/") if is_cluster(root) else str(Path(str(root).removeprefix("file://")).resolve())


def readable(root: str | os.PathLike, who: str) -> str | Path:
    """`root` as DuckDB and pyarrow read it in place: a local folder (a Path) or an s3:// data
    dir (a string, common/s3.py); NotLocal saying that `who` needs one for storage only
    Hadoop reaches (hdfs://, s3a://)."""
    if hadoop_only(root):
        raise NotLocal(f"{root}: {who} needs a local or s3:// data dir, not Hadoop's storage")
    return root_of(root)


def _join(root, *parts: str):
    return "/".join([str(root).rstrip("/"), *parts]) if is_cluster(root) else Path(root).joinpath(*parts)


def month_part(month: str) -> str:
    return f"{MONTH}{month}"


def table_dir(root, table: str):
    return _join(root, table)


def month_dir(root, table: str, month: str):
    """A table's folder of one month (published tables, rib_entries, manifest)."""
    return _join(root, table, month_part(month))


def decoded_file(root, month: str, collector: str, stem: str):
    """One dump decoded by ingest, waiting to be merged into the collector's routes."""
    return _join(decoded_dir(root, month, collector), f"{stem}.parquet")


def legacy_entries_dir(root, month: str):
    """Where ingest stored each dump whole before 2026-11-28 (rib_entries/month=M/collector=C/):
    its next run merges those into routes."""
    return _join(root, "rib_entries", month_part(month))


def routes_dir(root, month: str, collector: str | None = None):
    """The month's routes (common/routes.py), or one collector's: its generations inside."""
    return _join(root, "routes", month_part(month), *([f"collector={collector}"] if collector else []))


def decoded_dir(root, month: str, collector: str):
    """Where ingest decodes a collector's dumps of the month before they are merged into its
    routes (a staging folder: no reader looks there)."""
    return _join(root, STAGING, f"ingest-{month}", f"collector={collector}")


def manifest_dir(root, month: str):
    return _join(root, "manifest", month_part(month))


def manifest_file(root, month: str, collector: str | None = None):
    """A collector's manifest of the month (ingest/manifest.py); with None, the single file an
    earlier version wrote for the whole month."""
    return _join(manifest_dir(root, month), f"collector={collector}.parquet" if collector else "manifest.parquet")


def manifest_names(names) -> tuple[str | None, dict[str, str]]:
    """Of a month's manifest folder's entries: the single file an earlier version wrote (or
    None) and collector -> its file's name. A collector's file shadows that collector's rows
    of the single file (ingest/manifest.latest)."""
    per = {n.removeprefix("collector=").removesuffix(".parquet"): n for n in sorted(names)
           if n.startswith("collector=") and n.endswith(".parquet")}
    return ("manifest.parquet" if "manifest.parquet" in names else None), per


def manifest_parts(root, month: str) -> tuple:
    """The month's manifest files: (the single file or None, collector -> its file)."""
    d = manifest_dir(root, month)
    if str(root).startswith(S3_SCHEME):
        from bgp_congruency.common import s3  # it reaches the bucket (and imports this module)

        names = s3.Bucket(root).children(d)
    else:
        names = os.listdir(d) if os.path.isdir(d) else []
    single, per = manifest_names(names)
    return (_join(d, single) if single else None), {c: _join(d, n) for c, n in per.items()}


def staging_dir(root):
    return _join(root, STAGING)


def state_file(root, month: str, collector: str | None = None):
    """The month's state, or (collector given) one collector's ingest outcome beside it."""
    return _join(root, RUNS, month_part(month), f"ingest.collector={collector}.json" if collector else "state.json")


def runs_file(root, name: str):
    """A file of the runner's own beside the months' state (shared.json)."""
    return _join(root, RUNS, name)


def export_file(root, month: str, name: str = "tunnels.jsonl"):
    return _join(root, "exports", month_part(month), name)


def report_file(root, month: str | None, name: str = "report.html"):
    """A month's page (report.html, sensitivity.html), or with month None the trend page."""
    return _join(root, "reports", "trend.html") if month is None else _join(root, "reports", month_part(month), name)


def catalog_file(root):
    """The DuckLake catalog of the published tables (lake/attach.py): local data dirs only."""
    return Path(root) / CATALOG


def catalog_pointer(root):
    """Where a data dir's catalog is when not in catalog_file (the config's `catalog`): on S3,
    always (its catalog is PostgreSQL)."""
    return _join(root, CATALOG_POINTER)


def publish_dir(root, table: str, month: str, publish_id: str):
    """One publish of a table's month: its files, registered in the catalog by that publish."""
    return _join(root, table, month_part(month), publish_id)


def shell_quote(path) -> str:
    """A path as a shell word, for the commands messages suggest: pasted, `data dir [x]`
    stays one argument."""
    return shlex.quote(str(path))


def months_in(root, table: str) -> list[str]:
    """The months that have a folder under a table (published or not), sorted."""
    if str(root).startswith(S3_SCHEME):
        from bgp_congruency.common import s3  # it reaches the bucket (and imports this module)

        d = table_dir(root, table)
        return sorted(n.removeprefix(MONTH) for n in s3.Bucket(root).children(d) if n.startswith(MONTH))
    d = Path(root) / table
    return sorted(p.name.removeprefix(MONTH) for p in d.glob(f"{MONTH}*")
                  if p.is_dir() and not p.name.startswith(".")) if d.is_dir() else []


def bytes_under(folder) -> int:
    """Bytes of the files under a local folder (0 when there is none): what a data dir holds,
    or what a staging folder holds while the compare writes and spills into it, so a file
    removed while it walks counts 0 and a link counts as itself."""
    total = 0
    for root, _dirs, names in os.walk(folder):
        for n in names:
            try:
                total += os.lstat(os.path.join(root, n)).st_size
            except OSError:
                pass
    return total
