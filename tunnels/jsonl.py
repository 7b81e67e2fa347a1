"""JSON Lines export of hints, schema `congruency.hints/1`.

One JSON object per line, one line per hint. Keys, in this order:
- `schema`: "congruency.hints/1" (bumped when a key is renamed, removed or changes meaning;
  new keys may be added within a version);
- every column of the `hints` table (common/tables.py HINTS, documented column by column in
  common.tables.DOCS["hints"]): month, source_asn, vp_group, vp_asn, via_proxy, proxies,
  dest_asn, dest_asn_v6, query, endpoint, addr_v4, addr_v6, prefix_v4, prefix_v6, v4_path,
  v6_path, hint_class, reason, shared_asns, stability_v4, stability_v6, snapshots,
  confidence, primary_afi, mode, path_manager, congestion_control, transport, rationale,
  mptcp_flags_v4, mptcp_flags_v6, mpt_weight_v4, mpt_weight_v6, mpt_status_v4,
  mpt_status_v6, notes, caveat. ASNs are integers, paths lists of integers, absent values null;
- `selected` (only when candidate endpoints were ranked): the families of this endpoint
  among the k chosen underlay paths, e.g. [4, 6] or [].
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO

import pyarrow as pa

from common import atomic
from common.tables import HINTS

SCHEMA = "congruency.hints/1"


def _rows(source, month: str | None) -> Iterator[Mapping]:
    from common.config import Config

    if isinstance(source, Config):
        import pyarrow.dataset as ds

        if month is None:
            raise ValueError("jsonl.write: month is required when the source is a Config")
        d = Path(source.data_dir) / "hints" / f"month={month}"
        if not d.is_dir():
            raise FileNotFoundError(f"{d}: no published hints for {month} (run pipeline.hints.publish first)")
        source = ds.dataset(d, format="parquet", schema=HINTS).to_batches()
    if isinstance(source, pa.Table):
        source = source.to_batches()
    if isinstance(source, pa.RecordBatchReader):
        source = iter(source)
    for item in source:
        if isinstance(item, pa.RecordBatch):
            yield from item.to_pylist()
        else:
            yield item


def line(row: Mapping) -> str:
    """One hint as its JSON line (no newline)."""
    missing = [k for k in HINTS.names if k not in row]
    extra = set(row) - set(HINTS.names) - {"selected"}
    if missing or extra:
        raise ValueError(f"hint row: missing {missing}, unexpected {sorted(extra)}")
    obj = {"schema": SCHEMA, **{k: row[k] for k in HINTS.names}}
    if "selected" in row:
        obj["selected"] = row["selected"]
    return json.dumps(obj, separators=(",", ":"))


def dump(source, fp: IO[str], month: str | None = None) -> int:
    """Write hints to an open text file; returns the number of lines."""
    n = 0
    for row in _rows(source, month):
        fp.write(line(row) + "\n")
        n += 1
    return n


def write(source, out: str | Path, month: str | None = None) -> Path:
    """Write hints as JSON Lines to `out`, atomically (a dot-temp file, then renamed).

    `source`: a Config (reads the published hints table of `month`), an Arrow table or
    record batch reader with the HINTS schema, or an iterable of hint dicts.
    """
    out = Path(out)
    with atomic.replacing(out) as tmp, open(tmp, "w", encoding="utf-8") as fp:
        dump(source, fp, month)
    return out


def read(path: str | Path) -> Iterable[dict]:
    """The hints of a JSON Lines file (checks the schema version)."""
    with open(path, encoding="utf-8") as fp:
        for i, text in enumerate(fp, 1):
            obj = json.loads(text)
            if obj.get("schema") != SCHEMA:
                raise ValueError(f"{path}:{i}: schema {obj.get('schema')!r}, expected {SCHEMA}")
            yield obj
