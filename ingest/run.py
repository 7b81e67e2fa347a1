"""`congruency ingest`: discover, download, check and decode a month's RIB snapshots, then
merge them into the month's routes (ingest/routes.py).

Each slot is independent: a failure is recorded in the manifest and on stderr, and the
other slots go on. Each dump is decoded into a file of its own (in parallel), then each
collector's new dumps are merged into its routes; the manifest records a slot once its dump
is in the routes. A re-run skips slots already merged from the same dump, and merges the
dumps a killed run decoded without decoding them again.
"""
from __future__ import annotations

import json
import os
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow.parquet as pq

from bgp_congruency.common import atomic, console, duck, hooks, layout, s3
from bgp_congruency.common import routes as stored
from bgp_congruency.common.config import Config, parse_bytes
from bgp_congruency.common.errors import CongruencyError
from bgp_congruency.ingest import (
    backends,
    bgpstream_csv,
    catalogue,
    discovery,
    download,
    framing,
    manifest,
    onto_s3,
    routes,
)
from bgp_congruency.ingest.discovery import Slot
from bgp_congruency.ingest.normalize import to_entries
from bgp_congruency.ingest.writer import SnapshotWriter, decoded_path, decoded_row


class IngestError(CongruencyError):
    """A snapshot could not be ingested; the message is one line naming the file."""


@dataclass
class Outcome:
    rows: list[manifest.Row]
    skipped_done: int
    manifest_path: Path
    keys: set[str]  # every slot of the selection (the policy reads the manifest's rows of these)

    @property
    def failed(self) -> list[manifest.Row]:
        return [r for r in self.rows if r.status not in ("ok", "inactive")]


def _inactive(col: catalogue.Collector, month: str, t: datetime) -> Slot:
    life = f"{col.active_from or '?'}..{col.active_until or 'now'}"
    return Slot(collector=col.name, project=col.project.name, month=month, target=t, status="inactive",
                error=f"{col.name} not active at {t:%Y-%m-%d %H:%M} (active {life}; {col.source or 'catalogue'})")


def slots_of(cfg: Config, month: str) -> list[Slot]:
    """One slot per (collector of the selection, target time): those outside the collector's
    lifetime are `inactive` without asking the archive; the others are discovered. Where no
    source gives a collector's start, a month with no folder in the archive is `inactive`."""
    targets = discovery.window(month, cfg.days, cfg.times)
    cat = catalogue.load(cfg.catalogue)
    listing = bgpstream_csv.read(cfg.bgpstream_csv) if cfg.bgpstream_csv else None
    tolerance = timedelta(minutes=cfg.tolerance_minutes)
    slots: list[Slot] = []
    for name in catalogue.expand(cfg.collectors, cfg.catalogue):
        col = cat[name]
        states = {t: col.state_at(t) for t in targets}
        live = [t for t in targets if states[t] != "inactive"]
        if listing is not None:  # a lab's BGPStream index instead of the archives
            base = dict(collector=col.name, project=col.project.name, month=month)
            found = {s.target: s for s in discovery.match(
                live, bgpstream_csv.dumps(listing, name, month), tolerance, base,
                lambda t: f"{cfg.bgpstream_csv}: no {name} RIB listed at {t:%Y-%m-%d %H:%M}")}
        else:
            found = {s.target: s for s in discovery.discover(
                col, month, live, root=archive_root(cfg, col),
                tolerance=tolerance, timeout=cfg.timeout_s,
            )} if live else {}
        for t in targets:
            s = found.get(t) or _inactive(col, month, t)
            if states[t] == "unknown" and s.status == "missing" and s.url is None and "no such folder" in (s.error or ""):
                s = Slot(collector=col.name, project=col.project.name, month=month, target=t, status="inactive",
                         error=f"{col.name}: no {month} folder in the archive, and no source gives its start "
                               f"({col.source or 'catalogue'})")
            slots.append(s)
    return slots


def archive_root(cfg: Config, col: catalogue.Collector) -> str | None:
    """The archive root the collector's dumps are listed under (config archive_root, else
    archive_roots of its project; None: the project's public archive), canonical."""
    return canonical_root(cfg.archive_root or cfg.archive_roots.get(col.project.name))


