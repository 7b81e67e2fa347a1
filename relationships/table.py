"""The month's `as_relationships` table: inferred inside the compare from the `paths` it staged
(pipeline/job.Stager), before the hints, and published in the month's own commit; or again
for a month published before (`publish`)."""
from __future__ import annotations

import shutil
import time
from contextlib import nullcontext
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bgp_congruency.common import console, duck, layout
from bgp_congruency.common.config import Config
from bgp_congruency.common.tables import AS_RELATIONSHIPS
from bgp_congruency.lake import published
from bgp_congruency.lake.attach import pinned
from bgp_congruency.lake.commit import data_files
from bgp_congruency.pipeline.publish import LocalStore
from bgp_congruency.relationships.evidence import infer_family
from bgp_congruency.relationships.infer import Relationship

TABLE = "as_relationships"


def _rows(month: str, afi: int, rels: list[Relationship]) -> pa.Table:
    rels = sorted(rels, key=lambda r: (r.as1, r.as2))
    return pa.table({"month": [month] * len(rels), "afi": pa.array([afi] * len(rels), pa.int8()),
                     "as1": [r.as1 for r in rels], "as2": [r.as2 for r in rels], "rel": [r.rel for r in rels],
                     "paths": [r.paths for r in rels], "vps": [r.vps for r in rels], "step": [r.step for r in rels],
                     "decided": [r.decided for r in rels], "evidence": [r.evidence for r in rels]},
                    schema=AS_RELATIONSHIPS)


def stage(cfg: Config, month: str, staged: str, paths_files: list[str], prog) -> dict:
    """Write the month's relationships into `staged`/as_relationships from `paths_files` (the
    month's paths): one family at a time, DuckDB aggregating under the memory limit (spilling
    into the staging folder), only the aggregates in Python. Returns per family the clique
    and the links per relationship."""
    out_dir = Path(staged) / TABLE
    out_dir.mkdir(parents=True, exist_ok=True)
    con = duck.connect(cfg, spill=Path(staged) / ".duckdb-tmp-rel")
    summary = {}
    try:
        task = prog.add_task(f"relationships {month}", total=2)
        relation = ("read_parquet([" + ", ".join(duck.quote(duck.glob_literal(f)) for f in paths_files) + "])"
                    if paths_files else None)
        for afi in (4, 6):
            clique, rels = infer_family(con, relation, afi, cfg.relationships) if relation else ((), [])
            out = out_dir / f"part-{afi}.parquet"
            pq.write_table(_rows(month, afi, rels), out, compression="zstd")
            if not pq.read_schema(out).equals(AS_RELATIONSHIPS):  # the contract of common/tables.py
                raise OSError(f"{out}: written schema differs from common.tables.AS_RELATIONSHIPS")
            summary[afi] = {"clique": sorted(clique), "links": len(rels),
                            **{k: sum(r.rel == k for r in rels) for k in ("p2c", "p2p")}}
            prog.advance(task)
    finally:
        con.close()
        shutil.rmtree(Path(staged) / ".duckdb-tmp-rel", ignore_errors=True)
    return summary


def stage_month(cfg: Config, month: str, staged: str, out: str, progress) -> list[str]:
    """The compare's stager (pipeline/job.Stager): the month's relationships from the paths it
    staged, published in the month's own commit."""
    stage(cfg, month, out, data_files(f"{staged}/paths"), progress)
    return [TABLE]


def publish(cfg: Config, month: str, progress=None) -> dict:
    """Infer a published month's relationships again from its published paths and publish
    them on their own (a month published before this table existed, or after
    [relationships] changed). Staged whole, then committed: readers see the old or the new."""
    t0 = time.perf_counter()
    root = layout.local(cfg.data_dir, "congruency relationships")
    store = LocalStore(root)
    staged = store.staging(month)
    try:
        with console.progress() if progress is None else nullcontext(progress) as prog, pinned(root):
            files = published.files(root, ["paths"], month)["paths"]
            summary = stage(cfg, month, staged, files, prog)
            [final] = store.publish(staged, [TABLE], month)
            staged = None
    finally:
        if staged is not None:
            store.delete(staged)
    return {"month": month, "families": summary, "path": final, "seconds": round(time.perf_counter() - t0, 3)}
