"""The stable path of a set of traceroutes, by the study's rule: the hop sequence seen in at
least STABLE_SHARE (70%) of the traces. Pure functions.

Each open choice, named:
- A hop is the set of addresses that answered at its TTL in one trace. More than one
  address at a TTL (within a trace, or across the traces that support the path) is a
  load-balanced hop: kept as the set, marked `load_balanced`.
- A TTL where a trace got no answer (`*`) is no evidence of another router: it agrees with
  any address of the path there (*choice*: a lost probe must not break a path's
  stability), and the stable path takes the address the supporting traces saw there.
- Traces support a path only with the same number of TTLs up to their last answer (a
  route change or a trace cut short is another path).
- Candidates are the traces' own hop sequences; the one supported by the most traces wins
  (ties: fewer unanswered TTLs, then the smaller sequence), and is stable when that
  support is at least STABLE_SHARE of the traces.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

STABLE_SHARE = 0.7


@dataclass(frozen=True)
class Hop:
    ttl: int
    #: Addresses seen at this TTL on the supporting traces, most often first; () for `*`.
    addresses: tuple[str, ...]

    @property
    def load_balanced(self) -> bool:
        return len(self.addresses) > 1


@dataclass(frozen=True)
class StablePath:
    hops: tuple[Hop, ...]
    support: int
    traces: int

    @property
    def share(self) -> float:
        return self.support / self.traces if self.traces else 0.0

    @property
    def stable(self) -> bool:
        """Held by STABLE_SHARE of the traces, and answered somewhere (no answer is no path)."""
        return self.traces > 0 and any(h.addresses for h in self.hops) and self.share >= STABLE_SHARE


def signature(hops: Sequence[Sequence[str | None]]) -> tuple[frozenset, ...]:
    """One trace's hop sequence: per TTL the set of addresses that answered (empty: `*`)."""
    return tuple(frozenset(a for a in h if a) for h in hops)


def supports(trace: tuple[frozenset, ...], path: tuple[frozenset, ...]) -> bool:
    """A trace supports a path: same length, and at every TTL the trace has no answer (`*`)
    or shares an address with the path (a `*` of the path needs a `*` of the trace: a path
    must not win on the hops it does not know)."""
    return len(trace) == len(path) and all(not t or (t & p) for t, p in zip(trace, path))


def stable_path(traces: Sequence[Sequence[Sequence[str | None]]]) -> StablePath | None:
    """The most supported hop sequence among `traces` (each: per TTL, the answering
    addresses), with its support; None without traces."""
    sigs = [signature(t) for t in traces]
    if not sigs:
        return None
    cands = sorted(set(sigs), key=lambda s: (sum(1 for h in s if not h), [sorted(h) for h in s]))
    best = max(cands, key=lambda c: sum(supports(s, c) for s in sigs))  # max keeps the first of ties
    backing = [t for t, s in zip(traces, sigs) if supports(s, best)]
    hops = []
    for i in range(len(best)):
        seen = Counter(a for t in backing for a in t[i] if a)
        hops.append(Hop(i + 1, tuple(a for a, _ in sorted(seen.items(), key=lambda kv: (-kv[1], kv[0])))))
    return StablePath(tuple(hops), len(backing), len(sigs))
