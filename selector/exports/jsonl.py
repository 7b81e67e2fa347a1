"""JSON Lines export of hints, schema `congruency.hints/1`.

One JSON object per line, one line per hint. Keys, in this order:
- `schema`: "congruency.hints/1" (bumped when a key is renamed, removed or changes meaning;
  new keys may be added within a version);
- every column of the `hints` table (common/tables.py HINTS, documented column by column in
  common.table_docs.DOCS["hints"]): month, source_asn, vp_group, vp_asn, via_proxy, proxies,
  dest_asn, dest_asn_v6, query, endpoint, addr_v4, addr_v6, prefix_v4, prefix_v6, v4_path,
  v6_path, hint_class, reason, shared_asns, stability_v4, stability_v6, snapshots,
  confidence, primary_afi, mode, path_manager, congestion_control, transport, rationale,
  mptcp_flags_v4, mptcp_flags_v6, mpt_weight_v4, mpt_weight_v6, mpt_status_v4,
  mpt_status_v6, notes, caveat. ASNs are integers, paths lists of integers, absent values null;
- `selected` (only when candidate endpoints were ranked): the families of this endpoint
  among the k chosen underlay paths, e.g. [4, 6] or [];
- `rule` and `rule_accuracy` (only in answers of `advise`, not in the month's table, whose
  rows are all VPs' own pairs): where the answer came from (vp, through, upstream, none) and
  how often that rule was right in the month's evaluation (`congruency evaluate`; null before).

The text is UTF-8 (characters outside ASCII are written as themselves, not escaped); a line
ends with "\n" only, so split on that (a string may hold U+2028, which str.splitlines
breaks at). A month's whole table (millions of lines at a real month's size) is rendered a
record batch at a time by DuckDB's `to_json`, not per row in Python, with bounded memory:
`line` is the definition, and tests/test_export.py checks that both give the same objects.
"""
from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from bgp_congruency.common import atomic, duck, s3
from bgp_congruency.common.config import Config
from bgp_congruency.common.duck import quote
from bgp_congruency.common.tables import HINTS
from bgp_congruency.lake import published

SCHEMA = "congruency.hints/1"


def _batches(source, month: str | None) -> Iterator[pa.RecordBatch | Mapping]:
    """Record batches of at most BATCH rows (of a Config's published month, a table, a
    reader or an iterable of batches), or the dicts of an iterable as they are."""
    if isinstance(source, Config):
        if month is None:
            raise ValueError("jsonl.write: month is required when the source is a Config")

        if month not in published.months(source.data_dir, "hints"):
            raise FileNotFoundError(f"{source.data_dir}: no published hints for {month} (run congruency run --month {month})")
        files = published.files(source.data_dir, ["hints"], month)["hints"]
        # No read-ahead: it held ~1.2 GiB of decoded batches at 1M hints, for no speed.
        paths, fs = s3.for_arrow(files)
        source = ds.dataset(paths, format="parquet", schema=HINTS, filesystem=fs).to_batches(
            batch_size=BATCH, batch_readahead=0, fragment_readahead=0)
    if isinstance(source, pa.Table):
        source = source.to_batches(BATCH)
    for item in source:
        if isinstance(item, pa.RecordBatch):
            for start in range(0, max(item.num_rows, 1), BATCH):
                yield item.slice(start, BATCH)
        else:
            yield item


#: Rows rendered per DuckDB call: ~12 MB of text at ~1.5 KB a line (65,536 rows held 1 GiB
#: more at the peak, in DuckDB's intermediate strings, for no speed).
BATCH = 8_192


def _render(con, batch: pa.RecordBatch) -> memoryview:
    """A batch of hint rows as JSON lines, UTF-8, each ending in a newline: the objects
    `line` gives. The lines end to end are the data buffer of the Arrow string array DuckDB
    returns (between its first and last offsets), so no Python string is made per row."""
    _check(batch.schema.names)
    if batch.num_rows == 0:
        return memoryview(b"")
    names = HINTS.names + (["selected"] if "selected" in batch.schema.names else [])
    cols = ", ".join(f'"{n}"' for n in names)
    con.register("hint_batch", batch)
    try:  # a projection of one scan keeps the batch's row order
        arr = con.sql(f"SELECT to_json(h)::VARCHAR || chr(10) FROM (SELECT {quote(SCHEMA)} AS schema, {cols} "
                      "FROM hint_batch) h").to_arrow_table().column(0).combine_chunks()
    finally:
        con.unregister("hint_batch")
    return _joined(arr)


