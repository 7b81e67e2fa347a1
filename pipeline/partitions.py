"""How many VP partitions the DuckDB compare splits a month into (congruency/METHOD.md
"Partitions"), from the month pass's entry counts and the memory limit: pure functions.

A partition is the set of VPs whose peer ASN hashes to it (common/vp_hash.py), so a VP's
rows, whatever its group, never span two. Two measured figures per entry of a partition:
the compare needs at least BYTES_PER_ENTRY bytes of DuckDB memory (its hash aggregates do not
spill all their state: below that it fails), and it runs fastest with about
FAST_BYTES_PER_ENTRY (above it, it barely spills). K is the smallest number whose
partitions each hold at most limit / FAST_BYTES_PER_ENTRY entries, except that a partition
holding a VP larger than that may hold up to limit / BYTES_PER_ENTRY (no K splits a VP); a
single VP larger than that cannot run at all, and the month is refused before anything is
staged (`unfit`), as is a month no K up to MAX_PARTITIONS splits (`Unfit`).

Not measured: past 32 partitions each one still reads at least 1/32 of the month (the
buckets of common/vp_hash.py), so K = 100 reads the month about three times; the sweep that
set FAST_BYTES_PER_ENTRY went up to K = 38.

Spark keeps one partition: its aggregates and shuffles spill on their own, and running the
month's VP partitions one after another made it slower (`bench/spark_partitions.py
--partitions 2` on the 10M-entry synthetic month: 101.2 s for the two halves against 87.6 s
for the whole, 1.16x, before any month-level pass a real partitioned plan would add).
"""
from __future__ import annotations

from typing import Callable

#: DuckDB memory per entry of a partition, measured (bench/memfloor.py, bench/RESULTS.md
#: "DuckDB engine: the memory the compare needs"): a 99.4M-entry month fails at 1.6 GB in
#: one partition and finishes at 2.0 GB, 25M-entry quarters finish at 500 MB; 20 bytes keeps
#: a margin over the largest that finished.
BYTES_PER_ENTRY = 20
#: DuckDB memory per entry of a partition at which the compare barely spills, measured
#: (`bench/memfloor.py --data-dir D --limits 4GB --partitions auto,10,20` on the scale-250
#: month, 248.5M entries): largest partition 54.0M entries (74 bytes of the limit per entry),
#: 321 s with 3.3 GiB spilled; 29.2M (137 bytes) 254 s, 0.8 GiB; 17.1M (234 bytes) 248 s,
#: 0.56 GiB. 200 sits between the two fast ones: at 4 GB, partitions of at most 20M entries.
FAST_BYTES_PER_ENTRY = 200
#: Above this many entries a partition is split even when memory would allow it: the need
#: grows faster than the entries (bench/memfloor.py: 99.4M entries fail at 1.6 GB, 52M finish
#: at 400 MB).
MAX_PARTITION_ENTRIES = 60_000_000
#: The most partitions the rule tries before calling the month unfit (a month of 10^10
#: entries at 4 GB has 500; each partition reads at least 1/32 of the month, common/vp_hash.py).
MAX_PARTITIONS = 4096


def limit_bytes(cfg) -> int | None:
    """The config's duckdb_memory_limit in bytes ("auto" resolved), or None for no cap."""
    from bgp_congruency.common.config import parse_bytes
    from bgp_congruency.common.duck import memory_limit

    cap = memory_limit(cfg.duckdb_memory_limit)
    return parse_bytes(cap) if cap else None


def capacity(limit_bytes: int) -> int:
    """Entries one partition should hold under `limit_bytes` of DuckDB memory (to barely spill)."""
    return max(1, min(limit_bytes // FAST_BYTES_PER_ENTRY, MAX_PARTITION_ENTRIES))


class Unfit(Exception):
    """The month cannot be split to fit the limit (the message says why and what to change)."""


def floor(limit_bytes: int) -> int:
    """Entries one partition may hold at most under `limit_bytes` (the fit floor; at most
    MAX_PARTITION_ENTRIES, a preference a single larger VP overrides)."""
    return max(1, min(limit_bytes // BYTES_PER_ENTRY, MAX_PARTITION_ENTRIES))


def choose(sizes: Callable[[int], list[int]], total: int, limit_bytes: int | None, fixed: int | None = None,
           big: dict[int, int] | None = None) -> int:
    """The number of partitions: `fixed` when the config sets one, else the smallest K whose
    partitions (`sizes(K)`: entries per partition) each hold at most `capacity(limit_bytes)`
    entries, starting from the even split. No limit (None): one partition. `big`: the VPs
    (peer ASN: entries) larger than that capacity; no K splits a VP, so a partition holding
    one may hold up to the fit floor (`floor`, or the VP's own size when larger) and the
    others keep the capacity. At MAX_PARTITIONS, partitions up to the fit floor are taken
    (they spill); Unfit when not even those fit."""
    from bgp_congruency.common import vp_hash

    if fixed:
        return fixed
    if limit_bytes is None or total <= 0:
        return 1
    cap, hard = capacity(limit_bytes), floor(limit_bytes)
    big = {a: n for a, n in (big or {}).items() if n > cap}

    def fits(parts: list[int], k: int, usual: int) -> bool:
        room = {}
        for a, n in big.items():
            i = vp_hash.partition(a, k)
            room[i] = max(room.get(i, hard), n)
        return all(n <= room.get(i, usual) for i, n in enumerate(parts))

    k = min(max(1, -(-(total - sum(big.values())) // cap) + len(big)), MAX_PARTITIONS)
    while not fits(parts := sizes(k), k, cap) and k < MAX_PARTITIONS:
        k = min(k + max(1, k // 8), MAX_PARTITIONS)
    if not fits(parts, k, hard):  # at MAX_PARTITIONS a partition may spill, up to the fit floor
        raise Unfit(f"the month's {total:,} entries do not split into {MAX_PARTITIONS:,} VP partitions that fit "
                    f"duckdb_memory_limit = {limit_bytes / 2**20:,.0f} MiB (the largest holds "
                    f"{max(parts, default=0):,} entries; a partition may hold at most about {hard:,}); "
                    "raise duckdb_memory_limit")
    return k


def unfit(largest_vp: int, limit_bytes: int | None) -> str | None:
    """Why the month cannot run at this limit (one VP alone is larger than a partition may
    be), or None."""
    if limit_bytes is None or largest_vp * BYTES_PER_ENTRY <= limit_bytes:
        return None
    need = largest_vp * BYTES_PER_ENTRY
    return (f"one vantage point has {largest_vp:,} entries, more than one partition can hold at "
            f"duckdb_memory_limit = {limit_bytes / 2**20:,.0f} MiB (about {BYTES_PER_ENTRY:,} bytes per "
            f"entry: {need / 2**20:,.0f} MiB); raise duckdb_memory_limit")


def peak_bytes(partition_entries: int, limit_bytes: int | None = None) -> int:
    """The compare's estimated DuckDB memory for a partition of this many entries: what it
    uses without spilling, up to the limit."""
    need = partition_entries * FAST_BYTES_PER_ENTRY
    return min(need, limit_bytes) if limit_bytes else need
