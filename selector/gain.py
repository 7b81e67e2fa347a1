"""What the multipath testbed measured, for the advice to cite (issue 32).

`bench/multipath.py --advice` writes measured_gain.json beside this file: the medians of one
MPTCP connection over an IPv4 and an IPv6 subflow against single-path TCP, over two
disjoint bottlenecks and through one shared bottleneck (bench/RESULTS.md, "Multipath
gain"). The rationales of `aggregate`, `backup` and `single-path` quote those figures, so
the advice says what was measured and no figure is invented in code; without the file a
rationale says nothing measured.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

FILE = Path(__file__).with_name("measured_gain.json")
#: The keys bench/multipath.py writes (advice_figures) and the sentences below read.
KEYS = ("disjoint_vs_capacity", "disjoint_vs_tcp_low", "disjoint_vs_tcp_high", "shared_vs_capacity", "shared_share_against_tcp",
        "tcp_share_against_tcp")


@functools.lru_cache(maxsize=1)
def figures() -> dict | None:
    """The measured medians, or None where the bench has not written them."""
    try:
        fig = json.loads(FILE.read_text())
    except (OSError, ValueError):
        return None
    return fig if all(isinstance(fig.get(k), (int, float)) for k in KEYS) else None


def sentence(mode: str, cls: str) -> str:
    """The measured figures behind a mode, as a sentence to end its rationale ('' without them)."""
    f = figures()
    if f is None:
        return ""
    shared = (f"through one shared bottleneck MPTCP carried {f['shared_vs_capacity']:.0%} of it and took "
              f"{f['shared_share_against_tcp']:.0%} from a competing TCP flow (a second TCP flow took "
              f"{f['tcp_share_against_tcp']:.0%})")
    if mode == "aggregate":
        return (f" Measured (bench/RESULTS.md, multipath gain): over two disjoint bottlenecks one MPTCP "
                f"connection carried {f['disjoint_vs_capacity']:.0%} of their sum, {f['disjoint_vs_tcp_low']:.2f}x to "
                f"{f['disjoint_vs_tcp_high']:.2f}x single-path TCP on the better family; {shared}.")
    if mode == "backup":
        return f" Measured (bench/RESULTS.md, multipath gain): {shared}: no gain, only more than a fair share."
    if mode == "single-path" and cls == "congruent":
        return (f" Measured (bench/RESULTS.md, multipath gain): through one shared bottleneck a second subflow "
                f"gained nothing (MPTCP carried {f['shared_vs_capacity']:.0%} of it).")
    return ""
