"""How many VP partitions the DuckDB compare splits a month into (congruency/METHOD.md
"Partitions"), from the month pass's counts and the memory limit: pure functions. The
compare's rows are the month's routes (common/routes.py: a route seen in several snapshots
is one row), so its counts, and the "entries" of the figures below, are routes since
2026-11-28; the figures were measured when a row was an entry, and hold as an upper bound.

A partition is the set of VPs whose peer ASN hashes into one contiguous range
(common/vp_hash.py), so a VP's rows, whatever its group, never span two. Two measured figures
per entry of a partition: the compare needs at least BYTES_PER_ENTRY bytes of DuckDB memory
(its hash aggregates do not spill all their state: below that it fails), and it runs fastest
with about FAST_BYTES_PER_ENTRY (above it, it barely spills). `cut` walks the month's VPs in
hash order (the month pass's counts) and cuts a range when the next VP would take it past
limit / FAST_BYTES_PER_ENTRY entries: the fewest contiguous ranges that fit, each full, and
a VP larger than that alone in its range (no cut splits a VP). A single VP larger than
limit / BYTES_PER_ENTRY cannot run at all, and the month is refused before anything is
staged (`unfit`), as is a month that needs more than MAX_PARTITIONS ranges (`Unfit`). A fixed
K (config compare_partitions) is K even ranges. `choose` is the plan's estimate of K from a
month's entries alone (runner/plan.py), the even split.

Measured (bench/RESULTS.md, scale 1000 at 4 GB, `bench/commits.py --limit 4GB`): the rule
before `cut` asked the heaviest of K even hash ranges to fit, so uneven ranges (a month's VPs
are of very different sizes) pushed K up by eighths until it did: 137 partitions, 1,049 s;
`cut` takes 53, 682 s (0.65x), the tables identical.

Not measured: past 32 partitions each one still reads at least 1/32 of the month (the
buckets of common/vp_hash.py), so K = 100 reads the month about three times; the sweep that
set FAST_BYTES_PER_ENTRY went up to K = 38.

Spark keeps one partition: its aggregates and shuffles spill on their own, and running the
month's VP partitions one after another made it slower (`bench/spark_partitions.py
--partitions 2` on the 10M-entry synthetic month: 101.2 s for the two halves against 87.6 s
for the whole, 1.16x, before any month-level pass a real partitioned plan would add).
"""
from __future__ import annotations

import bisect
from typing import Callable

from bgp_congruency.common import vp_hash
from bgp_congruency.common.config import parse_bytes
from bgp_congruency.common.duck import memory_limit

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


def choose(sizes: Callable[[int], list[int]], total: int, limit_bytes: int | None, fixed: int | None = None) -> int:
    """The number of partitions a month of `total` entries needs, for the plan (which knows
    no VP): `fixed` when the config sets one, else the smallest K whose partitions
    (`sizes(K)`: entries per partition) each hold at most `capacity(limit_bytes)` entries,
    from the even split up; at MAX_PARTITIONS, partitions up to the fit floor are taken
    (they spill); Unfit when not even those fit. No limit (None): one partition."""
    if fixed:
        return fixed
    if limit_bytes is None or total <= 0:
        return 1
    cap, hard = capacity(limit_bytes), floor(limit_bytes)
    k = min(max(1, -(-total // cap)), MAX_PARTITIONS)
    while max(parts := sizes(k)) > cap and k < MAX_PARTITIONS:
        k = min(k + max(1, k // 8), MAX_PARTITIONS)
    if max(parts) > hard:  # at MAX_PARTITIONS a partition may spill, up to the fit floor
        raise _unfit(total, limit_bytes, max(parts), hard)
    return k


def _unfit(total: int, limit_bytes: int, largest: int, hard: int) -> Unfit:
    return Unfit(f"the month's {total:,} routes do not split into {MAX_PARTITIONS:,} VP partitions that fit "
                 f"duckdb_memory_limit = {limit_bytes / 2**20:,.0f} MiB (the largest holds "
                 f"{largest:,} routes; a partition may hold at most about {hard:,}); raise duckdb_memory_limit")


def cut(vps: list[tuple[int, int]], limit_bytes: int | None, fixed: int | None = None):
    """The month's VP partitions as hash ranges (common/vp_hash.Cuts), from `vps`: (peer ASN,
    entries) of every VP of the month. `fixed`: that many even ranges. Else, in hash order, a
    range is cut before the VP that would take it past `capacity(limit_bytes)` entries (a
    larger VP sits alone); past MAX_PARTITIONS ranges, the same at the fit floor (they
    spill); Unfit when not even those fit. No limit (None) or no entries: one range."""
    if fixed:
        return vp_hash.even(fixed)
    total = sum(n for _a, n in vps)
    if limit_bytes is None or total <= 0:
        return vp_hash.even(1)
    ordered = sorted((vp_hash.hash_of(a), n) for a, n in vps)
    for room in (capacity(limit_bytes), floor(limit_bytes)):
        cuts, held = [0], 0
        for h, n in ordered:
            if held and held + n > room:
                cuts.append(h)
                held = 0
            held += n
        if len(cuts) <= MAX_PARTITIONS:
            return tuple(cuts + [vp_hash.SPACE])
    largest = max(sizes(vps, tuple(cuts + [vp_hash.SPACE])))
    raise _unfit(total, limit_bytes, largest, floor(limit_bytes))


def sizes(vps: list[tuple[int, int]], cuts) -> list[int]:
    """Entries per partition of `cuts`, from `vps`: (peer ASN, entries)."""
    out = [0] * (len(cuts) - 1)
    for a, n in vps:
        out[bisect.bisect_right(cuts, vp_hash.hash_of(a)) - 1] += n
    return out


def unfit(largest_vp: int, limit_bytes: int | None) -> str | None:
    """Why the month cannot run at this limit (one VP alone is larger than a partition may
    be), or None."""
    if limit_bytes is None or largest_vp * BYTES_PER_ENTRY <= limit_bytes:
        return None
    need = largest_vp * BYTES_PER_ENTRY
    return (f"one vantage point has {largest_vp:,} routes, more than one partition can hold at "
            f"duckdb_memory_limit = {limit_bytes / 2**20:,.0f} MiB (about {BYTES_PER_ENTRY:,} bytes per "
            f"route: {need / 2**20:,.0f} MiB); raise duckdb_memory_limit")


def peak_bytes(partition_entries: int, limit_bytes: int | None = None) -> int:
    """The compare's estimated DuckDB memory for a partition of this many entries: what it
    uses without spilling, up to the limit."""
    need = partition_entries * FAST_BYTES_PER_ENTRY
    return min(need, limit_bytes) if limit_bytes else need
