"""The catalog's upkeep: expiring old snapshots and deleting the files none of the rest needs
(`vacuum`), the publish folders no snapshot registered (`orphans`), registering tables
published before the catalog (`migrate`), and making a moved data dir's catalog its own
(`relocate`).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb

from bgp_congruency.common import atomic, layout, s3
from bgp_congruency.common.duck import quote
from bgp_congruency.common.errors import BadInput
from bgp_congruency.common.locks import LockBusy, month_lock
from bgp_congruency.lake import commit
from bgp_congruency.lake.attach import (
    ALIAS,
    LakeError,
    NoCatalog,
    catalog_name,
    exists,
    legacy_months,
    location,
    no_catalog,
    opened,
    tables,
    why,
)
from bgp_congruency.lake.published import table_months

#: The catalog's tables that hold file paths (DuckLake's spec): absolute where a publish
#: registered a file outside its table's folder, or before files were registered relative
#: to the data dir (lake/commit.py).
_PATH_TABLES = ("ducklake_data_file", "ducklake_delete_file", "ducklake_files_scheduled_for_deletion")


def relocate(root) -> dict:
    """Make a copied or moved data dir's catalog its own: its data path, and every absolute
    path under the old data dir, rewritten to this one, and the paths an earlier version
    registered as a relative data dir was spelled (lake/commit.misspelled) made relative to
    it, in one transaction of the catalog's database. A reader needs none of it but the
    repair (lake/attach.py); a writer does. Run it with no other process using the catalog."""
    root = Path(root).resolve()
    if not exists(root):
        raise NoCatalog(no_catalog(root))
    kind = location(root).split(":", 1)[0]
    new = str(root) + "/"
    atomic.require_writable(root, "lake relocate")
    con = None
    try:
        con = commit.meta_connection(root)
        got = con.execute("SELECT value FROM meta.ducklake_metadata WHERE key = 'data_path' AND scope IS NULL").fetchall()
        if not got:
            raise LakeError(f"{catalog_name(root)}: no data_path in the catalog (not a DuckLake catalog?)")
        old = got[0][0]
        if old != new and kind != "sqlite" and Path(old).is_dir():
            raise LakeError(f"{catalog_name(root)}: still the catalog of {old.rstrip('/')}, which exists: a copy needs a "
                            "catalog of its own (set catalog to another database); relocate only a moved data dir")
        con.execute("BEGIN")
        n = 0
        if old != new:
            con.execute("UPDATE meta.ducklake_metadata SET value = ? WHERE key = 'data_path' AND scope IS NULL", [new])
            for t in _PATH_TABLES:
                n += con.execute(f"SELECT count(*) FROM meta.{t} WHERE starts_with(path, ?)", [old]).fetchone()[0]
                con.execute(f"UPDATE meta.{t} SET path = ? || path[{len(old) + 1}:] WHERE starts_with(path, ?)",
                            [new, old])
        repaired = commit.repair(con, "meta")
        con.execute("COMMIT")
    except duckdb.Error as exc:
        raise LakeError(f"{catalog_name(root)}: relocating failed: {why(exc)}") from None
    finally:
        if con is not None:
            con.close()
    return {"from": old, "to": new, "paths": n, "repaired": repaired}


def registered_folders(root, objects: dict[str, float] | None = None) -> set[str]:
    """Every folder holding a file some snapshot registered that is still there (live, or
    let go and not yet deleted by vacuum), and every folder the ledger names as a table's
    current publish (a table without rows has no registered file, and its folder is no orphan).
    Folders as strings: paths under a local data dir, URLs under an s3:// one, whose objects
    `objects` lists (`_listing`; listed here when not given)."""
    base = layout.home(root)
    meta = f"__ducklake_metadata_{ALIAS}"
    try:
        with opened(root) as con:  # the catalog's own tables (DuckLake's spec): every snapshot's files
            data_path = con.execute(f"SELECT value FROM {meta}.ducklake_metadata WHERE key = 'data_path' "
                                    "AND scope IS NULL").fetchone()[0]
            tables_ = con.execute(
                f"SELECT t.table_id, t.path, t.path_is_relative, s.path, s.path_is_relative FROM {meta}.ducklake_table t "
                f"JOIN {meta}.ducklake_schema s USING (schema_id)").fetchall()
            # A data file's relative path is its table's; one scheduled for deletion, the data path's.
            rows = con.execute(
                f"SELECT table_id, path, path_is_relative FROM {meta}.ducklake_data_file UNION ALL "
                f"SELECT NULL, path, path_is_relative FROM {meta}.ducklake_files_scheduled_for_deletion"
            ).fetchall()
            ledger = {f"{base}/{r[0]}" for r in con.execute(f"SELECT folder FROM {ALIAS}.{commit.LEDGER}").fetchall()} \
                if commit.has_ledger(con) else set()
    except NoCatalog:
        return set()
    except duckdb.Error as exc:
        raise LakeError(f"{catalog_name(root)}: {why(exc)}") from None
    # Paths as this data dir has them: relative ones under it (not under the data path the
    # catalog records, a copy's original), absolute ones under the recorded path moved here.
    here = base + "/"
    homes = {t: ((here + sp if sr else sp) + tp if tr else tp) for t, tp, tr, sp, sr in tables_}
    full = [(homes.get(t, here) if t is not None else here) + p if rel else
            here + p[len(data_path):] if p.startswith(data_path) else p for t, p, rel in rows]
    # However a path is spelled (an earlier version's, relative to the folder it was published
    # from: lake/commit.misspelled), the publish folder it names is `<table>/month=M/<id>` of
    # this data dir: that folder is kept. A file scheduled for deletion that vacuum already
    # deleted protects no folder.
    if s3.is_s3(base) and objects is None:
        objects = _listing(base)
    there = objects.__contains__ if s3.is_s3(base) else os.path.exists
    out = set()
    for f in full:
        d, name = f.rsplit("/", 1)
        parts = d.split("/")
        mine = here + "/".join(parts[-3:]) if len(parts) >= 3 and parts[-2].startswith(layout.MONTH) else d
        if there(f"{mine}/{name}") or there(f):
            out.add(mine)
            out.add(d)
    return out | ledger


def _listing(root: str) -> dict[str, float]:
    """URL -> modification time (s) of every object under an s3:// data dir's published tables."""
    from pyarrow import fs

    bucket = s3.Bucket(root)
    out = {}
    for name in tables():
        sel = fs.FileSelector(s3.path(layout.table_dir(root, name)), recursive=True, allow_not_found=True)
        out.update({s3.SCHEME + i.path: (i.mtime_ns or 0) / 1e9 for i in bucket.fs.get_file_info(sel)
                    if i.type == fs.FileType.File})
    return out


