"""The months the suite computes once per session (tests/conftest.py makes each a session
fixture), each in a data dir of its own that tests only read. A test that changes one works
on a copy (`writable`), so every test sees the month as it was computed, in any order.

- `sample`: the real 2026-07-30 14:00 route-views2 + route-views6 RIBs through `congruency
  run` (the demo's month: ingest, compare, hints, the catalog's upkeep, the reports).
- `sample_evaluated`: a copy of `sample` with the selector's held-out evaluation published.
- `generated`: a generated month (400 ASes, 12 VPs, two snapshots; docs/guide.md's
  `congruency synth --ases 400 --vps 12`) run and evaluated (VPs held out); its archive has
  the generator's truth (SYNTH.json).
- `two_months`: two months of a small generated archive (120 ASes, 10 VPs) run one after
  the other: transitions, re-runs, read-only mounts.
- `hint_month`: the path selector's hand-made month (tests/support/hintdata.py).

Read-only is checked, not assumed: each data dir's files (names, sizes, modification times)
are recorded when it is built and compared when the session ends (`Untouched`); a test
that wrote into one fails the session naming the files.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from bgp_congruency.common.config import Config, load
from tests.support.data import ARCHIVE

#: The test config of every computed month: DuckDB, bounded for a 2-core CI machine.
CONFIG_TOML = 'engine = "duckdb"\nduckdb_threads = 2\nduckdb_memory_limit = "1GB"\n'
SAMPLE_MONTH = "2026-07"
#: The demo's selection (Makefile `demo`).
SAMPLE_SELECTION = dict(days=(30,), times=("14:00",), collectors=("route-views2", "route-views6"))
GEN_MONTH = "2026-07"
TWO_MONTHS = ("2026-01", "2026-02")


@dataclass(frozen=True)
class Computed:
    """A computed month: its data dir (read only), the config that made it, and for a
    generated one the archive it was ingested from."""

    data: Path
    cfg: Config
    config_file: Path
    archive: Path | None = None


def config_file(where: Path) -> Path:
    p = where / "cfg.toml"
    p.write_text(CONFIG_TOML)
    return p


def build_sample(base: Path, ingested: Path) -> Computed:
    """`congruency run` of the real sample month, in process, on a copy of the ingested files
    (the run's ingest finds them done)."""
    from bgp_congruency.runner import month as runner
    from tests.support.month import copy_ingested

    data = base / "data"
    copy_ingested(ingested, data, SAMPLE_MONTH)
    cf = config_file(base)
    cfg = load(cf).with_overrides(data_dir=data, archive_root=str(ARCHIVE), **SAMPLE_SELECTION)
    cfg = replace(cfg, method=replace(cfg.method, min_coverage=0.0))
    [s] = runner.run_months(cfg, [SAMPLE_MONTH])
    assert s["ok"], s["steps"]
    return Computed(data, cfg, cf)


def build_evaluated(base: Path, sample: Computed) -> Computed:
    """A copy of the sample with its held-out evaluation published (selector_eval)."""
    from bgp_congruency.selector import evaluate as E
    from bgp_congruency.selector import proxies as P

    data = writable(sample.data, base / "data")
    cfg = sample.cfg.with_overrides(data_dir=data)
    E.publish(cfg, SAMPLE_MONTH, P.answers(cfg, SAMPLE_MONTH), ("vp",))
    return Computed(data, cfg, sample.config_file)


def build_generated(base: Path) -> Computed:
    """The generated month docs/guide.md uses, run and evaluated (each VP held out)."""
    from bgp_congruency.runner import month as runner
    from bgp_congruency.selector import evaluate as E
    from bgp_congruency.selector import proxies as P
    from bgp_congruency.synth.generate import generate

    archive = base / "archive"
    generate(archive, seed=11, ases=400, vps=12, months=(GEN_MONTH,), snapshots_per_month=2,
             ground_truth=False, workers=1)
    cf = config_file(base)
    cfg = load(cf).with_overrides(data_dir=base / "data", archive_root=str(archive), days=(2,), times=("00:00",),
                                  collectors=("route-views2", "route-views6", "rrc00", "rrc01"))
    cfg = replace(cfg, method=replace(cfg.method, min_coverage=0.5))
    [s] = runner.run_months(cfg, [GEN_MONTH])
    assert s["ok"], s["steps"]
    E.publish(cfg, GEN_MONTH, P.answers(cfg, GEN_MONTH), ("vp",))
    return Computed(base / "data", cfg, cf, archive)


def build_two_months(base: Path) -> Computed:
    """Two generated months run one after the other: the transitions every other order must give."""
    from bgp_congruency.runner import month as runner
    from bgp_congruency.synth.generate import generate

    archive = base / "archive"
    generate(archive, seed=7, ases=120, vps=10, months=TWO_MONTHS, snapshots_per_month=1, ground_truth=False,
             workers=1)
    cf = config_file(base)
    cfg = load(cf).with_overrides(data_dir=base / "data", archive_root=str(archive), days=(1,), times=("00:00",),
                                  collectors=("route-views2", "route-views6"))
    cfg = replace(cfg, method=replace(cfg.method, min_coverage=0.5))
    for s in runner.run_months(cfg, list(TWO_MONTHS)):
        assert s["ok"], s["steps"]
    return Computed(base / "data", cfg, cf, archive)


def build_hint_month(base: Path) -> Computed:
    from tests.support import hintdata

    data = base / "data"
    hintdata.publish_synthetic(data)
    return Computed(data, load().with_overrides(data_dir=data), config_file(base))


def writable(src: Path, dst: Path) -> Path:
    """A copy of a computed data dir to change: copied, then its catalog relocated (as a
    user who copies a data dir to write in it runs `congruency lake relocate`)."""
    from tests.support.month import copy_data_dir

    return copy_data_dir(src, dst)


class Untouched:
    """A data dir's files as built; `changed()` names what differs since."""

    def __init__(self, data: Path):
        self.data = data
        self.files = self._scan()

    def _scan(self) -> dict[str, tuple[int, int]]:
        out = {}
        for dp, _dn, names in os.walk(self.data):
            for n in names:
                p = Path(dp) / n
                st = p.lstat()
                out[str(p.relative_to(self.data))] = (st.st_size, st.st_mtime_ns)
        return out

    def changed(self) -> list[str]:
        now = self._scan()
        return sorted(k for k in set(now) | set(self.files) if now.get(k) != self.files.get(k))