def _joined(arr: pa.Array) -> memoryview:
    """The strings of a (possibly sliced) Arrow string array end to end, without copying
    them one by one: the data buffer between the array's first and last offsets."""
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    if len(arr) == 0:
        return memoryview(b"")
    offsets = np.frombuffer(arr.buffers()[1], np.int64 if pa.types.is_large_string(arr.type) else np.int32)
    return memoryview(arr.buffers()[2])[offsets[arr.offset]:offsets[arr.offset + len(arr)]]


#: Keys an answer of `advise` may carry beyond the table's columns, written after them.
OPTIONAL = ("rule", "rule_accuracy", "selected")


def _check(names) -> None:
    """Hint rows carry every column of HINTS and nothing else (but OPTIONAL)."""
    missing = [k for k in HINTS.names if k not in names]
    extra = set(names) - set(HINTS.names) - set(OPTIONAL)
    if missing or extra:
        raise ValueError(f"hint row: missing {missing}, unexpected {sorted(extra)}")


def line(row: Mapping) -> str:
    """One hint as its JSON line (no newline)."""
    _check(row)
    obj = {"schema": SCHEMA, **{k: row[k] for k in HINTS.names}, **{k: row[k] for k in OPTIONAL if k in row}}
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def dump(source, fp: IO[str], month: str | None = None) -> int:
    """Write hints to an open text file; returns the number of lines."""
    # A batch's UTF-8 bytes go straight to the file's buffer when the file is UTF-8.
    raw = getattr(fp, "buffer", None)
    if raw is not None and codecs.lookup(getattr(fp, "encoding", None) or "ascii").name != "utf-8":
        raw = None
    n = 0
    con = None
    try:
        for item in _batches(source, month):
            if isinstance(item, pa.RecordBatch):
                if con is None:
                    con = duck.connect(source) if isinstance(source, Config) else duckdb.connect()
                    con.execute("SET preserve_insertion_order = true")  # the rows' order is the file's
                data = _render(con, item)
                if raw is not None:
                    fp.flush()
                    raw.write(data)
                else:
                    fp.write(str(data, "utf-8"))
                n += item.num_rows
            else:
                fp.write(line(item) + "\n")
                n += 1
    finally:
        if con is not None:
            con.close()
    return n


def write(source, out: str | Path, month: str | None = None, extra: pa.Table | None = None) -> Path:
    """Write hints as JSON Lines to `out`, atomically (a dot-temp file, then renamed; an
    s3:// URL: written on local disk, then uploaded whole, so a reader never sees part).

    `source`: a Config (reads the published hints table of `month`), an Arrow table or
    record batch reader with the HINTS schema, or an iterable of hint dicts; `extra`: hints
    written after them (the site's own advice, selector/reveal.site_hints).
    """
    if s3.is_s3(out):
        import tempfile

        with tempfile.TemporaryDirectory(prefix="congruency-export-") as d:
            s3.Bucket(str(out)).put_file(write(source, Path(d) / "tunnels.jsonl", month, extra), str(out))
        return out
    out = Path(out)
    with atomic.replacing(out) as tmp, open(tmp, "w", encoding="utf-8") as fp:
        dump(source, fp, month)
        if extra is not None and extra.num_rows:
            dump(extra, fp, month)
    return out


def read(path: str | Path) -> Iterable[dict]:
    """The hints of a JSON Lines file (checks the schema version)."""
    with open(path, encoding="utf-8") as fp:
        for i, text in enumerate(fp, 1):
            obj = json.loads(text)
            if obj.get("schema") != SCHEMA:
                raise ValueError(f"{path}:{i}: schema {obj.get('schema')!r}, expected {SCHEMA}")
            yield obj
