#!/usr/bin/env python3
"""What each command costs on the real sample month (`make demo`'s): a fresh process per run,
wall time, CPU (user + system) and peak RSS, best of --repeat (bench/common.run_child), and
`congruency run`'s steps on the month from nothing, by step, against its compare.

    .venv/bin/python bench/commands.py [--repeat 3]

Works in bench/out/commands/ (the month run once, then every command on it); the result goes
to bench/out/commands.json, which bench/run.py renders into RESULTS.md ("Commands on the
sample month"). The times the docs state come from that table.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import render  # noqa: E402
from bench.common import ARCHIVE, OUT, machine_facts, repeat, run_child, write_json  # noqa: E402

MONTH = "2026-07"
#: The demo's `run` (Makefile `demo`).
RUN = ["run", "--month", MONTH, "--days", "30", "--times", "14:00", "--collectors", "route-views2,route-views6",
       "--archive-root", str(ARCHIVE), "--default-free-share", "0"]


def commands(data: Path, tmp: Path) -> list[tuple[str, list[str], str | None]]:
    """(label, congruency arguments, stdin text) of every command measured on the month."""
    d = ["--data-dir", str(data)]
    return [
        ("--help", ["--help"], None),
        ("advise --from 1403 --to 8.8.8.8", ["advise", "--from", "1403", "--to", "8.8.8.8", *d], None),
        ("advise (a source that is no VP)", ["advise", "--from", "22317", "--to", "5.149.143.1", "--to",
                                             "2001:6a8:8a00::1", *d], None),
        ("status --month", ["status", "--month", MONTH, *d], None),
        ("query vp_congruency", ["query", "vp_congruency", "--month", MONTH, *d], None),
        ("query --sql (count of rib_entries)", ["query", "--sql", "SELECT count(*) FROM rib_entries", *d], None),
        ("sql (piped)", ["sql", *d], "SELECT month, pairs FROM month_summary;"),
        ("report --month", ["report", "--month", MONTH, "--out", str(tmp / "month.html"), *d], None),
        ("report --trend", ["report", "--trend", "--out", str(tmp / "trend.html"), *d], None),
        ("export --format jsonl", ["export", "--format", "jsonl", "--month", MONTH, "--out", str(tmp / "t.jsonl"),
                                   *d], None),
        ("lake snapshots", ["lake", "snapshots", *d], None),
        ("run (everything done: skipped)", [*RUN, *d], None),
    ]


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/commands.py: every command on the real sample month, and `run`'s steps."""
    r = runs[-1]
    run = r["run"]
    steps = ", ".join(f"{k} {v:.1f} s" for k, v in run["steps"].items() if v is not None)
    intro = [f"`{r['command']}` on the real sample month {r['month']} (`make demo`'s: 843,626 entries, 2,167 pairs),",
             "each command a fresh process (its interpreter's start included), best of the runs; CPU is user +",
             "system time of its whole process tree. The docs state command times from this table.", "",
             f"`congruency run` of the month from nothing: {run['wall_s']:.1f} s wall, {run['cpu_s']:.1f} s CPU, "
             f"peak {run['peak_mib']:,} MiB; by step: {steps}."]
    rows = [[f"`congruency {c['command']}`", render.num(c["wall_s"]), render.num(c["cpu_s"]), f"{c['peak_mib']:,}"]
            for c in r["commands"]]
    return render.section("Commands on the sample month", intro, ["command", "wall s", "CPU s", "peak RSS MiB"], rows, "lrrr")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="runs per command, best reported (default 3)")
    ap.add_argument("--work", type=Path, default=OUT / "commands")
    a = ap.parse_args(argv)
    shutil.rmtree(a.work, ignore_errors=True)
    a.work.mkdir(parents=True)
    data = a.work / "data"
    exe = [sys.executable, "-m", "bgp_congruency.cli.main"]
    # The month from nothing, once: its steps' seconds as the run reports them.
    out = a.work / "run.json"
    first = run_child([*exe, *RUN, "--data-dir", str(data), "--json"], label="run", stdout=out)
    assert first.rc == 0, "the sample month's run failed"
    steps = json.loads(out.read_text().splitlines()[-1])["steps"]
    res: dict = {"month": MONTH, "run": {"wall_s": first.wall_s, "cpu_s": round(first.user_s + first.sys_s, 2),
                                         "peak_mib": first.maxrss >> 20,
                                         "steps": {k: v.get("seconds") for k, v in steps.items()}}}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-commands-") as tmp:
        for label, args, stdin in commands(data, Path(tmp)):
            if stdin is not None:  # through a shell: the text on the command's standard input
                feed = Path(tmp) / "stdin.sql"
                feed.write_text(stdin)
                cmd = ["/bin/sh", "-c", " ".join(map(_q, [*exe, *args])) + f" < {_q(str(feed))}"]
            else:
                cmd = [*exe, *args]
            best, runs = repeat(a.repeat, lambda: run_child(cmd, label=label))
            assert best.rc == 0, f"{label}: exit {best.rc}"
            rows.append({"command": label, "wall_s": best.wall_s, "cpu_s": round(best.user_s + best.sys_s, 2),
                         "peak_mib": best.maxrss >> 20, "runs": [r.wall_s for r in runs]})
            print(f"{label}: {best.wall_s:.2f} s wall, {best.user_s + best.sys_s:.2f} s CPU, "
                  f"{best.maxrss >> 20} MiB", file=sys.stderr)
    res["commands"] = rows
    res["command"] = "bench/commands.py" + (f" --repeat {a.repeat}" if a.repeat != 3 else "")
    res["machine"] = machine_facts()
    write_json(res, OUT / "commands.json", stdout=True)
    return 0


def _q(s: str) -> str:
    import shlex

    return shlex.quote(s)


if __name__ == "__main__":
    sys.exit(main())
