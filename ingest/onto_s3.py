"""An ingest into an s3:// data dir (common/s3.py): the month's current routes and manifest
are mirrored into a local work folder, the ingest runs there as on any local data dir
(decoding, the merge into a new generation, the manifest), and what it changed is uploaded.

S3 has no rename, so the upload's order is what readers rely on: a new generation's route
files first, its snapshots.json last (common/routes.month_input reads the newest generation
that has one: a generation without it is one being uploaded), then each manifest file the
ingest changed, one PUT each (one file per collector: ingest/manifest.py).
A run killed before the last upload leaves the month as it was on S3 (and its decoded dumps
in the work folder, which the next run on this host merges). Generations older than the
previous one are deleted after the upload (no lock is shared between hosts: a compare that
began on the previous one still finds it). The work folder's month is removed after the
upload; the MRT cache stays there, as cache_policy says.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from bgp_congruency.common import console, hooks, layout, s3
from bgp_congruency.common import routes as stored
from bgp_congruency.common.config import Config
from bgp_congruency.common.errors import CongruencyError
from bgp_congruency.common.locks import month_lock

#: How long an ingest waits for another one of the month on this host to let go of the mirror.
MIRROR_WAIT_S = 6 * 3600.0


class S3IngestError(CongruencyError):
    """Reading or writing the bucket failed; the message names the object and the endpoint."""


def work_dir(root: str) -> Path:
    """The local folder an s3:// data dir's ingest works in (common/s3.mirror_dir)."""
    return s3.mirror_dir(root)


def _all_generations(bucket: s3.Bucket, folder: str) -> list[str]:
    return sorted(n for n in bucket.children(folder) if re.fullmatch(stored.GEN + r"\d{6}", n))


def _generations(bucket: s3.Bucket, folder: str) -> list[str]:
    """A collector's whole generations on S3, oldest first: those with their snapshots.json."""
    return [g for g in _all_generations(bucket, folder) if stored.SNAPSHOTS in bucket.children(f"{folder}/{g}")]


def _digest(p: Path) -> str:
    import hashlib

    return hashlib.sha256(p.read_bytes()).hexdigest()


def _mirror(bucket: s3.Bucket, root: str, local: Path, month: str) -> tuple[dict[str, str | None], dict[str, str]]:
    """Copy the month's manifest files and each collector's current generation from S3 into
    `local`; returns collector -> the generation copied and manifest file -> its sha256 (what
    the upload compares against)."""
    from pyarrow import fs

    here = {}
    mdir = layout.routes_dir(root, month)
    for name in bucket.children(mdir):
        if not name.startswith("collector="):
            continue
        gens = _generations(bucket, f"{mdir}/{name}")
        if not gens:
            continue
        src = f"{mdir}/{name}/{gens[-1]}"
        dst = Path(layout.routes_dir(local, month)) / name / gens[-1]
        dst.mkdir(parents=True, exist_ok=True)
        for n in bucket.children(src):
            fs.copy_files(f"{s3.path(src)}/{n}", str(dst / n), source_filesystem=bucket.fs,
                          destination_filesystem=fs.LocalFileSystem())
        here[name.removeprefix("collector=")] = gens[-1]
    manifests = {}
    for name in bucket.children(layout.manifest_dir(root, month)):
        dst = Path(layout.manifest_dir(local, month)) / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        fs.copy_files(s3.path(f"{layout.manifest_dir(root, month)}/{name}"), str(dst), source_filesystem=bucket.fs,
                      destination_filesystem=fs.LocalFileSystem())
        manifests[name] = _digest(dst)
    return here, manifests


def _upload(bucket: s3.Bucket, root: str, local: Path, month: str, before: dict[str, str | None],
            manifests: dict[str, str]) -> list[str]:
    """Upload each collector's new generation (files, then snapshots.json), then the manifest
    files this ingest changed (each collector's its own: another host's ingest of another
    collector may have written its own meanwhile, and stays); delete generations older than
    the previous one. Returns the generations uploaded."""
    from pyarrow import fs

    out = []
    for c, gen in sorted(stored.month_generations(local, month).items()):
        if gen.name == before.get(c):
            continue  # nothing merged into it
        dst = layout.routes_dir(root, month, c)
        bucket.delete(f"{dst}/{gen.name}")  # what a killed upload of this number left (never read: no snapshots.json)
        names = sorted(n for n in os.listdir(gen) if n != stored.SNAPSHOTS)
        for n in [*names, stored.SNAPSHOTS]:  # snapshots.json last: the generation is whole from it on
            if n == stored.SNAPSHOTS:
                hooks.pause("upload")
            fs.copy_files(str(gen / n), f"{s3.path(dst)}/{gen.name}/{n}", source_filesystem=fs.LocalFileSystem(),
                          destination_filesystem=bucket.fs)
        out.append(f"{dst}/{gen.name}")
        keep = set(_generations(bucket, dst)[-2:])  # the new one and the one a compare may have begun with
        for old in _all_generations(bucket, dst):
            if old not in keep and old < gen.name:
                bucket.delete(f"{dst}/{old}")
    here, there = Path(layout.manifest_dir(local, month)), layout.manifest_dir(root, month)
    now = {n: _digest(here / n) for n in sorted(os.listdir(here))} if here.is_dir() else {}
    for n, digest in now.items():
        if manifests.get(n) != digest:
            bucket.put_file(here / n, f"{there}/{n}")
    for n in manifests.keys() - now.keys():  # what the ingest removed (an earlier version's single file, split)
        bucket.delete(f"{there}/{n}")
    return out


def run(cfg: Config, month: str, ingest, **kw):
    """`ingest(cfg, month, **kw)` (ingest/run.run) on a local mirror of the s3:// data dir's
    month, then its changes uploaded; the Outcome, its manifest path the object's URL."""
    root = str(cfg.data_dir).rstrip("/")
    bucket = s3.Bucket(root)
    local = work_dir(root)
    # One ingest or compare of the month at a time on this host, and one user of its mirror
    # (the DAG's collector tasks hold the month shared: they queue here).
    with month_lock(root, month), month_lock(root, month, part="mirror", wait_s=MIRROR_WAIT_S):
        try:
            s3.check_bucket(root)
            for sub in ("routes", "manifest"):  # an earlier run's mirror: S3 is the truth
                shutil.rmtree(layout.month_dir(local, sub, month), ignore_errors=True)
            before, manifests = _mirror(bucket, root, local, month)
        except OSError as exc:
            raise S3IngestError(f"{root}: cannot read it at {s3.access(root).where()} ({s3.why(exc)})") from None
        out = ingest(cfg.with_overrides(data_dir=local), month, **kw)
        try:
            uploaded = _upload(bucket, root, local, month, before, manifests)
        except OSError as exc:
            raise S3IngestError(f"{root}: upload to {s3.access(root).where()} failed ({s3.why(exc)}); the month on "
                                "S3 is as it was: run the ingest again (it merges what this one decoded)") from None
    if uploaded:
        console.note(f"{root}: uploaded {', '.join(u.rsplit('/', 3)[-3] + '/' + u.rsplit('/', 1)[-1] for u in uploaded)}")
    for sub in ("routes", "manifest"):
        shutil.rmtree(layout.month_dir(local, sub, month), ignore_errors=True)
    out.manifest_path = layout.manifest_dir(root, month)
    return out
