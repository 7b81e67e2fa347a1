"""Object storage: the one owner of how a data dir at `s3://bucket/prefix` is reached, by
DuckDB (httpfs and a secret), by pyarrow (its S3FileSystem) and by Spark (Hadoop's S3A: hadoop_conf; its jars:
pipeline/s3a.py).

Settings come the ecosystem's way, so a host set up for the AWS CLI or boto3 needs nothing
more: credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else
the profile (AWS_PROFILE, default `default`) of ~/.aws/credentials and ~/.aws/config
(AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE); the endpoint from AWS_ENDPOINT_URL_S3,
AWS_ENDPOINT_URL or the profile's endpoint_url; the region from AWS_REGION,
AWS_DEFAULT_REGION or the profile. The config's [s3] table (endpoint, region, url_style)
overrides those three; credentials are never in the project's config. With an endpoint
given, URLs are path-style unless url_style says otherwise: a local server has no bucket DNS
names. An endpoint without a scheme is https.

Settings are looked up per bucket: a Config with an s3:// data dir registers its [s3] table
for that bucket (`register`), and every reader and writer of the data dir in the process
(lake/attach.py, pipeline/publish.py, the DuckDB connections) reaches it the same way.
"""
from __future__ import annotations

import configparser
import os
from dataclasses import dataclass, field
from pathlib import Path

from bgp_congruency.common import layout
from bgp_congruency.common.errors import BadInput

SCHEME = layout.S3_SCHEME
#: Hadoop's S3A FileSystem, which Spark's sessions bind to the s3 scheme (hadoop_conf).
S3A_CLASS = "org.apache.hadoop.fs.s3a.S3AFileSystem"
URL_STYLES = ("path", "vhost")


@dataclass(frozen=True)
class S3Params:
    """The config's [s3] table: what overrides the AWS environment (module docstring)."""
    #: The S3 endpoint, "http://127.0.0.1:8333" or "https://s3.example.net"; None = the
    #: environment's, else AWS's own.
    endpoint: str | None = None
    #: The region; None = the environment's, else us-east-1.
    region: str | None = None
    #: "path" or "vhost"; None = path with an endpoint given, vhost on AWS.
    url_style: str | None = None


@dataclass(frozen=True)
class Access:
    """Everything a client needs to reach a bucket (secrets included: never logged)."""
    key_id: str | None
    secret: str | None = field(repr=False)
    token: str | None = field(repr=False)
    region: str
    #: host[:port] of the endpoint, or None for AWS.
    endpoint: str | None
    use_ssl: bool
    url_style: str

    def where(self) -> str:
        """The endpoint as messages name it."""
        return f"{'https' if self.use_ssl else 'http'}://{self.endpoint}" if self.endpoint else "AWS S3"


