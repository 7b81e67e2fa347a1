"""Raw backend columns -> the `rib_entries` schema, vectorised with Arrow compute.

One place decides how an AS path text becomes `list<uint32>`, when a path counts as
having sets, and what the origin is, so every backend gives the same rows.
"""
from __future__ import annotations

import re
from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bgp_congruency.common.tables import RIB_ENTRIES

ASN_LIST = RIB_ENTRIES.field("as_path").type
_SET_CHARS = r"[{(\[]"


def _origin_of_raw(text: str) -> int | None:
    last = text.split()[-1] if text.split() else ""
    return int(last) if re.fullmatch(r"\d+", last) else None


def _parse_paths(plain: pa.Array) -> pa.Array:
    """'1 2 3' -> [1, 2, 3]; '' -> []; null stays null."""
    trimmed = pc.utf8_trim_whitespace(plain)
    tokens = pc.split_pattern_regex(trimmed, r"\s+")  # '' -> ['']: only for empty paths
    flat = pc.list_flatten(tokens)
    values = flat.filter(pc.not_equal(flat, "")).cast(pa.uint32())
    empty = pc.fill_null(pc.equal(trimmed, ""), False).to_numpy(zero_copy_only=False)
    lengths = pc.fill_null(pc.list_value_length(tokens), 0).to_numpy(zero_copy_only=False) - empty
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    mask = pc.is_null(plain)
    return pa.ListArray.from_arrays(pa.array(offsets), values, type=ASN_LIST, mask=mask)


def to_entries(
    raw: pa.RecordBatch,
    *,
    collector: str,
    project: str,
    snapshot_time: datetime,
    source_file: str,
) -> pa.RecordBatch:
    n = raw.num_rows
    text = raw.column("as_path_text")
    has_set = pc.fill_null(pc.match_substring_regex(text, _SET_CHARS), False)
    plain = pc.if_else(has_set, pa.scalar(None, pa.string()), text)
    as_path = _parse_paths(plain)

    # Origin = last ASN; computed from list offsets, no per-row Python.
    lengths = pc.fill_null(pc.list_value_length(as_path), 0).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(as_path).to_numpy(zero_copy_only=False)
    ends = np.cumsum(lengths) - 1
    nonempty = lengths > 0
    origin_vals = np.zeros(n, dtype=np.uint32)
    origin_vals[nonempty] = flat[ends[nonempty]]
    origin = pa.array(origin_vals, pa.uint32(), mask=~nonempty)

    raw_text = pc.if_else(has_set, text, pa.scalar(None, pa.string()))
    if pc.any(has_set).as_py():
        # Rare rows (a few hundred per full table): the origin is the last token if plain.
        idx = np.flatnonzero(has_set.to_numpy(zero_copy_only=False))
        vals = origin.to_pylist()
        for i in idx:
            vals[i] = _origin_of_raw(text[i].as_py())
        origin = pa.array(vals, pa.uint32())

    prefix = raw.column("prefix")
    afi = pc.if_else(pc.match_substring(prefix, ":"), pa.scalar(6, pa.int8()), pa.scalar(4, pa.int8()))
    return pa.RecordBatch.from_arrays(
        [
            pa.array(np.full(n, collector, dtype=object), pa.string()) if n else pa.array([], pa.string()),
            pa.array([project] * n, pa.string()),
            pa.array(np.full(n, int(snapshot_time.timestamp()), dtype="int64")).cast(
                RIB_ENTRIES.field("snapshot_time").type
            ),
            raw.column("peer_asn"),
            raw.column("peer_ip"),
            afi,
            prefix,
            as_path,
            has_set,
            raw_text,
            origin,
            pa.array([source_file] * n, pa.string()),
        ],
        schema=RIB_ENTRIES,
    )