def canonical_root(root: str | None) -> str | None:
    """An archive root as slots name their files: a URL as given; a local mirror absolute,
    symlinks resolved, so the manifest records one name for a file however the root was
    spelled (from another folder, through a link) and a re-run finds it done."""
    if root is None or download.is_remote(root):
        return root
    return str(Path(str(root).removeprefix("file://")).resolve())


def decode_file(local: Path, slot: Slot, backend, writer: SnapshotWriter, *, batch_rows: int,
                source: str, on_rows=None, threads: int = 0,
                grouped: bool = False) -> tuple[framing.FrameStats, dict[int, int]]:
    """Decode `local` into `writer`, every record checked in the same read of the file.

    A SELF_CHECKING backend (native) frames and checks the file in its own single pass; for
    the others our framing pass reads the file in a thread beside the decoder.
    `threads`: cores the native decoder may use for bzip2 blocks (0: all); `grouped`: the
    native decoder's batches grouped by VP bucket (ingest/writer.py)."""
    if backend.SELF_CHECKING:
        batches = backend.decode_checked(local, batch_rows, collector=slot.collector, project=slot.project,
                                         snapshot_time=slot.dump_time, source_file=source, threads=threads,
                                         grouped=grouped)
        result = {}
        checker = None
    else:
        batches, result, checker = _framed(local, slot, backend, batch_rows, source)
    decoded = {4: 0, 6: 0}
    try:
        stats = yield_into(batches, writer, decoded, on_rows)
    except framing.FramingError as exc:
        raise IngestError(f"{source}: {exc}") from None
    except Exception:
        if checker is None:
            raise
        checker.join()  # the framing pass usually knows why a decoder failed: say that instead
        if "error" in result:
            raise IngestError(f"{source}: {result['error']}") from None
        if "stats" in result and result["stats"].total_entries == 0:
            raise IngestError(_not_a_rib(source, result["stats"])) from None
        raise
    if checker is not None:
        checker.join()
        if "error" in result:
            raise IngestError(f"{source}: {result['error']}")
        stats = result["stats"]
        why = backend.refuses(stats)
        if why:
            raise IngestError(f"{source}: backend {backend.NAME}: {why}")
    if stats.total_entries == 0:
        raise IngestError(_not_a_rib(source, stats))
    for afi in (4, 6):
        if decoded[afi] != stats.entries.get(afi, 0):
            raise IngestError(
                f"{source}: backend {backend.NAME} decoded {decoded[afi]} IPv{afi} entries "
                f"but the file's records announce {stats.entries.get(afi, 0)}"
            )
    return stats, decoded


def _not_a_rib(source: str, stats: framing.FrameStats) -> str:
    what = ", ".join(f"{n:,} {k.replace('_', ' ')}" for k, n in sorted(stats.skipped.items())) or "none"
    return f"{source}: no RIB entries (not a RIB dump? its records: {what})"


def _framed(local: Path, slot: Slot, backend, batch_rows: int, source: str):
    """A text backend's batches, normalised, with framing.scan running in a thread beside it."""
    result: dict = {}

    def check():
        try:
            result["stats"] = framing.scan(local)
        except BaseException as exc:  # reported by decode_file, after the decoder stops
            result["error"] = exc

    checker = threading.Thread(target=check, daemon=True)
    checker.start()
    batches = (to_entries(raw, collector=slot.collector, project=slot.project,
                          snapshot_time=slot.dump_time, source_file=source)
               for raw in backend.decode(local, batch_rows))
    return batches, result, checker


def yield_into(batches, writer: SnapshotWriter, decoded: dict[int, int], on_rows=None):
    """Write every batch; count entries per AFI; return the generator's return value."""
    it = iter(batches)
    while True:
        try:
            batch = next(it)
        except StopIteration as stop:
            return stop.value
        afi = batch.column("afi").to_numpy(zero_copy_only=False)
        n4 = int((afi == 4).sum())
        decoded[4] += n4
        decoded[6] += len(afi) - n4
        console.check_stop()
        writer.write(batch)
        if on_rows:
            on_rows(batch.num_rows)


