"""Which months have published results: the one definition advise, query and report share.

A month is published when the compare job swapped its `month_summary` folder in (every
month it ran has one row there, even without pairs; the job publishes a month's tables
together). Dot files (being written) and `_` files do not count; the job's `_staging/`
tree is outside every table's folder.
"""
from __future__ import annotations

from pathlib import Path

from bgp_congruency.common import layout
from bgp_congruency.common.errors import BadInput


class NoResults(BadInput):
    """The month asked for has no published results: a bad argument (exit 2)."""


def _has_files(d: Path) -> bool:
    return any(f.is_file() and not f.name.startswith((".", "_")) for f in d.glob("*.parquet"))


def months(root: str | Path, table: str = "month_summary") -> list[str]:
    """Months (YYYY-MM) with at least one published file of `table`, oldest first."""
    return [m for m in layout.months_in(root, table) if _has_files(layout.month_dir(root, table, m))]


def require(root: str | Path, month: str) -> None:
    """NoResults (the same one line for every command) unless `month` is published."""
    have = months(root)
    if month not in have:
        span = f"{have[0]}..{have[-1]}" if have else "none"
        raise NoResults(f"month {month}: no published results in {root} (published months: {span}; "
                        "run congruency run for the month first)")


def data_files(folder: str | Path) -> list[str]:
    """Every file under `folder` that readers see: hidden (dot: being written) and `_` names
    (markers, staging) skipped at every level, as Spark and the DuckDB globs skip them; sorted."""
    import os

    out = []
    for dp, dns, names in os.walk(folder):
        dns[:] = sorted(n for n in dns if not n.startswith((".", "_")))
        out += [os.path.join(dp, n) for n in sorted(names) if not n.startswith((".", "_"))]
    return out


def listing(root: str | Path, tables, months_: list[str] | None = None) -> list:
    """(path, size, mtime_ns) of every published data file of these tables (and months):
    what a step that reads them read, for its fingerprint (runner/state.py)."""
    import os

    root = Path(root)
    out = []
    for t in tables:
        base = root / t
        for d in ([layout.month_dir(root, t, m) for m in months_] if months_ is not None else [base]):
            for f in data_files(d):
                try:
                    st = os.stat(f)
                except FileNotFoundError:  # swapped out by a publish meanwhile: not there
                    continue
                out.append((os.path.relpath(f, root), st.st_size, st.st_mtime_ns))
    return out


def write_rows(root: str | Path, table: str, month: str, name: str, rows: list[dict], schema) -> Path:
    """A few rows of a documented table (`schema`, common/tables.py) as the file `name` of its
    month folder, written beside it and renamed into place: readers see the old file or the
    new one, never half of one. `month` lives in the folder name, not in the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bgp_congruency.common import atomic

    final = Path(layout.month_dir(root, table, month)) / name
    final.parent.mkdir(parents=True, exist_ok=True)
    with atomic.replacing(final) as tmp:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema).drop_columns(["month"]), tmp)
    return final
