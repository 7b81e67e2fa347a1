"""Month publishing: one Store interface, on the local disk or through Hadoop's FileSystem API.

A month's tables are staged completely under DATA_DIR/_staging/<month>-<id>/, then each
staged table folder is moved (a rename) to `<table>/month=M/<month>-<id>/`, a name no other
publish uses, and the catalog registers them all in one transaction (lake/commit.py):
readers see the old month or the new one, never a half-written one or a mix of tables, and
other months are never touched. `LocalStore` needs no JVM (the DuckDB engine); `HadoopStore`
is Spark's (its staged folders hold Spark's own marker files, which the catalog skips).

A run killed mid-way leaves its `_staging/<month>-<id>/`, or moved folders the catalog never
registered; `recover(month)`, called under the month lock before the next attempt, deletes
both: the month is computed again, but for the partitions a killed DuckDB compare finished,
which the next one reuses from its staging folder (pipeline/engines/duckdb.py, WORK_DB).
"""
from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from bgp_congruency.common import hooks, layout, s3
from bgp_congruency.lake import commit, upkeep


class Store:
    """Paths as strings under `root`; subclasses provide the five file-system primitives."""

    root: str

    def path(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def month(self, table: str, month: str, *parts: str) -> str:
        """A table's folder of one month (common/layout.py), or a file in it."""
        return self.path(table, layout.month_part(month), *parts)

    def exists(self, p: str) -> bool:
        raise NotImplementedError

    def files(self, p: str) -> list[str]:
        """Names of the files anywhere under p (empty when p does not exist)."""
        raise NotImplementedError

    def mkdirs(self, p: str) -> None:
        raise NotImplementedError

    def rename(self, src: str, dst: str) -> bool:
        raise NotImplementedError

    def delete(self, p: str) -> None:
        raise NotImplementedError

    def has_files(self, p: str, suffix: str = ".parquet") -> bool:
        return any(n.endswith(suffix) and not n.startswith((".", "_")) for n in self.files(p))

    def staging_root(self) -> str:
        """Where the month's staging folders are (and a killed run's, for `recover`)."""
        return self.path(layout.STAGING)

    def staging(self, month: str) -> str:
        return f"{self.staging_root()}/{month}-{uuid.uuid4().hex[:8]}"

    def stat(self, p: str) -> tuple[int, int]:
        """(size, modification time in ns) of a file: what a resumed run checks is unchanged."""
        st = os.stat(p)
        return st.st_size, st.st_mtime_ns

    def children(self, p: str) -> list[str]:
        """Names of the entries directly under p (empty when p does not exist)."""
        raise NotImplementedError

    def read_text(self, p: str) -> str:
        """A small text file's contents (a routes generation's snapshots.json)."""
        raise NotImplementedError

    def stager_folder(self, staged: str) -> str:
        """The local folder where the compare's stagers (pipeline/job.Stager) write their
        tables: `staged` itself, where it is local."""
        return str(layout.local(staged, "the tables computed in the compare"))

    def take_staged(self, folder: str, staged: str, tables: list[str]) -> None:
        """The stagers' `tables` from stager_folder's `folder` into `staged` (nothing to do
        where they are the same folder)."""

    def publish(self, staged: str, tables: list[str], month: str, replace: bool = True,
                retire: tuple[str, ...] = ()) -> list[str]:
        """Move every staged table of `month` to its publish folder and register them in the
        catalog in one transaction (`replace`: instead of the month's rows so far, else beside
        them; `retire`: tables derived from them whose rows of the month go in the same
        transaction); returns the published folders."""
        sid = staged.rstrip("/").rsplit("/", 1)[-1]
        for t in tables:
            if not self.exists(f"{staged}/{t}"):
                raise OSError(f"could not publish {t}: {staged}/{t} was not staged")
        root = self._catalog_root()
        out = {}
        for i, t in enumerate(tables):
            if i:
                hooks.pause("publish")
            out[t] = self.month(t, month, sid)
            self.mkdirs(self.month(t, month))
            if not self.rename(f"{staged}/{t}", out[t]):
                raise OSError(f"could not move {staged}/{t} to {out[t]}")
        self._register(root, month, out, replace, retire)
        hooks.pause("published")
        self.delete(staged)
        return list(out.values())

    def _catalog_root(self):
        """The data dir as the catalog names it, checked before anything moves."""
        return layout.local(self.root, "the catalog of the published tables")

    def _register(self, root, month: str, out: dict[str, str], replace: bool, retire: tuple[str, ...]) -> None:
        commit.publish(root, month, {t: str(layout.local(p, "the catalog")) for t, p in out.items()},
                       replace=replace, retire=retire)

    def recover(self, month: str, keep: str | None = None) -> list[str]:
        """Delete what killed runs of `month` left: their staging folders (but `keep`, the
        one a run resumes), and publish folders the catalog never registered (module
        docstring); returns them. Hold the month lock."""
        base = self.staging_root()
        done = [p for n in self.children(base) if n.startswith(f"{month}-") and (p := f"{base}/{n}") != keep]
        if not layout.is_cluster(self.root):
            done += [str(p) for p in upkeep.orphans(layout.local(self.root, "the catalog"), month)]
        for p in done:
            self.delete(p)
        return done


class LocalStore(Store):
    """A local data dir with plain system calls (no JVM)."""

    def __init__(self, root: str | os.PathLike):
        self.root = str(Path(str(root).removeprefix("file://")).resolve())

    def exists(self, p: str) -> bool:
        return os.path.exists(p)

    def files(self, p: str) -> list[str]:
        return [n for _d, _s, names in os.walk(p) for n in names]

    def mkdirs(self, p: str) -> None:
        os.makedirs(p, exist_ok=True)

    def rename(self, src: str, dst: str) -> bool:
        os.rename(src, dst)
        return True

    def delete(self, p: str) -> None:
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.lexists(p):
            os.unlink(p)

    def children(self, p: str) -> list[str]:
        return sorted(os.listdir(p)) if os.path.isdir(p) else []

    def read_text(self, p: str) -> str:
        return Path(p).read_text()


class HadoopStore(Store):
    """Through the JVM's Hadoop FileSystem of a SparkSession: local disk, HDFS, S3A alike."""

    def __init__(self, spark, root: str):
        jvm = spark._jvm
        self._Path = jvm.org.apache.hadoop.fs.Path
        self._IOUtils = jvm.org.apache.commons.io.IOUtils
        self.root = root.rstrip("/")
        self.fs = self._Path(self.root).getFileSystem(spark._jsc.hadoopConfiguration())

    def exists(self, p: str) -> bool:
        return self.fs.exists(self._Path(p))

    def files(self, p: str) -> list[str]:
        if not self.exists(p):
            return []
        out, it = [], self.fs.listFiles(self._Path(p), True)
        while it.hasNext():
            out.append(it.next().getPath().getName())
        return out

    def mkdirs(self, p: str) -> None:
        self.fs.mkdirs(self._Path(p))

    def rename(self, src: str, dst: str) -> bool:
        return bool(self.fs.rename(self._Path(src), self._Path(dst)))

    def delete(self, p: str) -> None:
        self.fs.delete(self._Path(p), True)

    def children(self, p: str) -> list[str]:
        if not self.exists(p):
            return []
        return sorted(st.getPath().getName() for st in self.fs.listStatus(self._Path(p)))

    def read_text(self, p: str) -> str:
        stream = self.fs.open(self._Path(p))
        try:
            jvm_bytes = self._IOUtils.toByteArray(stream)
        finally:
            stream.close()
        return bytes(jvm_bytes).decode("utf-8")


class S3AStore(HadoopStore):
    """A data dir on S3 for the Spark engine, through S3A (pipeline/s3a.py): every host of a
    cluster writes there, so its staging folders are in the bucket too (_staging/), and a
    publish's move is S3A's rename, a server-side copy of each object. The commit then
    registers them, checking first that each one listed after the copy is still there (as
    ObjectStore's publish does with its uploads). A failed S3A call is an OSError of one line
    naming the object and the endpoint (the JVM's error is many)."""

    def _s3a(self, what: str, call, *args):
        from py4j.protocol import Py4JJavaError

        try:
            return call(*args)
        except Py4JJavaError as exc:  # "org.apache.hadoop...SomeException: what", then its stack
            name, _, msg = str(exc.java_exception.toString()).strip().splitlines()[0].partition(": ")
            why = f"{name.rsplit('.', 1)[-1]}: {msg}" if msg else name.rsplit(".", 1)[-1]
            raise OSError(f"{what}: S3A at {s3.access(self.root).where()} failed ({why})") from None

    def exists(self, p: str) -> bool:
        return self._s3a(p, super().exists, p)

    def files(self, p: str) -> list[str]:
        return self._s3a(p, super().files, p)

    def mkdirs(self, p: str) -> None:
        self._s3a(p, super().mkdirs, p)

    def rename(self, src: str, dst: str) -> bool:
        return self._s3a(dst, super().rename, src, dst)

    def delete(self, p: str) -> None:
        self._s3a(p, super().delete, p)

    def children(self, p: str) -> list[str]:
        return self._s3a(p, super().children, p)

    def read_text(self, p: str) -> str:
        return self._s3a(p, super().read_text, p)

    def publish(self, staged: str, tables: list[str], month: str, replace: bool = True,
                retire: tuple[str, ...] = ()) -> list[str]:
        self._committed = False
        try:
            return super().publish(staged, tables, month, replace, retire)
        except OSError as exc:
            if self._committed:  # only the staging folder's removal failed: the next run's
                raise OSError(f"{exc}; the month was published, its staging folder stays for the next run "
                              "to remove") from None
            raise OSError(f"{exc}; nothing was published") from None

    def _catalog_root(self):
        return self.root

    def stager_folder(self, staged: str) -> str:
        """A local folder of this host, named like the staging folder in the bucket."""
        return str(s3.local_dir(self.root) / layout.STAGING / staged.rstrip("/").rsplit("/", 1)[-1])

    def take_staged(self, folder: str, staged: str, tables: list[str]) -> None:
        """Uploaded into the bucket's staging folder; the local folder removed."""
        try:
            bucket = s3.Bucket(self.root)
            for t in tables:
                bucket.upload(f"{folder}/{t}", f"{staged}/{t}")
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _register(self, root, month: str, out: dict[str, str], replace: bool, retire: tuple[str, ...]) -> None:
        moved = [f"{p}/{n}" for p in out.values() for n in self.files(p) if layout.is_data_file(n)]
        commit.publish(root, month, out, replace=replace, retire=retire, expect=moved)
        self._committed = True


class ObjectStore(Store):
    """A data dir on S3 (common/s3.py), for the DuckDB engine: its objects through pyarrow, its
    staging folders on local disk (DuckDB spills and writes there; a rename on S3 is a copy),
    one per data dir and host (common/s3.local_dir). A publish uploads each staged table to
    its publish folder, then registers them in one catalog commit (lake/commit.py): until
    then no reader sees them, and a publish killed before the commit leaves objects no
    catalog names (lake/upkeep.orphans)."""

    def __init__(self, root: str):
        self.root = str(root).rstrip("/")
        self.bucket = s3.Bucket(self.root)
        self.disk = LocalStore(s3.local_dir(self.root))  # the staging folders

    def staging_root(self) -> str:
        return self.disk.staging_root()

    def _on(self, p: str):
        """Where `p` is: the bucket (an s3:// URL) or the local disk (a staging folder)."""
        return self.bucket if s3.is_s3(p) else self.disk

    def exists(self, p: str) -> bool:
        return self._on(p).exists(p)

    def files(self, p: str) -> list[str]:
        return self._on(p).files(p)

    def mkdirs(self, p: str) -> None:
        if not s3.is_s3(p):  # S3 has no folders
            self.disk.mkdirs(p)

    def rename(self, src: str, dst: str) -> bool:
        raise OSError(f"{src}: objects are uploaded to S3, not renamed")

    def delete(self, p: str) -> None:
        self._on(p).delete(p)

    def children(self, p: str) -> list[str]:
        return self._on(p).children(p)

    def read_text(self, p: str) -> str:
        return self._on(p).read_text(p)

    def stat(self, p: str) -> tuple[int, int]:
        return self._on(p).stat(p)

    def publish(self, staged: str, tables: list[str], month: str, replace: bool = True,
                retire: tuple[str, ...] = ()) -> list[str]:
        sid = staged.rstrip("/").rsplit("/", 1)[-1]
        for t in tables:
            if not os.path.isdir(f"{staged}/{t}"):
                raise OSError(f"could not publish {t}: {staged}/{t} was not staged")
        out = {}
        try:
            uploaded = []
            for i, t in enumerate(tables):
                if i:
                    hooks.pause("publish")
                out[t] = self.month(t, month, sid)
                uploaded += self.bucket.upload(f"{staged}/{t}", out[t])
        except OSError as exc:
            raise OSError(f"{out.get(t, self.root)}: upload to {s3.access(self.root).where()} failed ({s3.why(exc)}); "
                          "nothing was published") from None
        commit.publish(self.root, month, out, replace=replace, retire=retire, expect=uploaded)
        hooks.pause("published")
        self.delete(staged)
        return list(out.values())


def store_for(root) -> Store:
    """The Store of a data dir DuckDB and pyarrow reach (layout.readable): S3's or local disk's."""
    return ObjectStore(root) if s3.is_s3(root) else LocalStore(root)