def ingest_slot(slot: Slot, cfg: Config, backend, progress=None, feed: routes.Feed | None = None) -> manifest.Row:
    """Fetch, check and decode one snapshot into its file; its manifest row says how it went.

    An unexpected error (`_unexpected`: not a download, framing or decode error of the file,
    nor the machine's: an OSError such as a full disk fails the snapshot at once) is logged
    with where it was raised, and the snapshot is decoded once more from the start: its first
    attempt's file is dropped, a remote file's complete download is kept and read again (not
    downloaded again), and the rows that attempt fed the collector's merger are never
    counted (ingest/routes.Feed: only a whole dump's are). A second such error fails the
    snapshot (and a download its decode did not pass is removed: a later run fetches it
    afresh). (A clean clone's CI once failed a
    month on a RecursionError in a decode of the real route-views6 sample, which 183 repeats
    of that ingest, here and under load, never raised again; where it was raised was not
    recorded then.)"""
    started = time.monotonic()
    row = _attempt(slot, cfg, backend, progress, feed, started, again=True)
    if row.status == "crashed":
        console.warning(f"{row.error} (an unexpected error, not the file's: decoding it once more)")
        console.check_stop()  # Ctrl-C meanwhile: no second attempt
        row = _attempt(slot, cfg, backend, progress, feed, started, again=False)
        if row.status == "crashed":
            row.status = "failed"
    return row


def _unexpected(exc: BaseException) -> bool:
    """An error of neither the file (its download, framing or decode) nor the machine (an
    OSError: the disk's or the system's, which would fail the same way again): ingest_slot
    decodes the snapshot once more."""
    return not isinstance(exc, (download.DownloadError, IngestError, framing.FramingError, OSError))


