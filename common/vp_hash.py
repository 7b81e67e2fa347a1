"""Which VP partition a row belongs to: one hash of the peer ASN, in the forms its users need
(numpy for ingest's writer, DuckDB SQL for the compare and the hints, bucket ranges for
Parquet pruning). Pure functions.

Why one hash with buckets: a partition must read only its rows (congruency/METHOD.md
"Partitions"). Ingest stores each row's `vp_bucket` (the hash's top BUCKET_BITS bits) and
writes a bucket's rows together in row groups (ingest/writer.py); a partition is a contiguous
hash range [cuts[i], cuts[i + 1]) (`Cuts`), so a contiguous range of buckets, and min/max
statistics on `vp_bucket` skip every other row group, for any cuts. K even ranges ([i * 2^32
/ K, (i + 1) * 2^32 / K): `even`) are what a fixed K (config compare_partitions) and the hints
use; the compare's rule cuts where the month's per-VP counts say (pipeline/partitions.py).
Knuth's multiplicative hash spreads consecutive ASNs, and is one-to-one on 32-bit ASNs (MULT
is odd): two VPs never share a hash, so a cut can fall between any two.
"""
from __future__ import annotations

import numpy as np

#: floor(2^32 / golden ratio): Knuth's multiplicative constant.
MULT = 2654435761
SPACE = 1 << 32
BUCKET_BITS = 5
#: Row groups of ingest's files each hold rows of one bucket (or, for the tail of a file, a
#: short range of buckets): a partition of K reads about 1/K of the month, down to 1/BUCKETS.
BUCKETS = 1 << BUCKET_BITS
COLUMN = "vp_bucket"


def sql_hash(column: str) -> str:
    """The 32-bit hash of an ASN column, in DuckDB SQL (exact: the product fits UBIGINT)."""
    return f"(({column})::UBIGINT * {MULT}::UBIGINT % {SPACE}::UBIGINT)"


def sql_bucket(column: str) -> str:
    """The bucket of an ASN column, in DuckDB SQL (the tests hold it equal to `buckets`)."""
    return f"({sql_hash(column)} >> {32 - BUCKET_BITS})::TINYINT"


def sql_partition(column: str, k: int) -> str:
    """The partition (0..k-1) of an ASN column, in DuckDB SQL."""
    return f"({sql_hash(column)} * {k} // {SPACE})"


def buckets(asns):
    """The buckets of a numpy array of ASNs (ingest's writer), as int8."""
    h = (asns.astype(np.uint64) * np.uint64(MULT)) % np.uint64(SPACE)
    return (h >> np.uint64(32 - BUCKET_BITS)).astype(np.int8)


def partition(asn: int, k: int) -> int:
    """The partition of one ASN, in Python (the tests' independent form of `sql_partition`)."""
    return hash_of(asn) * k // SPACE


#: K + 1 hash boundaries, 0 first and SPACE last: partition i holds the hashes in
#: [cuts[i], cuts[i + 1]).
Cuts = tuple[int, ...]


def even(k: int) -> Cuts:
    """K even ranges: partition i holds the hashes h with h * k // SPACE == i (`partition`)."""
    return tuple(-(-i * SPACE // k) for i in range(k + 1))  # the smallest h with h * k // SPACE == i


def hash_of(asn: int) -> int:
    """The 32-bit hash of one ASN, in Python (`sql_hash`'s independent form)."""
    return asn * MULT % SPACE


def sql_range(column: str, cuts: Cuts, i: int) -> str:
    """DuckDB SQL: the ASN column's rows of partition i of `cuts`."""
    return f"{sql_hash(column)} BETWEEN {cuts[i]} AND {cuts[i + 1] - 1}"


def bucket_span(cuts: Cuts, i: int) -> tuple[int, int]:
    """The first and last bucket holding rows of partition i of `cuts`."""
    shift = 32 - BUCKET_BITS
    return cuts[i] >> shift, (cuts[i + 1] - 1) >> shift