def _s3_folders(root: str, objects: dict[str, float], month: str | None, older_than_s: float | None) -> list[str]:
    """The publish folders (`<table>/month=M/<id>`) among `objects` (of `month` when given),
    with every object in them older than `older_than_s` seconds when given."""
    import time

    newest: dict[str, float] = {}
    for url, t in objects.items():
        d, _name = url.rsplit("/", 1)
        parts = d.removeprefix(root + "/").split("/")
        if len(parts) != 3 or not parts[1].startswith(layout.MONTH) or month and parts[1] != layout.month_part(month):
            continue
        newest[d] = max(newest.get(d, 0.0), t)
    now = time.time()
    return sorted(d for d, t in newest.items() if older_than_s is None or now - t >= older_than_s)


def migrate(root) -> dict[str, list[str]]:
    """Register the tables a data dir published before the catalog, in place (no copy): each
    month's tables in one transaction, months the catalog already has skipped. Returns
    month -> tables registered."""
    root = Path(root).resolve()
    have = set()
    if exists(root):
        try:
            with opened(root) as con:
                have = set(table_months(con))
        except NoCatalog:
            pass
    done = {}
    for month, names in legacy_months(root).items():
        if month in have:
            continue
        commit.publish(root, month, {t: str(layout.month_dir(root, t, month)) for t in names},
                       message=f"migrate {month}: {', '.join(names)}")
        done[month] = names
    return done


def orphans(root, month: str | None = None, older_than_s: float | None = None) -> list:
    """Publish folders (of `month`, or all) no snapshot registered: left by a publish killed
    before its commit, emptied by vacuum, or holding only files without rows (never
    registered, never read). A publish in flight has such a folder too: delete one only
    under its month's lock (common/locks.py; every publish holds it). On S3, where no lock
    is shared between hosts, only folders whose objects are all `older_than_s` seconds old
    (a publish uploads and commits in far less than lake_vacuum_grace_s): URLs."""
    if s3.is_s3(root):  # the objects first: a commit landing meanwhile then registers one of them
        objects = _listing(layout.home(root))
        found = _s3_folders(layout.home(root), objects, month, older_than_s)
        known = registered_folders(root, objects)
        return [d for d in found if d not in known]
    root = Path(root).resolve()
    known = registered_folders(root)
    out = []
    for name in tables():
        for d in Path(root, name).glob(f"{layout.month_part(month) if month else layout.MONTH + '*'}/*"):
            if d.is_dir() and str(d) not in known:
                out.append(d)
    return sorted(out)


def vacuum(root, keep: int, grace_s: float) -> dict:
    """Expire every snapshot but the newest `keep` (the current one always stays), then
    delete the files no remaining snapshot needs that were let go over `grace_s` seconds ago
    (a reader that began before the expiry may still be reading them), and the publish
    folders left empty or never committed, a month at a time under its lock (a month being
    run elsewhere is skipped: its next vacuum does it). Returns counts."""
    if keep < 1:
        raise BadInput(f"keep: {keep}: at least the current snapshot is kept (1 or more)")
    on_s3 = s3.is_s3(root)
    if not on_s3:
        atomic.require_writable(Path(root), "lake vacuum")
        commit.repair_in_place(root)  # no misspelled path may point the cleanup at another folder's files
    with opened(root, read_only=False) as con:
        try:
            ids = [r[0] for r in con.execute(f"SELECT snapshot_id FROM {ALIAS}.snapshots() ORDER BY 1").fetchall()]
            old = ids[:-keep]
            if old:
                con.execute(f"CALL ducklake_expire_snapshots({quote(ALIAS)}, versions => ?)", [old])
            gone = len(con.execute(
                f"CALL ducklake_cleanup_old_files({quote(ALIAS)}, "
                f"older_than => now() - to_microseconds(?::BIGINT))", [int(grace_s * 1e6)]).fetchall())
        except duckdb.Error as exc:
            raise LakeError(f"{catalog_name(root)}: vacuum failed: {why(exc)}") from None
    removed, busy = 0, []
    # On S3 the month lock is this host's only (common/locks.py): an unregistered folder must
    # also be older than the grace, which a publish in flight elsewhere is not.
    age = grace_s if on_s3 else None
    remove = s3.Bucket(root).delete if on_s3 else shutil.rmtree
    for month in sorted({str(d).rsplit("/", 2)[-2].removeprefix(layout.MONTH) for d in orphans(root, older_than_s=age)}):
        try:
            with month_lock(root, month):  # no publish of it in flight meanwhile
                for d in orphans(root, month, older_than_s=age):
                    remove(d)
                    removed += 1
        except LockBusy:
            busy.append(month)
    return {"snapshots_expired": len(old), "snapshots_kept": len(ids) - len(old), "files_deleted": gone,
            "folders_removed": removed, "months_busy": busy}