def _attempt(slot: Slot, cfg: Config, backend, progress, feed: routes.Feed | None, started: float,
             again: bool) -> manifest.Row:
    """One fetch and decode of the snapshot; `again`: an unexpected error will be followed by
    another attempt, so a remote file's complete download is kept for it."""
    row = manifest.Row(month=slot.month, slot=slot.key, collector=slot.collector,
                       project=slot.project, target_time=slot.target, status="missing",
                       dump_time=slot.dump_time, substituted=slot.substituted, url=slot.url,
                       backend=backend.NAME, ingested_at=datetime.now(timezone.utc))
    if slot.error:
        row.status, row.error = slot.status, slot.error
        return row
    task = None
    writer = None
    try:
        final = decoded_path(cfg.data_dir, slot.month, slot.collector, slot.file_name)
        share = feed.start() if feed is not None else None
        writer = SnapshotWriter(final, share)
        # Spare cores (more than the snapshots decoded at once) decompress bzip2 blocks in
        # parallel; when every core already has a snapshot, splitting blocks only costs CPU.
        threads = max(1, (os.cpu_count() or 1) // max(1, cfg.concurrency))
        done: dict = {}

        def decode(path: Path) -> None:
            if path.stat().st_size == 0:
                raise IngestError(f"{slot.url}: the file is empty (0 bytes; a failed download?)")
            done["result"] = decode_file(path, slot, backend, writer, batch_rows=cfg.batch_rows,
                                         source=slot.url, threads=threads,
                                         grouped=share is not None and share.grouped(path.stat().st_size, slot.project))

        if download.is_remote(slot.url):
            dest = cfg.cache_dir / slot.collector / slot.file_name
            if progress is not None:
                task = progress.add_task(f"{slot.collector} {slot.file_name}", total=None)
            # The decode pass is the download's stream check: it reads the .part once, and
            # only a file it accepted gets the final name (no second decompression).
            fetched = download.fetch(
                slot.url, dest, timeout=cfg.timeout_s, retries=cfg.retries, backoff=cfg.backoff_s,
                on_bytes=(lambda n: progress.update(task, completed=n)) if task is not None else None,
                on_total=(lambda t: progress.update(task, total=t)) if task is not None else None,
                check=decode, keep=_unexpected if again else None,
            )
            local = fetched.path
        else:
            local = Path(slot.url)  # a local mirror is read in place; the decode pass checks it
            decode(local)
        row.local_path = str(local)
        stats, decoded = done["result"]
        if stats.first_timestamp is not None:
            row.dump_time = datetime.fromtimestamp(stats.first_timestamp, timezone.utc)
        row.records, row.sha256, row.bytes = stats.records, stats.sha256, stats.file_bytes
        row.entries_v4, row.entries_v6 = decoded[4], decoded[6]
        row.skipped = dict(stats.skipped)
        row.address_span = json.dumps(writer.span)
        row.status = "ok"
        row.duration_s = round(time.monotonic() - started, 3)
        # relative to the data dir: still right when it is spelled, mounted or moved otherwise
        row.output = os.path.relpath(Path(final).resolve(), Path(str(cfg.data_dir)).resolve())
        writer.publish(row.to_dict())  # the file carries its row: a run killed before the merge loses nothing
        writer = None
    except download.DownloadError as exc:
        row.status, row.error = "failed", str(exc)
    except (IngestError, framing.FramingError) as exc:
        row.status, row.error = "failed", str(exc)
    except Exception as exc:  # a backend crash must not stop the other snapshots
        row.status, row.error = "failed", f"{slot.url}: {type(exc).__name__}: {exc}".splitlines()[0]
        if _unexpected(exc):
            row.status, row.error = "crashed", f"{row.error} at {_where(exc)}"
    finally:
        if writer is not None:
            writer.abort()
        if task is not None:
            progress.remove_task(task)
    row.duration_s = round(time.monotonic() - started, 3)
    return row


def _where(exc: BaseException) -> str:
    """Where an exception was raised: its innermost frames, one line (file:line in function)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return " <- ".join(f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in reversed(frames[-4:])) or "?"


def run(cfg: Config, month: str, progress=None, on_row=None) -> Outcome:
    if s3.is_s3(cfg.data_dir):  # through a local mirror of the month (ingest/onto_s3.py)
        return onto_s3.run(cfg, month, run, progress=progress, on_row=on_row)
    backend = backends.get(cfg.backend)
    root = Path(cfg.data_dir)
    # What a killed ingest left (temps of writers and merges that are gone); a live one's stay.
    staged = Path(layout.staging_dir(root)) / f"ingest-{month}"
    for d in (staged, Path(layout.legacy_entries_dir(root, month))):
        atomic.clean_dead_under(d)
    slots = slots_of(cfg, month)
    previous = manifest.read(root, month)
    have = {c: {s.source_file for s in stored.snapshots(g)} for c, g in stored.month_generations(root, month).items()}
    # The selection's collectors: a run merges and deletes only theirs (the DAG runs a task per
    # collector at once: another's files are its own, decoded or merged at this moment).
    mine = {s.collector for s in slots}
    waiting = _decoded(root, month, mine)  # dumps a killed run decoded and did not merge: slot -> its row
    todo, done, recovered = [], 0, []
    for s in slots:
        prev = previous.get(s.key)
        if prev and prev["status"] == "ok" and prev["url"] == s.url and manifest.merged(root, prev, have):
            done += 1
            continue
        if s.key in waiting and waiting[s.key]["url"] == s.url:
            recovered.append(_row(waiting[s.key]))
            done += 1
            continue
        if prev and prev["status"] == "inactive" and s.status == "inactive" and prev["error"] == s.error:
            continue
        todo.append(s)
    overall = progress.add_task(f"ingest {month}", total=len(todo)) if progress else None
    rows: list[manifest.Row] = []
    feeds = route_feeds(cfg, todo)
    # Collectors in turn (their first dumps, then their second...): the decoders at work at
    # once most often feed different collectors' mergers, each behind a lock of its own.
    count: dict[str, int] = {}
    nth = []
    for s in todo:
        nth.append(count.get(s.collector, 0))
        count[s.collector] = nth[-1] + 1
    todo = [s for _, s in sorted(zip(nth, todo), key=lambda p: p[0])]

    def work(s: Slot) -> manifest.Row:
        hooks.pause("ingest")
        console.check_stop()
        r = ingest_slot(s, cfg, backend, progress, feeds.get(s.collector))
        if progress is not None:
            progress.advance(overall)
        if on_row:
            on_row(r)
        return r

    console.stopping.clear()
    with ThreadPoolExecutor(max_workers=max(1, cfg.concurrency)) as pool:
        futures = [pool.submit(work, s) for s in todo]
        try:
            rows = [f.result() for f in futures]
        except KeyboardInterrupt:  # the snapshots in flight stop at their next batch; the
            console.stopping.set()  # decoded ones stay, each with its row: the next run merges them
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    rows += recovered
    merged_rows = merge_month(cfg, month, rows, progress, mine, feeds)
    feeds.clear()
    hooks.pause("merged")
    # Failures of slots the selection no longer has (other days, times) are dropped: they
    # would be listed by `status` and the manifest view forever. Their collectors only: the DAG's
    # per-collector tasks leave each other's rows alone; published (ok) rows stay.
    keys = {s.key for s in slots}
    stale = {k for k, r in previous.items() if r["status"] != "ok" and r["collector"] in mine and k not in keys}
    mpath = manifest.merge_write(root, month, merged_rows, drop=stale) if merged_rows or stale or not previous else \
        manifest.path(root, month)
    _drop_merged(root, month, mine)
    if cfg.cache_policy == "delete":
        drop_cached(cfg, rows)
    release_memory()
    return Outcome(rows=[r for r in rows if r not in recovered], skipped_done=done, manifest_path=mpath, keys=keys)


def route_feeds(cfg: Config, todo: list[Slot]) -> dict[str, routes.Feed]:
    """A route merger per collector with dumps to decode, fed as they are decoded (ingest/
    routes.Feed), together in half the memory limit (the decoders hold the rest)."""
    dumps: dict[str, int] = {}
    for s in todo:
        if not s.error:
            dumps[s.collector] = dumps.get(s.collector, 0) + 1
    if dumps:
        try:
            routes.native()
        except routes.RoutesError as exc:  # said before any dump is decoded
            raise IngestError(str(exc)) from None
    cap = duck.memory_limit(cfg.duckdb_memory_limit)
    budget = parse_bytes(cap) // 2 // max(1, len(dumps)) if cap else 1 << 62
    return {c: routes.Feed(n, budget) for c, n in dumps.items()}


def release_memory() -> None:
    """Hand the memory the decoders and mergers freed back to the system: Arrow's pool and
    the C heap keep it otherwise, and `congruency run` compares in the same process next.
    Reference cycles are collected first: what they hold is only freed at the collector's
    next pass, which a long compare may not reach (on the 250M-entry generated month at 4GB,
    430 MiB of the heap came back only after a collection: 787 -> 358 MiB RSS at this call)."""
    import ctypes
    import gc

    import pyarrow as pa

    gc.collect()
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: its allocator keeps what it keeps
        pass


def merge_workers(cfg: Config, collectors: int) -> int:
    """Collectors merged side by side (the merger is one core each)."""
    return max(1, min(cfg.concurrency, collectors))


def _row(d: dict) -> manifest.Row:
    """A manifest row from its dict (a decoded file's footer)."""
    fields = {f for f in manifest.Row.__dataclass_fields__}
    d = {k: v for k, v in d.items() if k in fields}
    for k in ("target_time", "dump_time", "ingested_at"):
        if isinstance(d.get(k), str):
            d[k] = datetime.fromisoformat(d[k])
    if isinstance(d.get("skipped"), list):
        d["skipped"] = dict(d["skipped"])
    return manifest.Row(**d)


def _collector_dirs(base: Path, collectors: set[str] | None) -> list[Path]:
    """The `collector=NAME` folders under `base` of `collectors` (None: every one). A
    collector's task works in its own folders only: the DAG's tasks of the other collectors
    decode, merge and delete theirs at the same time."""
    return [d for d in sorted(Path(base).glob("collector=*"))
            if collectors is None or d.name.removeprefix("collector=") in collectors]


def _staged(root: Path, month: str, collectors: set[str] | None) -> list[Path]:
    """The month's staging folder of each collector of `collectors` (None: every one)."""
    return _collector_dirs(Path(layout.staging_dir(root), f"ingest-{month}"), collectors)


def _decoded(root: Path, month: str, collectors: set[str] | None = None) -> dict[str, dict]:
    """slot -> the manifest row of each dump decoded and not yet merged (its file's footer)."""
    out = {}
    for f in (f for d in _staged(root, month, collectors) for f in sorted(d.glob("[!._]*.parquet"))):
        row = decoded_row(f)
        if row is not None:
            out[row["slot"]] = row
    return out


def merge_month(cfg: Config, month: str, rows: list[manifest.Row], progress=None,
                collectors: set[str] | None = None, feeds: dict[str, routes.Feed] | None = None) -> list[manifest.Row]:
    """Merge each collector's decoded dumps (this run's, a killed run's, and those an earlier
    version stored whole under rib_entries/) into its routes, for `collectors` (None: every
    one); the rows, merged ones pointing at the routes. Failed rows pass through."""
    root = Path(cfg.data_dir)
    legacy = Path(layout.legacy_entries_dir(root, month))
    by_col: dict[str, list[Path]] = {}
    for d in _staged(root, month, collectors):
        by_col.setdefault(d.name.removeprefix("collector="), []).extend(sorted(d.glob("[!._]*.parquet")))
    for d in _collector_dirs(legacy, collectors):
        by_col.setdefault(d.name.removeprefix("collector="), []).extend(sorted(d.glob("[!._]*.parquet")))
    by_col = {c: fs for c, fs in by_col.items() if fs}
    task = progress.add_task(f"routes {month}", total=len(by_col)) if progress is not None and by_col else None
    workers = merge_workers(cfg, len(by_col))  # each in its share of memory

    def one(c: str) -> None:
        try:
            routes.merge(cfg, month, c, by_col[c], share=workers, feed=(feeds or {}).get(c))
        except routes.RoutesError as exc:
            raise IngestError(str(exc)) from None
        if task is not None:
            progress.advance(task)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for f in [pool.submit(one, c) for c in sorted(by_col, key=lambda c: -sum(p.stat().st_size for p in by_col[c]))]:
            f.result()
    have = {c: {s.source_file for s in stored.snapshots(g)} for c, g in stored.month_generations(root, month).items()}
    out = []
    for r in rows:
        if r.status == "ok" and r.url in have.get(r.collector, ()):
            r.output = manifest.routes_output(root, month, r.collector)
        out.append(r)
    # an earlier version's rows of dumps now merged from rib_entries/: point them at the routes
    seen = {r.slot for r in out}
    for k, r in manifest.read(root, month).items():
        if k not in seen and r["status"] == "ok" and r.get("output", "").startswith("rib_entries") \
                and r["url"] in have.get(r["collector"], ()):
            out.append(_row({**r, "output": manifest.routes_output(root, month, r["collector"])}))
    return out


def merge_pending(cfg: Config, month: str) -> list[manifest.Row]:
    """Merge what waits (dumps decoded and not merged, and those an earlier version stored
    whole under rib_entries/) into the month's routes, record it in the manifest and delete
    the merged files: what `run` does after decoding, for a month with nothing to download."""
    rows = merge_month(cfg, month, [_row(r) for r in _decoded(Path(cfg.data_dir), month).values()])
    if rows:
        manifest.merge_write(Path(cfg.data_dir), month, rows)
    _drop_merged(Path(cfg.data_dir), month)
    return rows


def _drop_merged(root: Path, month: str, collectors: set[str] | None = None) -> None:
    """Delete the decoded files whose dump is in the routes (the manifest says so by now), of
    `collectors` (None: every one)."""
    have = {c: {s.source_file for s in stored.snapshots(g)} for c, g in stored.month_generations(root, month).items()}
    legacy = Path(layout.legacy_entries_dir(root, month))
    for d in [*_staged(root, month, collectors), *_collector_dirs(legacy, collectors)]:
        c = d.name.removeprefix("collector=")
        for f in d.glob("[!._]*.parquet"):
            one = routes.one_snapshot(f)  # a dump's file: off its footer, not its rows (a column of 12M)
            files = {one.source_file} if one is not None else \
                set(pq.read_table(f, columns=["source_file"]).column(0).unique().to_pylist())
            if files and files <= have.get(c, set()):
                f.unlink()
        try:
            d.rmdir()
        except OSError:
            pass
    for d in (legacy, legacy.parent, Path(layout.staging_dir(root), f"ingest-{month}")):
        try:
            d.rmdir()  # when empty: an earlier version's rib_entries/ goes with its last month
        except OSError:
            pass


def drop_cached(cfg: Config, rows: list[manifest.Row]) -> None:
    """cache_policy "delete": remove each downloaded MRT file once its Parquet is published
    and the manifest (written before this) holds its sha256. Local mirrors are never touched."""
    cache = Path(cfg.cache_dir).resolve()
    for r in rows:
        if r.status == "ok" and r.sha256 and r.local_path:
            p = Path(r.local_path).resolve()
            if cache in p.parents:
                p.unlink(missing_ok=True)
