"""The one Arrow schema every decoding backend produces (`rib_entries`).

`month` and `collector` are the Parquet partition keys: they live in the directory
names (`month=YYYY-MM/collector=NAME/`), not inside the files, so Spark, DuckDB and
pyarrow all read them back as columns without a clash.
"""
from __future__ import annotations

import pyarrow as pa

RIB_ENTRIES = pa.schema(
    [
        pa.field("collector", pa.string(), nullable=False),
        pa.field("project", pa.string(), nullable=False),
        # The dump's time (MRT header of the file), not the route's originated time.
        pa.field("snapshot_time", pa.timestamp("s", tz="UTC"), nullable=False),
        pa.field("peer_asn", pa.uint32(), nullable=False),
        pa.field("peer_ip", pa.string(), nullable=False),
        pa.field("afi", pa.int8(), nullable=False),
        pa.field("prefix", pa.string(), nullable=False),
        # Exactly as announced (prepending kept); null when has_as_set.
        pa.field("as_path", pa.list_(pa.field("item", pa.uint32())), nullable=True),
        # True when the path has AS_SET or confederation segments.
        pa.field("has_as_set", pa.bool_(), nullable=False),
        # bgpdump-style text of the path, kept only for has_as_set rows.
        pa.field("as_path_raw", pa.string(), nullable=True),
        # Last ASN of the path; null when the path ends in a set or is empty.
        pa.field("origin_asn", pa.uint32(), nullable=True),
        pa.field("source_file", pa.string(), nullable=False),
    ]
)

PARTITION_KEYS = ("month", "collector")

#: Columns stored inside each Parquet file (partition keys live in the path).
FILE_SCHEMA = pa.schema([f for f in RIB_ENTRIES if f.name not in PARTITION_KEYS])
