"""Atomic month publishing through Hadoop's FileSystem API (local disk, HDFS, S3A alike).

A month's tables are staged completely, then each `<table>/month=M` is swapped in by
rename: readers see the old month or the new one, never a half-written one, and other
months are never touched.
"""
from __future__ import annotations

import uuid


class Store:
    def __init__(self, spark, root: str):
        jvm = spark._jvm
        self._Path = jvm.org.apache.hadoop.fs.Path
        self.root = root.rstrip("/")
        self.fs = self._Path(self.root).getFileSystem(spark._jsc.hadoopConfiguration())

    def path(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def exists(self, p: str) -> bool:
        return self.fs.exists(self._Path(p))

    def has_files(self, p: str, suffix: str = ".parquet") -> bool:
        if not self.exists(p):
            return False
        it = self.fs.listFiles(self._Path(p), True)
        while it.hasNext():
            name = it.next().getPath().getName()
            if name.endswith(suffix) and not name.startswith((".", "_")):
                return True
        return False

    def staging(self, month: str) -> str:
        return self.path("_staging", f"{month}-{uuid.uuid4().hex[:8]}")

    def delete(self, p: str) -> None:
        self.fs.delete(self._Path(p), True)

    def publish(self, staged: str, tables: list[str], month: str) -> list[str]:
        """Swap every staged table of `month` into place; returns the published paths."""
        out = []
        trash = self.path("_staging", f"replaced-{uuid.uuid4().hex[:8]}")
        self.fs.mkdirs(self._Path(trash))
        for t in tables:
            target = self.path(t, f"month={month}")
            self.fs.mkdirs(self._Path(self.path(t)))
            if self.exists(target) and not self.fs.rename(self._Path(target), self._Path(f"{trash}/{t}")):
                raise OSError(f"could not move aside {target}")
            if not self.fs.rename(self._Path(f"{staged}/{t}"), self._Path(target)):
                raise OSError(f"could not publish {target}")
            out.append(target)
        self.delete(trash)
        self.delete(staged)
        return out
