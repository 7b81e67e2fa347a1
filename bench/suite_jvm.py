#!/usr/bin/env python3
"""The test suite's JVM setting (tests/support/jvm.py: the JIT's first tier only) against the
JVM's default, as the suite meets it: a fresh local Spark session (local[2], the suite's
settings) comparing three hand-made months one after the other, the first on a cold JVM.

Each run is a process of its own; rounds alternate which setting goes first. Prints the
session's start and each month's compare, per run, and writes them to bench/out/suite-jvm.json (the last run's).
Not a product figure: the product leaves the JIT at the JVM's default.

    .venv/bin/python bench/suite_jvm.py [--rounds 2] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import OUT, ROOT  # noqa: E402

MONTHS = 3


def child() -> dict:
    """One fresh session and MONTHS hand-made months: the seconds of each."""
    from bgp_congruency.common.config import load
    from bgp_congruency.pipeline import job
    from bgp_congruency.pipeline import spark_session as sparkmod
    from tests.support.jvm import SESSION_CONF
    from tests.support.month import HAND_CASES, write_entries

    t0 = time.monotonic()
    s = sparkmod.session("local[2]", dict(SESSION_CONF), app="bench-suite-jvm")  # as the suite's `spark`
    out = {"session_s": round(time.monotonic() - t0, 2), "months_s": []}
    cases = list(HAND_CASES.items())[:MONTHS]
    with tempfile.TemporaryDirectory() as tmp:
        for month, (make, _cov) in cases:
            write_entries(Path(tmp), month, make())
        cfg0 = load()
        for month, (_make, cov) in cases:
            cfg = replace(cfg0.with_overrides(data_dir=tmp), method=replace(cfg0.method, min_coverage=cov))
            t = time.monotonic()
            res = job.compare_month(cfg, month, spark=s)
            if res.error:
                raise SystemExit(f"error: {month}: {res.error}")
            out["months_s"].append(round(time.monotonic() - t, 2))
    s.stop()
    return out


def run_one(setting: str) -> dict:
    from tests.support import jvm

    env = dict(os.environ)
    env.pop("SPARK_CONF_DIR", None)  # "default": the product's own conf dir (pipeline/spark_session)
    if setting == "first-tier":
        env["SPARK_CONF_DIR"] = str(jvm.conf_dir())
    p = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, env=env, cwd=ROOT)
    lines = p.stdout.strip().splitlines()
    if p.returncode or not lines:
        why = (p.stderr.strip().splitlines() or [f"exit {p.returncode}, nothing printed"])[-1]
        raise SystemExit(f"error: the {setting} run failed: {why}")
    return {"setting": setting, **json.loads(lines[-1])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2, help="rounds of both settings, alternating (default 2)")
    ap.add_argument("--json", action="store_true", help="print the runs as JSON")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child()))
        return 0
    if a.rounds < 1:
        ap.error("--rounds: expected at least 1")
    from bgp_congruency.pipeline.spark_session import java_problem

    if problem := java_problem():
        raise SystemExit(f"error: {problem}")
    runs = []
    for r in range(a.rounds):
        for setting in (("default", "first-tier") if r % 2 == 0 else ("first-tier", "default")):
            print(f"round {r + 1}: {setting} ...", file=sys.stderr, flush=True)
            runs.append(run_one(setting))
    result = {"when": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "months": MONTHS, "runs": runs}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "suite-jvm.json").write_text(json.dumps(result, indent=1) + "\n")
    if a.json:
        print(json.dumps(result))
        return 0
    print(f"{'setting':<11} {'session s':>9}  months s (first on a cold JVM)")
    for x in runs:
        print(f"{x['setting']:<11} {x['session_s']:>9.2f}  {', '.join(f'{m:.2f}' for m in x['months_s'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
