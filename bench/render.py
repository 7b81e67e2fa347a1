"""What RESULTS.md's sections share: number formats, a section with its table, and the list of
benches whose results bench/run.py merges (each bench module renders its own section: its
`section(runs)`, beside the code that measured it)."""
from __future__ import annotations

import importlib

from bench import common

#: Each bench's results: (key in results.json's `real`, its files in bench/out, the bench module
#: whose `section` renders them), in RESULTS.md's order.
BENCHES = (("steps", "steps-*.json", "steps"), ("endtoend", "endtoend-*.json", "endtoend"),
           ("generate", "generate-*.json", "synth"), ("hints", "hints-*.json", "hints"),
           ("commands", "commands.json", "commands"), ("memfloor", "memfloor-*.json", "memfloor"),
           ("duckdb_versions", "duckdb-versions-*.json", "duckdb_versions"), ("commits", "commits-*.json", "commits"),
           ("churn", "churn.json", "churn"), ("routes", "routes-*.json", "routes"),
           ("multipath", "multipath.json", "multipath"), ("relationships", "relationships*.json", "relationships"),
           ("reveal", "reveal*.json", "reveal"), ("route_simulation", "route_simulation.json", "route_simulation"),
           ("s3", "s3-compare*.json", "s3"), ("path_keys", "path-keys-*.json", "path_keys"))


def sections(real: dict) -> list[str]:
    """Every bench's section, from its results in `real` (a bench without results has none)."""
    lines: list[str] = []
    for key, _files, module in BENCHES:
        if real.get(key):
            lines += importlib.import_module(f"bench.{module}").section(real[key])
    return lines


def num(x, nd=2):
    return "-" if x is None else f"{x:,.{nd}f}"


def ratio(x):
    return "-" if x is None else f"{x:.2f}x"


def pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def section(title: str, intro: list[str], headers: list[str], rows: list[list], align: str) -> list[str]:
    """A RESULTS.md section: its heading, what the bench does, and its table."""
    return [f"## {title}", "", *intro, "", common.table(headers, rows, align=align), ""]


def scale_rows(scale: dict) -> list[list]:
    """A bench's fresh processes on the scale month: wall, CPU, peak RSS (largest process, tree)."""
    return [[f"`{k}`", num(v["wall_s"], 1), num(v["cpu_s"], 1), f"{v['peak_mib']:,}", f"{v['tree_peak_mib']:,}"]
            for k, v in scale.items() if isinstance(v, dict) and "wall_s" in v]
