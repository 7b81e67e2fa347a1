"""Routes that change between a month's snapshots, as real collectors' do: the churn model of
the synthetic archive, fitted to the real update files of the shared archive (bench/churn.py,
bench/RESULTS.md "Churn").

Measured there, per BGP session over 5-15 minute windows of four collectors (2022-2026): a
median 0.74% of a full table touched per hour (an upper bound: a prefix announced again in
the same hour counts once per window), 65% of the announcements of a prefix already announced
in the window carrying another AS path, and 7.3% of the updates withdrawals. So a route visibly
changes (another path, or withdrawn) at RATE = 0.74% x (7.3% + 92.7% x 65%) = 0.5% per hour.

Real churn is concentrated: the same unstable prefixes flap again and again, while most of a
table does not move for weeks. The model: a share UNSTABLE of the (VP, prefix) routes is
unstable (a modelling choice, 4%, the generator's share of flapping routes, generate.UNSTABLE:
a window of minutes cannot measure it), each toggling between its usual state and a perturbed
one at RATE / UNSTABLE per hour (a Poisson process: the parity of its events since the month
began). Perturbed is withdrawn with the measured share of withdrawals among visible changes,
else another path: the route's second best where the routing computed one, else the same path
with the VP's AS prepended once more (a change of the path as announced). Every route is in its
usual state at the month's first snapshot (the routing's, with the generator's flaps of that
snapshot), so a month of one snapshot is the month without churn.

Expected share of routes that differ between two snapshots Δt hours apart, once the first is
behind: UNSTABLE x (1 - exp(-2 x RATE / UNSTABLE x Δt)) / 2 (`expected`): 0.79% at 2 h, 2.0% at
24 h. tests/test_synth.py holds a generated month to it.
"""
from __future__ import annotations

import hashlib
import math

import numpy as np

#: The measured rates (bench/churn.py on the four update files of the shared archive).
TOUCHED_PER_HOUR = 0.0074
PATH_CHANGE_SHARE = 0.651
WITHDRAWAL_SHARE = 0.073
#: Visible changes of a route per hour: touches that withdraw it or change its path.
VISIBLE_SHARE = WITHDRAWAL_SHARE + (1 - WITHDRAWAL_SHARE) * PATH_CHANGE_SHARE
RATE = TOUCHED_PER_HOUR * VISIBLE_SHARE
#: The share of routes that churn (a modelling choice: see the module docstring).
UNSTABLE = 0.04
#: Of a perturbed route, the share withdrawn (the rest take another path).
WITHDRAWN = WITHDRAWAL_SHARE / VISIBLE_SHARE


def expected(hours: float) -> float:
    """The share of routes that differ between two snapshots `hours` apart (past the first)."""
    return UNSTABLE * (1 - math.exp(-2 * RATE / UNSTABLE * hours)) / 2


class Churn:
    """One family's unstable routes of a month and which are perturbed at each snapshot.

    `slots`: the number of (prefix index, VP position) slots (prefixes x VPs); `usual(slot)`:
    the slot's usual route (bytes: ORIGIN and AS_PATH) or None where it has none, or where
    churn does not apply (a default route, a dirty origination); `other(slot, blob)`: its
    perturbed path. `hours`: each snapshot's time since the month's first. Deterministic per
    seed, month and family, in numpy (a month of 10^8 slots)."""

    def __init__(self, seed, month: str, afi: int, slots: int, usual, other, hours: list[float]):
        key = hashlib.sha256(f"synth:{seed}:{month}:{afi}:churn".encode()).digest()
        rng = np.random.default_rng(int.from_bytes(key[:8], "big"))
        chosen = np.sort(rng.choice(slots, size=int(rng.binomial(slots, UNSTABLE)), replace=False)) \
            if slots else np.zeros(0, np.int64)
        gone = rng.random(len(chosen)) < WITHDRAWN
        self.slot, self.blob = [], []
        for s, w in zip(chosen.tolist(), gone.tolist()):
            b = usual(s)
            if b is not None:
                self.slot.append(s)
                self.blob.append(None if w else other(s, b))
        flips = np.zeros((len(hours), len(self.slot)), bool)
        for i in range(1, len(hours)):  # an odd number of events in the interval flips the state
            p = 0.5 * (1 - math.exp(-2 * RATE / UNSTABLE * (hours[i] - hours[i - 1])))
            flips[i] = rng.random(len(self.slot)) < p
        self.state = np.logical_xor.accumulate(flips, axis=0) if len(hours) else flips

    def at(self, snapshot: int) -> dict[int, bytes | None]:
        """slot -> its perturbed route (None: withdrawn), for the slots perturbed at `snapshot`."""
        return {self.slot[i]: self.blob[i] for i in np.flatnonzero(self.state[snapshot]).tolist()}
