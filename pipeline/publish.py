"""Atomic month publishing: one Store interface, on the local disk or through Hadoop's FileSystem API.

A month's tables are staged completely under DATA_DIR/_staging/<month>-<id>/, then each
`<table>/month=M` is swapped in by rename: readers see the old month or the new one, never a
half-written one, and other months are never touched. `LocalStore` needs no JVM (the DuckDB
engine); `HadoopStore` serves every URL Spark can write (local, hdfs://, s3a://).

A run killed mid-way leaves its `_staging/<month>-<id>/`; `recover(month)`, called under the
month lock before the next attempt, deals with it: a folder marked `_PUBLISH` holds complete
tables whose swap had begun, and the swap is rolled forward (each staged table carries an
empty `_from-<id>` folder until the swap is over, so a table already swapped in is
recognised); any other folder is a half-computed month and is deleted.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import uuid
from pathlib import Path

from bgp_congruency.common import hooks, layout

PUBLISH_MARK = "_PUBLISH"


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

    def swap(self, staged: str, target: str, trash: str) -> None:
        """Put `staged` in place of `target` (which may exist); the old one goes to `trash`."""
        if self.exists(target) and not self.rename(target, trash):
            raise OSError(f"could not move aside {target}")
        if not self.rename(staged, target):
            raise OSError(f"could not publish {target}")

    def has_files(self, p: str, suffix: str = ".parquet") -> bool:
        return any(n.endswith(suffix) and not n.startswith((".", "_")) for n in self.files(p))

    def staging(self, month: str) -> str:
        return self.path(layout.STAGING, f"{month}-{uuid.uuid4().hex[:8]}")

    def children(self, p: str) -> list[str]:
        """Names of the entries directly under p (empty when p does not exist)."""
        raise NotImplementedError

    def publish(self, staged: str, tables: list[str], month: str) -> list[str]:
        """Swap every staged table of `month` into place; returns the published paths."""
        sid = staged.rstrip("/").rsplit("/", 1)[-1]
        for t in tables:
            if not self.exists(f"{staged}/{t}"):
                raise OSError(f"could not publish {t}: {staged}/{t} was not staged")
            self.mkdirs(f"{staged}/{t}/_from-{sid}")
        self.mkdirs(f"{staged}/{PUBLISH_MARK}")
        return self._swap(staged, tables, month)

    def _swap(self, staged: str, tables: list[str], month: str) -> list[str]:
        """Every table's swap under common.locks.publishing: readers that hold `reading`
        (query, report, advise, export) see all of the month's tables old, or all new."""
        from bgp_congruency.common.locks import publishing

        with publishing(self.root):
            return self._swap_all(staged, tables, month)

    def _swap_all(self, staged: str, tables: list[str], month: str) -> list[str]:
        sid = staged.rstrip("/").rsplit("/", 1)[-1]
        out = []
        trash = f"{staged}/_replaced"
        self.mkdirs(trash)
        for i, t in enumerate(tables):
            target = self.path(t, layout.month_part(month))
            out.append(target)
            if self.exists(f"{target}/_from-{sid}"):  # swapped in before a kill
                continue
            if i:
                hooks.pause("publish")
            self.mkdirs(self.path(t))
            self.delete(f"{trash}/{t}")
            self.swap(f"{staged}/{t}", target, f"{trash}/{t}")
        self.delete(staged)  # done: from here on nothing needs the markers
        for target in out:
            self.delete(f"{target}/_from-{sid}")
        return out

    def recover(self, month: str) -> list[str]:
        """Finish or remove what killed runs of `month` left in _staging (see the module
        docstring); returns the staging folders dealt with. Hold the month lock."""
        done = []
        for name in self.children(self.path(layout.STAGING)):
            if not name.startswith(f"{month}-"):
                continue
            staged = self.path(layout.STAGING, name)
            if self.exists(f"{staged}/{PUBLISH_MARK}"):
                self._swap(staged, [t for t in self.children(staged) if not t.startswith("_")], month)
            else:
                self.delete(staged)
            done.append(staged)
        return done


class LocalStore(Store):
    """A local data dir with plain system calls (no JVM). Where the kernel offers it, a
    month is replaced by one atomic exchange of the two folders (renameat2 RENAME_EXCHANGE)."""

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

    def swap(self, staged: str, target: str, trash: str) -> None:
        if os.path.isdir(target) and _exchange(staged, target):
            os.rename(staged, trash)  # `staged` now holds the old month
            return
        super().swap(staged, target, trash)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: str, b: str) -> bool:
    """Atomically exchange two paths (Linux renameat2); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    return fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0


class HadoopStore(Store):
    """Through the JVM's Hadoop FileSystem of a SparkSession: local disk, HDFS, S3A alike."""

    def __init__(self, spark, root: str):
        jvm = spark._jvm
        self._Path = jvm.org.apache.hadoop.fs.Path
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