def local_dir(root) -> Path:
    """The one local folder of an s3:// data dir on this host (its compare's staging and spill,
    its ingest's mirror and MRT cache, its month locks): under the system's temp folder, named
    by the data dir's URL."""
    import hashlib
    import tempfile

    tag = hashlib.sha256(str(root).rstrip("/").encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"congruency-s3-{tag}"


def mirror_dir(root) -> Path:
    """The local mirror an s3:// data dir's ingest works in (ingest/onto_s3.py), whose
    `cache/` keeps the MRT dumps it downloaded."""
    return local_dir(root) / "ingest"


def is_s3(root) -> bool:
    return str(root).startswith(SCHEME)


def split(url: str) -> tuple[str, str]:
    """(bucket, key) of an s3:// URL; BadInput naming it when it has no bucket."""
    rest = str(url).removeprefix(SCHEME)
    bucket, _, key = rest.partition("/")
    if not is_s3(url) or not bucket:
        raise BadInput(f"{url}: not an S3 URL (s3://BUCKET/PREFIX)")
    return bucket, key.strip("/")


#: bucket -> the [s3] table of the Config that named it (register).
_REGISTERED: dict[str, S3Params] = {}


def register(root, params: S3Params) -> None:
    """Record the [s3] settings for `root`'s bucket (Config does, for an s3:// data dir)."""
    if is_s3(root):
        _REGISTERED[split(root)[0]] = params


def _profile(env) -> dict[str, str]:
    """The profile's settings of the shared credentials and config files (credentials win)."""
    name = env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE") or "default"
    out: dict[str, str] = {}
    home = Path(env.get("HOME", "~")).expanduser()
    for var, default, section in (("AWS_CONFIG_FILE", home / ".aws" / "config",
                                   name if name == "default" else f"profile {name}"),
                                  ("AWS_SHARED_CREDENTIALS_FILE", home / ".aws" / "credentials", name)):
        f = Path(env.get(var) or default).expanduser()
        if not f.is_file():
            continue
        p = configparser.RawConfigParser()
        try:
            p.read(f)
        except configparser.Error as exc:
            raise BadInput(f"{f}: not an AWS config file ({str(exc).splitlines()[0]})") from None
        if p.has_section(section):
            out.update(p.items(section))
    return out


def access(root, env=None) -> Access:
    """How to reach `root`'s bucket: the registered [s3] table over the environment."""
    env = os.environ if env is None else env
    params = _REGISTERED.get(split(root)[0], S3Params()) if is_s3(root) else S3Params()
    prof = _profile(env)
    key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    token = env.get("AWS_SESSION_TOKEN")
    if not (key and secret):
        key, secret = prof.get("aws_access_key_id"), prof.get("aws_secret_access_key")
        token = prof.get("aws_session_token")
    url = (params.endpoint or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
           or prof.get("endpoint_url") or None)
    region = params.region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or prof.get("region") \
        or "us-east-1"
    endpoint, ssl = None, True
    if url:
        scheme, sep, rest = url.partition("://")
        if sep and scheme not in ("http", "https"):
            raise BadInput(f"s3 endpoint: {url!r} is not an http:// or https:// URL")
        ssl = not sep or scheme == "https"
        endpoint = (rest if sep else url).rstrip("/")
    style = params.url_style or ("path" if endpoint else "vhost")
    return Access(key or None, secret or None, token or None, region, endpoint, ssl, style)


def duckdb_secret(a: Access, name: str = "congruency_s3") -> str:
    """The CREATE SECRET that gives DuckDB (httpfs) this access: a secret, not SET s3_*
    (DuckLake issue 1222: CHECKPOINT breaks on the settings)."""
    from bgp_congruency.common.duck import quote  # not at the top: the config (and --help) need no duckdb

    opts = ["TYPE s3", f"REGION {quote(a.region)}", f"URL_STYLE {quote(a.url_style)}",
            f"USE_SSL {str(a.use_ssl).lower()}"]
    if a.endpoint:
        opts.append(f"ENDPOINT {quote(a.endpoint)}")
    if a.key_id:
        opts += [f"KEY_ID {quote(a.key_id)}", f"SECRET {quote(a.secret or '')}"]
    if a.token:
        opts.append(f"SESSION_TOKEN {quote(a.token)}")
    return f"CREATE OR REPLACE SECRET {name} ({', '.join(opts)})"


def connect_duckdb(con, root) -> None:
    """Give the DuckDB connection `con` access to `root`'s bucket: httpfs from its wheel, and
    the secret."""
    from bgp_congruency.common.duck import load_extension

    load_extension(con, "httpfs")
    con.execute(duckdb_secret(access(root)))


def hadoop_conf(root) -> dict[str, str]:
    """Hadoop's S3A settings that reach `root`'s bucket the way access() does: bound to the s3
    scheme itself (the catalog's URLs stay s3://), the endpoint, region, URL style and
    credentials (Spark redacts *.key and *.token in its UI and logs), and few quick retries:
    an endpoint that is down fails a step in seconds, not after S3A's minutes of retrying."""
    a = access(root)
    conf = {"fs.s3.impl": S3A_CLASS, "fs.AbstractFileSystem.s3.impl": "org.apache.hadoop.fs.s3a.S3A",
            "fs.s3a.endpoint.region": a.region, "fs.s3a.path.style.access": str(a.url_style == "path").lower(),
            "fs.s3a.connection.ssl.enabled": str(a.use_ssl).lower(),
            "fs.s3a.attempts.maximum": "2", "fs.s3a.retry.limit": "2", "fs.s3a.retry.interval": "500ms",
            "fs.s3a.connection.establish.timeout": "5s", "fs.s3a.connection.timeout": "60s"}
    if a.endpoint:
        conf["fs.s3a.endpoint"] = f"{'https' if a.use_ssl else 'http'}://{a.endpoint}"
    if a.key_id:
        conf.update({"fs.s3a.access.key": a.key_id, "fs.s3a.secret.key": a.secret or ""})
        if a.token:
            conf.update({"fs.s3a.session.token": a.token, "fs.s3a.aws.credentials.provider":
                         "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"})
        else:
            conf["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
    else:
        conf["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
    return conf


def filesystem(root):
    """A pyarrow S3FileSystem for `root`'s bucket (paths without the scheme: `bucket/key`)."""
    from pyarrow import fs

    a = access(root)
    kw = dict(region=a.region, scheme="https" if a.use_ssl else "http",
              force_virtual_addressing=a.url_style == "vhost", connect_timeout=10, request_timeout=60,
              retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=3))
    if a.endpoint:
        kw["endpoint_override"] = a.endpoint
    if a.key_id:
        kw.update(access_key=a.key_id, secret_key=a.secret, session_token=a.token)
    else:
        kw["anonymous"] = True
    return fs.S3FileSystem(**kw)


def path(url: str) -> str:
    """`bucket/key` of an s3:// URL: how pyarrow names it."""
    return str(url).removeprefix(SCHEME).rstrip("/")


def check_bucket(root: str) -> None:
    """BadInput naming the bucket and the endpoint when `root`'s bucket does not exist (a
    server that makes buckets on a first write would otherwise make a misspelled one);
    OSError when the endpoint cannot be reached or refuses the credentials."""
    from pyarrow import fs

    bucket = split(root)[0]
    if filesystem(root).get_file_info(bucket).type == fs.FileType.NotFound:
        raise BadInput(f"{root}: no bucket {bucket} at {access(root).where()} (create it first; "
                       "names are DNS-like: lower case, digits, dots and hyphens)")


def for_arrow(files: list[str]) -> tuple[list[str], object]:
    """Parquet files, local or on S3, as pyarrow opens them: (paths, filesystem), the
    filesystem None for local files and the bucket's S3FileSystem for s3:// ones."""
    files = [str(f) for f in files]
    if files and is_s3(files[0]):
        return [path(f) for f in files], Bucket(files[0]).fs
    return files, None


def read_rows(file) -> list[dict]:
    """A small Parquet file's rows (a manifest), local or on S3; [] where there is none."""
    import pyarrow.parquet as pq

    there = Bucket(file).exists(file) if is_s3(file) else os.path.isfile(file)
    if not there:
        return []
    [p], fs = for_arrow([file])
    return pq.read_table(p, filesystem=fs).to_pylist()


def why(exc: BaseException) -> str:
    """An S3 client's error in one line: pyarrow's and DuckDB's carry the request's details
    over several lines; the first names what went wrong."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text.removeprefix("IO Error: ").removeprefix("When reading information for key ")


class Bucket:
    """A data dir's objects through pyarrow, by their s3:// URLs: the file-system calls the
    project makes (pipeline/publish.Store's, common/routes.month_input's). S3 has no folders:
    a "folder" is a key prefix, there while an object is under it."""

    def __init__(self, root: str):
        self.root = str(root).rstrip("/")
        self.fs = filesystem(self.root)

    def _info(self, url: str, recursive: bool = False):
        from pyarrow import fs

        return self.fs.get_file_info(fs.FileSelector(path(url), recursive=recursive, allow_not_found=True))

    def exists(self, url: str) -> bool:
        from pyarrow import fs

        return self.fs.get_file_info(path(url)).type != fs.FileType.NotFound

    def files(self, url: str) -> list[str]:
        """Names of the objects anywhere under `url`."""
        from pyarrow import fs

        return [i.base_name for i in self._info(url, recursive=True) if i.type == fs.FileType.File]

    def children(self, url: str) -> list[str]:
        return sorted(i.base_name for i in self._info(url))

    def read_text(self, url: str) -> str:
        with self.fs.open_input_stream(path(url)) as f:
            return f.read().decode()

    def write_text(self, url: str, text: str) -> None:
        """A small object written whole (S3 has no partial objects: a reader sees the old or the new)."""
        with self.fs.open_output_stream(path(url)) as f:
            f.write(text.encode())

    def stat(self, url: str) -> tuple[int, int]:
        """(size, modification time in ns) of an object."""
        i = self.fs.get_file_info(path(url))
        return i.size, i.mtime_ns or 0

    def delete(self, url: str) -> None:
        """The object, or every object under the prefix `url`."""
        from pyarrow import fs

        i = self.fs.get_file_info(path(url))
        if i.type == fs.FileType.File:
            self.fs.delete_file(path(url))
        elif i.type == fs.FileType.Directory:
            self.fs.delete_dir(path(url))

    def put_file(self, local, url: str) -> None:
        """One local file to the object `url` (complete, or not there at all)."""
        from pyarrow import fs

        fs.copy_files(str(local), path(url), source_filesystem=fs.LocalFileSystem(), destination_filesystem=self.fs)

    def upload(self, folder: str, url: str) -> list[str]:
        """Copy the local `folder`'s Parquet files (not a writer's dot-temp nor Spark's markers)
        to the prefix `url`; returns their URLs."""
        names = sorted(n for n in os.listdir(folder) if layout.is_data_file(n))
        for n in names:
            self.put_file(os.path.join(folder, n), f"{url.rstrip('/')}/{n}")
        return [f"{url.rstrip('/')}/{n}" for n in names]
