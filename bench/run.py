#!/usr/bin/env python3
"""End-to-end benchmark at scale on synthetic archives: ~N million RIB entries per --scale N.

Per scale: generate (or reuse, cached in bench/out/synth-N) a synthetic month with the
synth generator (no ground truth), then measure per stage, every run a fresh process,
round-robin, best of --repeat:
  ingest   each backend through ingest.run.decode_file (framing check included) over all
           the month's files, next to `bgpdump -m` and `bzip2 -dc`/`gzip -dc` on the same files;
  compare  the Spark engine's job (local[*]) next to a Spark scan floor;
  duckdb   the DuckDB engine's job next to a DuckDB scan floor (both engines' runs are
           interleaved in one bench/compare.py measurement; untimed, the six tables of the
           two engines are compared row for row).
Results are merged into bench/results.json (the data; later runs update it), from which
bench/RESULTS.md (figures, ratios, peak RSS, machine facts, versions, the exact command,
a cost model for a paper-scale month) and bench/RESULTS.png (time and peak RSS against
entries for each stage) are generated.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench import compare as cmp  # noqa: E402
from bench import ingest as ing  # noqa: E402
from bench.common import MiB, mib, rate  # noqa: E402

RESULTS_MD = common.BENCH / "RESULTS.md"
RESULTS_JSON = common.BENCH / "results.json"
RESULTS_PNG = common.BENCH / "RESULTS.png"
STAGES = ("ingest", "compare", "duckdb")
SNAPSHOTS = 2


def scale_dir(n: int) -> Path:
    return common.OUT / f"synth-{n}"


def run_scale(n: int, *, stages, backends, repeat: int, min_coverage: float | None, con, timeout_s: float) -> dict:
    root = scale_dir(n)
    params = common.synth_params(n * 1_000_000, per=common.SYNTH_ALL, snapshots=SNAPSHOTS)
    t0 = time.perf_counter()
    listing = common.synth_archive(root / "archive", params, con)
    files = [root / "archive" / f["path"] for f in listing["files"]]
    entries = listing["entries"]
    out = {"scale": n, "entries": entries, "files": len(files), "synth": params,
           "bytes": sum(f.stat().st_size for f in files), "month": common.SYNTH_MONTH, "stages": {}}
    con.rule(f"scale {n}: {entries:,} entries in {len(files)} files ({out['bytes'] / MiB:.0f} MiB)")
    data = root / "data"
    keep_backend = backends[0] if backends else None
    if "ingest" in stages:
        con.print("[bold]ingest[/]")
        res = ing.measure(files, backends=backends, repeat=repeat, work=root / "ingest-work", con=con,
                          keep={keep_backend: data} if keep_backend else None, timeout_s=timeout_s)
        shutil.rmtree(root / "ingest-work", ignore_errors=True)
        out["stages"]["ingest"] = res["variants"]
        if res["entries"] != entries:
            con.print(f"[red]decoded {res['entries']:,} entries, the generator wrote {entries:,}[/]")
    from bgp_congruency.common import routes

    have_data = bool(routes.month_files(data, common.SYNTH_MONTH))
    if ("compare" in stages or "duckdb" in stages) and not have_data:
        why = f"no ingested data in {data} (run the ingest stage first: --stages ingest,...)"
        con.print(f"[red]not run: {', '.join(st for st in stages if st != 'ingest')}: {why}[/]")
        out["not_run"] = {st: why for st in stages if st != "ingest"}
        out["seconds_total"] = round(time.perf_counter() - t0, 1)
        return out
    engines = [e for e, st in (("spark", "compare"), ("duckdb", "duckdb")) if st in stages]
    if engines:
        con.print(f"[bold]compare job ({', '.join(engines)})[/]")
        res = cmp.measure(data, common.SYNTH_MONTH, min_coverage, repeat=repeat, con=con, timeout_s=timeout_s,
                          engines=engines)
        for e, st in (("spark", "compare"), ("duckdb", "duckdb")):
            if e in engines:
                out["stages"][st] = {k: v for k, v in res["variants"].items() if k.startswith(e)}
        out["rows"] = res["rows"]
        if res.get("check"):
            out["check"] = res["check"]
        shutil.rmtree(common.OUT / "compare-work", ignore_errors=True)
    out["seconds_total"] = round(time.perf_counter() - t0, 1)
    return out


# --- RESULTS.md -------------------------------------------------------------------------

def load_previous() -> dict:
    return json.loads(RESULTS_JSON.read_text()) if RESULTS_JSON.is_file() else {}


def _s(x, nd=2):
    return "-" if x is None else f"{x:,.{nd}f}"


def _ratio(x):
    return "-" if x is None else f"{x:.2f}x"


def _runs(s: dict) -> list[tuple[dict, list[str]]]:
    """The runs behind a scale's figures: (command, date, repeat, load) -> the stages it measured."""
    meta = s.get("stage_runs") or {st: s for st in s["stages"]}  # older results: one run per scale
    out: dict[tuple, list[str]] = {}
    for st in s["stages"]:
        m = meta.get(st, s)
        out.setdefault((m["command"], m["date"], m["repeat"], m.get("load_after")), []).append(st)
    return [({"command": c, "date": d, "repeat": r, "load_after": lo}, sts) for (c, d, r, lo), sts in out.items()]


def render_md(doc: dict) -> str:
    f = doc["machine"]
    scales = sorted(doc["scales"].values(), key=lambda s: s["scale"])
    lines = [
        "# Benchmarks",
        "",
        "Generated by `bench/run.py` from [results.json](results.json) (do not edit by hand: every run merges",
        "its figures into results.json and re-renders this file).",
        "Every figure is the best of the runs made (wall time of a fresh process tree per run, runs of",
        "a stage interleaved round-robin); peak RSS is the largest seen over those runs. Run each",
        "benchmark alone: the load average after each run is listed with its command (it counts the",
        "benchmark's own processes, about 2 on this 2-core machine); a busy machine adds 10-30% or more.",
        "",
        "## Machine and versions",
        "",
        common.table(["", ""], [[k, v] for k, v in f.items()], align="ll"),
        "",
        "## Commands",
        "",
        *[f"- scale {s['scale']}, {', '.join(stages)}: `{m['command']}` ({m['date']}, repeat {m['repeat']}"
          + (f", load after {m['load_after']})" if m.get("load_after") else ")")
          for s in scales for m, stages in _runs(s)],
        "",
        "Synthetic archives: `synth.generate` (seed 1, month 2026-07, "
        f"{SNAPSHOTS} snapshots, 4 collectors: route-views2 .bz2 IPv4, route-views6 .bz2 IPv6, rrc00/rrc01 .gz both), "
        "no ground truth.",
        "",
        "Peak RSS columns: **max proc** = `ru_maxrss` of the launcher's RUSAGE_CHILDREN after the whole",
        "tree is reaped (the largest single process: the JVM for Spark, python for ingest and DuckDB;",
        "a ~5 MiB floor from the launcher's fork); **tree** = largest sampled (0.1 s) sum of RSS over",
        "the process tree (python + JVM, python + bgpdump).",
        "",
        "## Ingest (all files of the month, one after another, one process)",
        "",
        "Ratio = time / time of `bgpdump -m` on the same files (below 1 is faster).",
        "",
    ]
    rows = []
    for s in scales:
        for name, v in s["stages"].get("ingest", {}).items():
            rows.append([s["scale"], f"{s['entries']:,}", name, _s(v["seconds"]), rate(v["entries_per_s"]),
                         _ratio(v["time_vs_bgpdump_m"]), _s(v.get("cpu_s"), 1), mib(v["maxrss_bytes"]),
                         mib(v["tree_peak_bytes"])])
    lines += [common.table(["scale", "entries", "variant", "seconds", "entries/s", "vs bgpdump -m", "CPU s",
                            "peak RSS max proc", "peak RSS tree"], rows, align="rrlrrrrrr"), ""]
    lines += ["## Compare job: Spark engine vs its scan floor (local[*])", "",
              "Seconds from a ready SparkSession to the month published (job) or counted (floor: the same",
              "Parquet read as the job, every job column touched); session start (JVM) reported apart.",
              "Ratio = job time / floor time. Target (issue 9): at most 5x at scale 10.", ""]
    rows = []
    for s in scales:
        for name, v in s["stages"].get("compare", {}).items():
            rows.append([s["scale"], f"{v.get('rows') or s['entries']:,}", name, _s(v["work_s"]), rate(v["rows_per_s"]),
                         _ratio(v["time_vs_floor"]), _s(v["session_s"], 1), _s(v.get("cpu_s"), 0),
                         mib(v["maxrss_bytes"]), mib(v["jvm_hwm_bytes"]), mib(v["tree_peak_bytes"])])
    lines += [common.table(["scale", "rows", "variant", "seconds", "rows/s", "vs floor", "session s",
                            "CPU s (process)", "peak RSS max proc", "JVM VmHWM", "peak RSS tree"], rows,
                           align="rrlrrrrrrrr"), ""]
    lines += ["## Compare job: DuckDB engine vs its scan floor (in-process, all cores)", "",
              "Seconds to the month published, all six tables (job), or to the same Parquet files read with",
              "every job column touched (floor), in a fresh process each; same memory limit and threads.",
              "Ratio = job time / floor time. Target (issue 9): at most 2x at scale 10. `check`: the six",
              "tables of this run compared row for row with the Spark engine's of the same run.", ""]
    rows = []
    for s in scales:
        chk = s.get("check") or {}
        for name, v in (s["stages"].get("duckdb") or {}).items():
            if not isinstance(v, dict) or "work_s" not in v or "time_vs_floor" not in v:
                continue  # the pairs-only query of earlier runs
            # a ratio to the Spark job only where one run measured both (a partial run merges its stages)
            meta = s.get("stage_runs") or {}
            same = meta.get("compare") == meta.get("duckdb")
            job = (s["stages"].get("compare") or {}).get("spark job", {}).get("work_s") if same else None
            rows.append([s["scale"], f"{v.get('rows') or s['entries']:,}", name, _s(v["work_s"]), rate(v["rows_per_s"]),
                         _ratio(v["time_vs_floor"]), _ratio(v["work_s"] / job if job and v["work_s"] and name == "duckdb job" else None),
                         _s(v.get("cpu_s"), 0), mib(v["maxrss_bytes"]),
                         ("identical" if chk.get("identical") else "DIFFERENT" if chk else "-") if name == "duckdb job" else ""])
    lines += [common.table(["scale", "rows", "variant", "seconds", "rows/s", "vs floor", "vs Spark job",
                            "CPU s (process)", "peak RSS", "check"], rows, align="rrlrrrrrrl"), ""]
    lines += cost_model(doc)
    real = doc.get("real") or {}
    if real:
        lines += ["## Real data: the 2026-07-30 14:00 route-views2 + route-views6 pair", ""]
        if real.get("ingest"):
            r = real["ingest"]
            lines += [f"`{r.get('command', 'bench/ingest.py')}` on route-views2 rib.20260730.1400.bz2 "
                      f"({r['entries']:,} entries):", ""]
            rows = [[n, _s(v["seconds"]), rate(v["entries_per_s"]), _ratio(v["time_vs_bgpdump_m"]),
                     mib(v["maxrss_bytes"]), mib(v["tree_peak_bytes"])] for n, v in r["variants"].items()]
            lines += [common.table(["variant", "seconds", "entries/s", "vs bgpdump -m", "peak RSS max proc",
                                    "peak RSS tree"], rows), "", *_targets(r)]
        if real.get("ingest_synth"):
            for r in real["ingest_synth"]:
                what = ("one synthetic route-views2 RIB" if "--synth-entries" in (r.get("command") or "")
                        else "the same RIB")
                lines += [f"`{r.get('command')}`: {what}, {r['entries']:,} entries"
                          + (", decompressed first (raw MRT)" if "--raw" in (r.get("command") or "") else "")
                          + (", every variant pinned to one CPU" if "--one-core" in (r.get("command") or "") else "")
                          + ":", ""]
                rows = [[n, _s(v["seconds"]), rate(v["entries_per_s"]), _ratio(v["time_vs_bgpdump_m"]),
                         mib(v["maxrss_bytes"]), mib(v["tree_peak_bytes"])] for n, v in r["variants"].items()]
                lines += [common.table(["variant", "seconds", "entries/s", "vs bgpdump -m", "peak RSS max proc",
                                        "peak RSS tree"], rows), "", *_targets(r)]
        if real.get("compare"):
            r = real["compare"]
            lines += [f"`{r.get('command', 'bench/compare.py')}` ({r['rows']:,} rows, min_coverage "
                      f"{r.get('min_coverage')}):", ""]
            rows = [[n, _s(v["work_s"]), rate(v["rows_per_s"]), _ratio(v["time_vs_floor"]), _s(v["session_s"], 1),
                     mib(v["maxrss_bytes"]), mib(v["jvm_hwm_bytes"]), mib(v["tree_peak_bytes"])]
                    for n, v in r["variants"].items()]
            lines += [common.table(["variant", "seconds", "rows/s", "vs floor", "session s", "peak RSS max proc",
                                    "JVM VmHWM", "peak RSS tree"], rows), ""]
    lines += _steps_section(real.get("steps") or []) + _endtoend_section(real.get("endtoend") or [])
    lines += _generate_section(real.get("generate") or []) + _hints_section(real.get("hints") or [])
    lines += _commands_section(real.get("commands") or [])
    lines += _memfloor_section(real.get("memfloor") or []) + _versions_section(real.get("duckdb_versions") or [])
    lines += _commits_section(real.get("commits") or [])
    lines += _churn_section(real.get("churn") or []) + _routes_section(real.get("routes") or [])
    lines += _multipath_section(real.get("multipath") or [])
    lines += _relationships_section(real.get("relationships") or [])
    lines += _reveal_section(real.get("reveal") or [])
    lines += _route_simulation_section(real.get("route_simulation") or [])
    lines += _s3_section(real.get("s3") or [])
    if doc.get("notes"):
        lines += ["## What limits each stage", "", *[f"- {n}" for n in doc["notes"]], ""]
    lines += ["![time and peak RSS against entries](RESULTS.png)", ""]
    return "\n".join(lines)


def _steps_section(profiles: list[dict]) -> list[str]:
    """bench/steps.py's profiles: the compare job step by step, engines side by side per month."""
    if not profiles:
        return []
    lines = ["## Compare job by step", "",
             "`bench/steps.py` (one fresh process per engine, nothing else running): wall seconds from each",
             "step's start to the next one's; a view is paid by the first step that reads it (listed in",
             "brackets). Spark's session start is not counted.", ""]
    by_data: dict[str, list[dict]] = {}
    for p in profiles:
        by_data.setdefault(p["data_dir"], []).append(p)
    for data, ps in by_data.items():
        ps = sorted(ps, key=lambda p: p["engine"], reverse=True)  # spark, duckdb
        names: list[str] = []
        for p in ps:
            names += [r["step"] for r in p["steps"] if r["step"] not in names]
        cell = {(j, r["step"]): r for j, p in enumerate(ps) for r in p["steps"]}  # a column per profile
        rows = []
        for n in names:
            paid = next((", ".join(c["views_paid"]) for j in range(len(ps))
                         if (c := cell.get((j, n))) and c["views_paid"]), "")
            rows.append([n + (f" (+ {paid})" if paid else ""),
                         *[_s(cell[(j, n)]["seconds"]) if (j, n) in cell else "-" for j in range(len(ps))]])
        rows.append(["**total**", *[f"**{_s(p['total_s'])}**" for p in ps]])
        heads = [p["engine"] + (f" {p['memory_limit']}, K={p.get('partitions', 1)}" if p.get("memory_limit") else "")
                 + " s" for p in ps]
        lines += [f"{data} ({ps[0].get('rows', 0):,} rows), month {ps[0]['month']}: "
                  + "; ".join(f"`{p.get('command', 'bench/steps.py')}`" for p in ps), "",
                  common.table(["step", *heads], rows, align="l" + "r" * len(ps)), ""]
    return lines


def _section(title: str, intro: list[str], headers: list[str], rows: list[list], align: str) -> list[str]:
    """A RESULTS.md section: its heading, what the bench does, and its table."""
    return [f"## {title}", "", *intro, "", common.table(headers, rows, align=align), ""]


def _endtoend_section(runs: list[dict]) -> list[str]:
    """bench/endtoend.py: `congruency run` on a generated archive of a real month's size."""
    if not runs:
        return []
    intro = ["`bench/endtoend.py --scale N[,N] [--memory-limit L] [--engine spark]`: the synthetic archive",
             "generated (or reused), then one `congruency run` (ingest, compare with the engine shown: DuckDB at",
             "the memory limit shown, or Spark local[*] with spark.driver.memory 4g; warehouse, reports, hints)",
             "as a child process; its tree's RSS, the month's staging folder (where DuckDB spills; with Spark,",
             "also Spark's local dirs) and the data dir sampled every 0.5 s (the data dir every 10 s). In",
             "brackets, a step's peak RSS (each step placed by the seconds the run records for it). Compare",
             "rate: entries per second of the compare step; where scales ran in one invocation, the smallest",
             "scale's rate over this one's (1.0x: linear)."]
    rows = []
    for r in sorted(runs, key=lambda r: (r["scale"], r.get("engine", "duckdb"))):
        peaks = r.get("step_peak_rss_mib") or {}
        steps = ", ".join(f"{k} {v:,.0f} s" + (f" ({peaks[k] / 1024:.1f} GiB)" if peaks.get(k) else "")
                          for k, v in (r.get("steps") or {}).items() if v is not None)
        compare = (r.get("steps") or {}).get("compare")
        rate = f"{r['entries'] / compare / 1e3:,.0f} k/s" if compare and r.get("entries") else "-"
        if r.get("compare_rate_vs_scale"):
            rate += f" ({r['compare_rate_vs_scale']['ratio']}x vs {r['compare_rate_vs_scale']['scale']})"
        rows.append([r["scale"], r.get("engine", "duckdb"), f"{r.get('entries') or 0:,}",
                     (r.get("synth") or {}).get("snapshots_per_month", "-"), r.get("memory_limit") or "-", _s(r.get("generate_s"), 0), _s(r.get("run_wall_s"), 0),
                     steps, rate, f"{r.get('peak_rss_mib', 0):,} MiB", f"{r.get('peak_staging_mib', 0):,} MiB",
                     f"{r.get('data_dir_mib', 0):,} MiB", f"{r.get('peak_data_dir_mib', 0):,} MiB",
                     f"{r.get('archive_mib', 0):,} MiB",
                     "yes" if r.get("ok") else "**no**"])
    return _section("A real month's size end to end", intro,
                    ["scale", "engine", "entries", "snapshots", "memory limit", "generate s", "run s", "run steps",
                     "compare rate", "peak RSS (tree)", "peak spill + staging", "data dir after", "data dir peak",
                     "archive", "ok"],
                    rows, "rlrrlrrlrrrrrrl")


def _generate_section(runs: list[dict]) -> list[str]:
    """bench/synth.py: the generator with one writer and with one forked writer per CPU."""
    if not runs:
        return []
    intro = ["`bench/synth.py --scale N`: the same parameters generated twice, side by side, without ground",
             "truth: one process writing the files, then one forked writer per CPU after routing. Routing is",
             "the same single-process pass in both."]
    rows = []
    for r in sorted(runs, key=lambda r: r["scale"]):
        a, b = r["one_writer"], r["forked_writers"]
        rows.append([r["scale"], f"{r['entries']:,}", r["files"], f"{r['synth']['ases']:,}", _s(a["routing_s"]),
                     _s(a["writing_s"]), f"{b['workers']}", _s(b["writing_s"]), _s(a["seconds"]), _s(b["seconds"]),
                     f"{r['speedup']}x", "yes" if r["identical_files"] else "**no**"])
    return _section("The synthetic generator: one writer vs forked writers", intro,
                    ["scale", "entries", "files", "ASes", "routing s", "writing s (1)", "writers",
                     "writing s (forked)", "total s (1)", "total s (forked)", "speedup", "same files"],
                    rows, "rrrrrrrrrrrl")


def _hints_section(runs: list[dict]) -> list[str]:
    """bench/hints.py: the hints table and its JSON Lines export, each against its floor."""
    if not runs:
        return []
    intro = ["`bench/hints.py --pairs N`: a generated month of N pairs. Hints: `selector.table.publish` vs",
             "DuckDB joining the pairs with their paths into Parquet. Export: `tunnels.jsonl.write` (a batch",
             "at a time through DuckDB's `to_json`) vs the per-row writer it replaced (`jsonl.line` per row)",
             "and DuckDB's own `COPY ... (FORMAT json)`, each in its own process."]
    rows = []
    for r in sorted(runs, key=lambda r: r["pairs"]):
        h, j = r["hints"], r.get("jsonl") or {}
        rss = j.get("rss_mib") or {}
        rows.append([f"{r['pairs']:,}", _s(h["publish_s"]), _s(h["floor_s"]), f"{h['ratio']}x",
                     f"{j.get('bytes', 0) / 2**20:,.0f} MiB", _s(j.get("write_s")), _s(j.get("per_row_s")),
                     _s(j.get("floor_s")), f"{j.get('speedup')}x", f"{j.get('ratio')}x",
                     f"{rss.get('write', 0):,} / {rss.get('per_row', 0):,} MiB",
                     "yes" if j.get("byte_identical") else "**no**"])
    return _section("Path selector: the hints table and the JSON Lines export", intro,
                    ["pairs", "publish s", "floor s", "ratio", "export size", "export s", "per-row s",
                     "COPY s", "speedup", "vs COPY", "peak RSS (export / per-row)", "same bytes"],
                    rows, "rrrrrrrrrrrl")


def _commands_section(runs: list[dict]) -> list[str]:
    """bench/commands.py: every command on the real sample month, and `run`'s steps."""
    if not runs:
        return []
    r = runs[-1]
    run = r["run"]
    steps = ", ".join(f"{k} {v:.1f} s" for k, v in run["steps"].items() if v is not None)
    intro = [f"`{r['command']}` on the real sample month {r['month']} (`make demo`'s: 843,626 entries, 2,167 pairs),",
             "each command a fresh process (its interpreter's start included), best of the runs; CPU is user +",
             "system time of its whole process tree. The docs state command times from this table.", "",
             f"`congruency run` of the month from nothing: {run['wall_s']:.1f} s wall, {run['cpu_s']:.1f} s CPU, "
             f"peak {run['peak_mib']:,} MiB; by step: {steps}."]
    rows = [[f"`congruency {c['command']}`", _s(c["wall_s"]), _s(c["cpu_s"]), f"{c['peak_mib']:,}"]
            for c in r["commands"]]
    return _section("Commands on the sample month", intro, ["command", "wall s", "CPU s", "peak RSS MiB"], rows, "lrrr")


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _scale_rows(scale: dict) -> list[list]:
    """A bench's fresh processes on the scale month: wall, CPU, peak RSS (largest process, tree)."""
    return [[f"`{k}`", _s(v["wall_s"], 1), _s(v["cpu_s"], 1), f"{v['peak_mib']:,}", f"{v['tree_peak_mib']:,}"]
            for k, v in scale.items() if isinstance(v, dict) and "wall_s" in v]


def _relationships_section(runs: list[dict]) -> list[str]:
    """bench/relationships.py: the inference against the generator's truth, the real sample
    against CAIDA's 2016 file, and its time and memory at scale beside the compare's."""
    if not runs:
        return []
    r = next((x for x in reversed(runs) if x.get("real")), runs[-1])
    intro = [f"`{r['command']}`: each generated month (`congruency synth --ases N --vps 12`, seed 1, 2 snapshots)",
             "run, its `as_relationships` scored per family against the generator's relationships (PPV and TPR;",
             "hybrid links: a relationship differing between the families, against the true ones), and the input",
             "choice (representative paths, the product's, against every observation's distinct cleaned path)."]
    rows = []
    for g in r.get("generated") or []:
        for afi in ("4", "6"):
            sc = g["scores"][afi] if afi in g["scores"] else g["scores"][int(afi)]
            inp = (g.get("input") or {}).get(afi) or (g.get("input") or {}).get(int(afi)) or {}
            dist = inp.get("distinct") or {}
            rows.append([f"{g['ases']:,} ASes", f"IPv{afi}", f"{sc['links']:,}", _pct(sc["p2c"]["ppv"]),
                         _pct(sc["p2c"]["tpr"]), _pct(sc["p2p"]["ppv"]), _pct(sc["p2p"]["tpr"]),
                         f"{_pct((dist.get('p2c') or {}).get('ppv'))} / {_pct((dist.get('p2c') or {}).get('tpr'))}"])
    lines = _section("AS relationships per family (bench/relationships.py)", intro,
                     ["month", "family", "links", "p2c PPV", "p2c TPR", "p2p PPV", "p2p TPR",
                      "p2c PPV / TPR, every observation's path"], rows, "llrrrrrr")
    hyb = [[f"{g['ases']:,} ASes", f"{g['hybrid'].get('found', '-')}", f"{g['hybrid'].get('true', '-')}",
            _pct(g["hybrid"].get("precision")), _pct(g["hybrid"].get("recall"))]
           for g in r.get("generated") or [] if isinstance(g.get("hybrid"), dict)]
    if hyb:
        lines += ["Hybrid links:", "", common.table(["month", "found", "true", "precision", "recall"], hyb,
                                                     align="lrrrr"), ""]
    if r.get("real"):
        c = r["real"]["caida_2016"]
        cl = r["real"]["clique"]
        lines += [f"Real 2026-07 sample against CAIDA's 2016-11 IPv4 file (not the same month: the lasting links): "
                  f"{c['both']:,} links in both, {_pct(c['agreement'])} agree. Clique in both families: "
                  f"{', '.join(map(str, cl['both']))}; IPv4 only: {', '.join(map(str, cl['v4_only']))}; IPv6 only: "
                  f"{', '.join(map(str, cl['v6_only']))}. Hybrid links: {r['real']['hybrid']['hybrid']:,} of the "
                  f"{r['real']['hybrid']['both_families']:,} links seen in both families "
                  f"({_pct(r['real']['hybrid']['share'])})."
                  + (f" Decided links: {_pct(c['decided']['share_decided'])} of those in both; p2c "
                     f"{c['decided']['p2c']['decided']:,} ({_pct(c['decided']['p2c']['ppv'])} agree), p2p "
                     f"{c['decided']['p2p']['decided']:,} ({_pct(c['decided']['p2p']['ppv'])}); undecided "
                     f"{c['decided']['undecided']['links']:,} ({c['decided']['undecided']['agree']:,} agree with p2p)."
                     if c.get("decided") else ""), ""]
    swept = sorted({(g["ases"], g["vps"]): (x["command"], g) for x in runs for g in x.get("generated") or []
                    if g.get("decided")}.items())  # a month in both runs: the later run's
    swept = [v for _k, v in swept]
    if swept:
        lines += [f"Decided links (the table's `decided`: valley-free evidence decided them; the rest, p2p by "
                  f"default, are `rest-p2p` and the provider-less step's assumed peerings: relationships/METHOD.md): "
                  f"their PPV, the share of the true links decided, and how many undecided links the default gets "
                  f"right, per number of VPs ({'; '.join(f'`{c}`' for c in dict.fromkeys(c for c, _g in swept))}):",
                  "",
                  common.table(["month", "VPs", "family", "decided p2c", "p2c PPV", "decided p2p", "p2p PPV",
                                "share decided", "undecided, right", "p2p PPV, all links"],
                               [[f"{g['ases']:,} ASes", str(g["vps"]), f"IPv{afi}", f"{d['p2c']['decided']:,}",
                                 _pct(d["p2c"]["ppv"]), f"{d['p2p']['decided']:,}", _pct(d["p2p"]["ppv"]),
                                 _pct(d["share_decided"]),
                                 f"{d['undecided']['agree']:,} of {d['undecided']['links']:,}" if d.get("undecided")
                                 else "-", _pct(g["scores"][afi]["p2p"]["ppv"])]
                                for _c, g in swept for afi, d in g["decided"].items()], align="lrlrrrrrrr"), ""]
    if r.get("scale"):
        lines += [f"At scale ({r['scale'].get('paths', 0):,} representative paths), each a fresh process:", "",
                  common.table(["command", "wall s", "CPU s", "peak RSS MiB", "tree peak MiB"],
                               _scale_rows(r["scale"]), align="lrrrr"), ""]
    return lines


def _reveal_section(runs: list[dict]) -> list[str]:
    """bench/reveal.py: the path selector told the source's first hops or neighbours."""
    if not runs:
        return []
    scaled = [x for x in runs if x.get("scale")]  # `--scale` alone: a run of its own
    r = next((x for x in reversed(runs) if x.get("real") or x.get("generated")), runs[-1])
    if scaled:
        r = {**r, "scale": scaled[-1]["scale"], "scale_command": scaled[-1]["command"]}
    intro = [f"`{r['command']}`: each evaluation mode side by side; real: every VP AS of the sample held out in",
             "turn (its own pairs as the truth); generated: 40 ASes that are no VP (20 stubs, 20 transit) against",
             "the generator's true paths. Worst gap: the largest difference between calibrated confidence and",
             "accuracy over the bins of 30 answers or more (the calibration fitted on the other sources' rows), the",
             "bins those of the confidence the calibration of all rows states for each answer's cell; own-value",
             "bins: binned by each answer's own held-out value instead (the binning before 2026-11-28, which splits",
             "a cell by its sources' accuracy: selector/calibration.py)."]
    rows = []
    for part in ("real", "generated"):
        for m in r.get(part) or []:
            rules = ", ".join(f"{k} {_pct(v['accuracy'])} of {v['answered']:,}" for k, v in m["rules"].items()
                              if v.get("answered"))
            rows.append([part, m["mode"], f"{m['pairs']:,}", _pct(m["coverage"]), _pct(m["accuracy"]), rules,
                         _gap(m.get("worst_gap")), _gap(m.get("worst_gap_own_bins")), _s(m["seconds"], 1)])
    lines = _section("Path selector with the source's evidence (bench/reveal.py)", intro,
                     ["set", "mode", "pairs", "coverage", "accuracy", "per rule", "worst gap",
                      "own-value bins", "seconds"], rows, "llrrrlrrr")
    from bgp_congruency.selector.evaluate import TRUTH_DESTS  # the questions asked of each generated source

    kinds = [[m["mode"], k, f"{v['pairs'] // TRUTH_DESTS:,}", f"{v['pairs']:,}", _pct(v["coverage"]), _pct(v["accuracy"])]
             for m in r.get("generated") or [] if m["mode"] != "none: today's rules"
             for k, v in sorted(m["kinds"].items())]
    if kinds:
        lines += ["The generated sources by how they are homed (evaluate's `homing`: a stub with one neighbour per",
                  "family, a multi-homed stub, a transit AS with customers; "
                  f"{TRUTH_DESTS} questions per source):", "",
                  common.table(["mode", "sources", f"how many (pairs / {TRUTH_DESTS})", "pairs", "coverage", "accuracy"], kinds, align="llrrrr"), ""]
    vps = [[f"AS{v['vp_asn']}", f"{v['neighbours_v4']:,} / {v['neighbours_v6']:,}", f"{v['pairs']:,}",
            _pct(v["answered"] / v["pairs"] if v["pairs"] else None),
            _pct(v["correct"] / v["answered"] if v["answered"] else None),
            ", ".join(f"{k} {n:,}" for k, n in v["rules"].items())]
           for m in r.get("real") or [] for v in sorted(m.get("by_vp") or [], key=lambda v: -v["pairs"])]
    if vps:
        lines += ["Where the real `neighbours` mode fails: each held-out VP AS, its neighbours (what the mode reveals:",
                  "the second ASes of its paths, IPv4 / IPv6) beside its pairs, most pairs first:", "",
                  common.table(["VP AS", "neighbours", "pairs", "coverage", "accuracy", "answers per rule"], vps,
                               align="lrrrrl"), ""]
    why = next((m["why"] for m in r.get("real") or [] if m.get("why")), None)
    if why:
        total = sum(why.values())
        lines += ["The same, per family question (`bench/reveal.py` why_wrong: one question at a time through",
                  "selector/reference.family_route, the reference), by what made its path:", "",
                  common.table(["family questions", "how many", "share"],
                               [[k, f"{n:,}", _pct(n / total)] for k, n in why.items()], align="lrr"), ""]
    lines += _neighbours_target(r, next((x for x in reversed(runs) if x.get("vps")), None))
    if r.get("scale"):
        sc = r["scale"]
        lines += [f"At scale (`{r.get('scale_command', r['command'])}`: source AS{sc['source']}, --via4 {sc['via4']} "
                  f"--via6 {sc['via6']}, to AS{sc['destination']}), each a fresh process:", "",
                  common.table(["command", "wall s", "CPU s", "peak RSS MiB", "tree peak MiB"], _scale_rows(sc),
                               align="lrrrr"), ""]
        ev = sc.get("evaluate") or {}
        if any("worst_gap" in e for e in ev.values()):
            lines += ["Their answers: " + "; ".join(
                f"{mode} {e['coverage']:.1%} answered, {e['accuracy']:.1%} right, worst calibrated bin "
                f"{_gap(e.get('worst_gap'))} ("
                + ", ".join(f"{k} {_pct(v['accuracy'])} of {v['answered']:,}" for k, v in e["rules"].items()
                            if v.get("answered")) + ")" for mode, e in ev.items()) + ".", ""]
    inf = next((x for x in reversed(runs) if x.get("inferred_at_scale")), None)
    if inf:
        got = inf["inferred_at_scale"]
        a = got.get("answers") or {}
        lines += [f"Rule 11 (off in the product) at scale, `{inf['command']}`: the first-hop mode's answers with it, a",
                  "fresh process, not published:", "",
                  common.table(["command", "wall s", "CPU s", "peak RSS MiB", "tree peak MiB"], _scale_rows(got),
                               align="lrrrr"), "",
                  f"{a.get('coverage', 0):.1%} answered, {a.get('accuracy') or 0:.1%} right ("
                  + ", ".join(f"{k} {_pct(v['accuracy'])} of {v['answered']:,}" for k, v in (a.get("rules") or {}).items()
                              if v.get("answered")) + ").", ""]
    return lines


def _gap(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def _neighbours_target(r: dict, swept: dict | None) -> list[str]:
    """The `neighbours` target of issue 47 (90% at 70% coverage, multi-homed stubs and transit
    sources together) on the generated month, and on months of more VPs (`--vps`)."""
    from bench.reveal import TARGET

    acc, cov = TARGET
    rows = [["12 (the run above)", m["mode"], m["target"], m.get("worst_gap"), m.get("worst_gap_own_bins")]
            for m in r.get("generated") or [] if m.get("target")]
    rows += [[str(v["vps"]), m["mode"], m["target"], m.get("worst_gap"), m.get("worst_gap_own_bins")]
             for v in (swept or {}).get("vps", []) for m in v["modes"]]
    if not rows:
        return []
    links = {v["vps"]: v["links"] for v in (swept or {}).get("vps", [])}
    body = [[vps, mode, ", ".join(f"{n} {k}" for k, n in t["sources"].items()), f"{t['pairs']:,}", _pct(t["coverage"]),
             _pct(t["accuracy"]), _pct(t["coverage_at_accuracy"]), _pct(t["accuracy_at_coverage"]), _gap(gap),
             _gap(own),
             " / ".join(f"{links[int(vps)][a]['month']:,} of {links[int(vps)][a]['true']:,}" for a in ("4", "6"))
             if vps.isdigit() and int(vps) in links else "-"] for vps, mode, t, gap, own in rows]
    intro = [f"The `neighbours` target (issue 47: at least {acc:.0%} right at at least {cov:.0%} coverage, the",
             "generated month's multi-homed stubs and transit sources together; on their calibrated curve, the best",
             f"coverage at {acc:.0%} or more and the best accuracy at {cov:.0%} coverage or more). More VPs:",
             f"`{swept['command']}`, each month made by the guide's commands with only `--vps` changed (seed 1,"
             if swept else "", "400 ASes); links: the month's as_relationships against the generator's, IPv4 / IPv6:"
             if swept else ""]
    return [line for line in intro if line] + ["", common.table(
        ["--vps", "mode", "sources", "pairs", "coverage", "accuracy", f"coverage at {acc:.0%}", f"accuracy at {cov:.0%}",
         "worst gap (all sources)", "own-value bins", "links in the month"], body, align="llrrrrrrrrr"), ""]


def _route_simulation_section(runs: list[dict]) -> list[str]:
    """bench/route_simulation.py: rule 10 beside routes simulated over inferred and true relationships."""
    if not runs:
        return []
    r = runs[-1]
    intro = [f"`{r['command']}`: an experiment, not a rule of the product. The generated month's sources that",
             "are no VP, their neighbours revealed: the product's rule 10 beside each source's route simulated by",
             "Gao-Rexford preference over the month's inferred relationships, over the links it infers with their",
             "true relationships, and over the generator's true ones (the ceiling of the preference itself;",
             "prepending not simulated); against the true paths."]
    rows = []
    for mode, m in r["modes"].items():
        for kind, k in sorted(m["kinds"].items()):
            rows.append([mode, kind, f"{k['pairs']:,}", _pct(k["answered"] / k["pairs"] if k["pairs"] else None),
                         _pct(k["correct"] / k["answered"] if k["answered"] else None),
                         _pct(k["exact"] / k["families"] if k["families"] else None), _s(m["seconds"], 1)])
    return _section("Routes simulated over the relationships (bench/route_simulation.py)", intro,
                    ["mode", "sources", "pairs", "coverage", "accuracy", "paths exact", "seconds"], rows, "llrrrrr")


def _versions_section(runs: list[dict]) -> list[str]:
    """bench/duckdb_versions.py: the DuckDB compare on two DuckDB versions, side by side."""
    if not runs:
        return []
    intro = ["`bench/duckdb_versions.py --data-dir D --versions A,B --limit L`: the compare's steps (DuckDB",
             "engine, `bench/steps.py`: everything but the publish, which DuckDB 2.0.1 cannot do here) on one month,",
             "each DuckDB version in a fresh process, interleaved, best of --repeat; the same checkout, memory limit",
             "and threads; the tables compared row for row. 1.5.5 is the newest DuckDB whose DuckLake extension",
             "wheels exist (issue 28), and the project's pin since the catalog. Runs before 2026-11-26 timed the whole",
             "`congruency compare` instead."]
    rows = []
    for r in runs:
        vs = list(r["versions"])
        for v in vs:
            x = r["versions"][v]
            ratio = x.get("vs_" + vs[0])
            rows.append([r["name"] + (f" ({r['cpu']})" if r.get("cpu") else ""), r["month"], r["limit"], v,
                         _s(x["seconds"], 1),
                         ", ".join(f"{t:.1f}" for t in x["all_seconds"]), _ratio(ratio) if ratio else "-",
                         mib(x["maxrss_bytes"]),
                         ("identical" if r.get("identical") and all(r["identical"].values()) else "DIFFERENT")
                         if v != vs[0] else "", f"`{r['command']}` ({r['date']}, load after {r['load_after']})"
                         if v == vs[0] else ""])
    out = _section("DuckDB engine on two DuckDB versions", intro,
                   ["data", "month", "limit", "duckdb", "best s", "runs s", "vs first", "peak RSS", "tables",
                    "command"], rows, align="lllrrlrrll")
    for r in runs:  # where the versions differ, step by step (the best run's profile of each)
        st = r.get("steps") or {}
        if len(st) < 2:
            continue
        (a, pa), (b, pb) = list(st.items())[:2]
        diff = sorted(((pa.get(k, 0) - pb.get(k, 0), k) for k in pb if k != "total_s"), reverse=True)
        out += [f"Step by step ({r['name']}): duckdb {a} {pa['total_s']:.1f} s, duckdb {b} "
                f"{pb['total_s']:.1f} s; the steps that differ most: "
                + ", ".join(f"{k} {pa.get(k, 0):.1f} vs {pb.get(k, 0):.1f} s" for _d, k in diff[:3]) + ".", ""]
    return out


def _commits_section(runs: list[dict]) -> list[str]:
    """bench/commits.py: the DuckDB compare job of two commits side by side on one month."""
    if not runs:
        return []
    intro = ["`bench/commits.py --data-dir D --commits A,B`: the whole `congruency compare` (DuckDB engine,",
             "the config's defaults, hints and publish included) of two commits, each a git worktree, in fresh",
             "processes into data dirs of their own (a first publish each run), interleaved with the DuckDB scan",
             "floor, best of --repeat; the published tables compared row for row."]
    rows = []
    for r in runs:
        same = all(v.get("differing_rows", 0) == 0 for v in r["tables"].values())
        for i, c in enumerate(r["commits"]):
            rows.append([r["name"] + (f" at {r['limit']}" if r.get("limit") else "")
                         + (f" ({r['machine']})" if r.get("machine") and not i else ""),
                         f"`{c['commit'][:9]}` {c['subject'][:60]}", _s(c["best_s"]),
                         ", ".join(f"{x:.2f}" for x in c["runs_s"]), _s(r["floor_s"]), f"{c['vs_floor']:.1f}x",
                         _ratio(c.get("vs_first")) if i else "-", mib(c["peak_rss"]),
                         (("identical" if same else "DIFFERENT") + "".join(
                             f"; {t} only {v['published_by'][0][:9]}" for t, v in r["tables"].items()
                             if v.get("published_by"))) if i else "",
                         f"`{r['command']}` ({r['date']}, load after {r['load_after']})" if not i else ""])
    return _section("DuckDB compare job: two commits side by side", intro,
                    ["data", "commit", "best s", "runs s", "floor s", "vs floor", "vs first", "peak RSS", "tables",
                     "command"], rows, align="llrlrrrrll")


def _churn_section(runs: list[dict]) -> list[str]:
    """bench/churn.py: how a session's routes change per hour in the real update files."""
    if not runs:
        return []
    from bgp_congruency.synth import churn

    r = runs[-1]
    intro = ["`bench/churn.py`: the real update files of the shared archive decoded with `bgpdump -m`; per BGP",
             "session over the file's window, the distinct prefixes announced or withdrawn (touched), of the",
             "announcements of a prefix seen before in the window the share with another AS path, and the",
             "withdrawals. Per hour is the window scaled up (an upper bound: a prefix flapping every minute counts",
             "each time); the share of a table is against the global table of the family in the file's year (an",
             "assumption). The generator's model (synth/churn.py) is fitted to the pooled figures: "
             f"{100 * churn.TOUCHED_PER_HOUR:.2f}% touched per hour, {100 * churn.PATH_CHANGE_SHARE:.1f}% of repeats "
             f"a new path, {100 * churn.WITHDRAWAL_SHARE:.1f}% withdrawals, {100 * churn.UNSTABLE:.0f}% of the routes "
             f"unstable; a route differs between snapshots 2 h apart with probability {100 * churn.expected(2):.2f}%, "
             f"24 h apart {100 * churn.expected(24):.2f}%.",
             f"`{r['command']}` ({r['date']})."]
    rows = [[f"`{g['file']}`", _s(g["window_s"], 0), g["sessions"], _s(g["median_touched"], 0),
             g["median_touched_per_hour"], f"{100 * g['median_share_per_hour']:.3f}%", _pct(g["path_change_share"]),
             _pct(g["withdrawal_share"])] for g in r["files"]]
    p = r["pooled"]
    rows.append(["pooled (median of the files)", "", "", "", "", f"{100 * p['median_share_per_hour']:.3f}%",
                 _pct(p["path_change_share"]), _pct(p["withdrawal_share"])])
    return _section("Churn: how much of a RIB changes per hour (bench/churn.py)", intro,
                    ["update file", "window s", "sessions", "median touched", "per hour", "of a table per hour",
                     "repeats with a new path", "withdrawals"], rows, align="lrrrrrrr")


def _routes_section(runs: list[dict]) -> list[str]:
    """bench/routes.py: a month stored as routes against a commit that stored every snapshot."""
    if not runs:
        return []
    intro = ["`bench/routes.py --archive A --commits BASE,HEAD`: each commit, in a git worktree and a data dir of",
             "its own, ingests the same generated archive (`congruency ingest`) and compares it (`congruency",
             "compare`, DuckDB, then Spark local[*]; hints and publish included), in fresh processes; the floor is",
             "a DuckDB scan of what the commit stored. The published tables are compared row for row between the",
             "commits (DuckDB) and between the engines of each commit. Ratios are the baseline's seconds over",
             "HEAD's (above 1: HEAD faster or smaller). With `--ingest-only`, only the ingest: the routes the two",
             "commits stored are compared row for row instead of the tables."]
    rows = []
    for r in runs:
        ok = all(v.get("differing_rows", 0) == 0 and len(set(v["rows"])) == 1 and v.get("same_snapshots", True)
                 for pair in r["tables"].values() for v in pair.values())
        same = "routes identical" if r.get("ingest_only") else "identical"
        sy = r["synth"]
        name = (f"{sy['ases']:,} ASes, {sy['vps']} VPs, days {r['days']} at {r['times']}"
                f"{', churn' if sy.get('churn') else ''}")
        for i, c in enumerate(r["commits"]):
            rows.append([name if not i else "", f"`{c['commit'][:9]}` {c['subject'][:50]}", f"{c['entries']:,}",
                         mib(c["stored_bytes"]), _s(c["ingest_s"]), _s(c.get("floor_s")), _s(c.get("duckdb_s")),
                         _s(c.get("spark_s")), mib(c.get("duckdb_peak_rss")),
                         (same if ok else "DIFFERENT") if i else "",
                         f"`{r['command']}` ({r['date']}, load after {r['load_after']})" if not i else ""])
        q = r["ratios"]
        rows.append(["", "ratios (baseline / HEAD)", "", _ratio(q.get("stored_smaller")),
                     _ratio(1 / q["ingest"]) if q.get("ingest") else "-", "", _ratio(q.get("duckdb_compare_faster")),
                     _ratio(q.get("spark_compare_faster")), "", "", ""])
    return _section("A month stored as routes (bench/routes.py)", intro,
                    ["month", "commit", "entries", "stored", "ingest s", "floor s", "DuckDB compare s",
                     "Spark compare s", "DuckDB peak RSS", "tables", "command"], rows, align="llrrrrrrrll")


def _s3_section(runs: list[dict]) -> list[str]:
    """bench/s3.py: the compare with its data dir on a local S3 server against local disk, per engine."""
    if not runs:
        return []
    intro = ["`bench/s3.py --data-dir D --month M [--engine spark]`: one ingested month copied to a local data dir and",
             "to a bucket of a SeaweedFS server on 127.0.0.1, each with a PostgreSQL catalog of its own; `congruency",
             "compare` (hints and publish included; Spark in local mode, reaching S3 through S3A) of each in turn, a",
             "fresh process per run, timed whole. Issue 57's target: the S3 run at most 1.5x the local one on DuckDB;",
             "Spark's ratio reported."]
    rows = [[f"`{Path(r['source']).parent.name}`", r.get("engine", "duckdb"), f"{r['entries']:,}", r["limit"],
             _s(r["best"]["local"]),
             _s(r["best"]["s3"]), _ratio(r["best_ratio"]), "identical" if r["same_tables"] else "DIFFERENT",
             f"`{r['command']}` ({r['date']}, load after {r['load_after']})"] for r in runs]
    return _section("The data dir on S3 (bench/s3.py)", intro,
                    ["month's data dir", "engine", "entries", "memory limit", "local s", "S3 s", "S3 / local",
                     "tables", "command"], rows, align="llrlrrrll")


def _mmm(x: dict, fmt: str = "{:.2f}") -> str:
    """min / median / max of a spread (bench/multipath.py)."""
    return " / ".join(fmt.format(x[k]) for k in ("min", "median", "max"))


def _multipath_section(runs: list[dict]) -> list[str]:
    """bench/multipath.py: one MPTCP connection over IPv4 + IPv6 against single-path TCP."""
    if not runs:
        return []
    intro = ["`bench/multipath.py` (root; network namespaces, `tc tbf` bottlenecks, no netem in this kernel):",
             "one MPTCP connection with an IPv4 and an IPv6 subflow, configured by the project's own",
             "`congruency export --format mptcp` script for an `aggregate` hint, against single-path TCP on the",
             "better family. *disjoint*: IPv4 limited to R4 and IPv6 to R6 on separate links; *shared*: both",
             "families through one router whose link to the server is limited to R. Goodput is what the server",
             "received per second after the warm-up; min / median / max over the runs. *Share*: two flows",
             "started together through the shared bottleneck, the first one's part of their sum (MPTCP against",
             "TCP; the control, TCP against TCP). The selector's rationales cite these medians",
             "(selector/measured_gain.json, written by `--advice`)."]
    rows = []
    for r in runs:
        for c in r["cases"]:
            cap = (f"R4 {c['r4_mbit']:g} + R6 {c['r6_mbit']:g}" if c["topology"] == "disjoint"
                   else f"R {c['r_mbit']:g}")
            share = (f"{_mmm(c['mptcp_share_against_tcp'])} (TCP: {_mmm(c['tcp_share_against_tcp'])})"
                     if "mptcp_share_against_tcp" in c else "-")
            rows.append([c["topology"], cap, "+".join(c["subflow_families"]), _mmm(c["mptcp_mbit"], "{:.1f}"),
                         _mmm(c["mptcp_vs_capacity"]), f"IPv{c['better_family']} " + _mmm(c["tcp_mbit"], "{:.1f}"),
                         _mmm(c["mptcp_vs_tcp"]), share])
    out = _section("Multipath gain: MPTCP over IPv4 + IPv6 (bench/multipath.py)", intro,
                   ["paths", "rates Mbit/s", "subflows", "MPTCP Mbit/s", "MPTCP / capacity", "TCP Mbit/s",
                    "MPTCP / TCP", "share against TCP"], rows, align="lllrrrrr")
    for r in runs:
        out += [f"`{r['command']}` ({r['date']}, kernel {r['kernel']}, {r['runs']} runs of {r['seconds']:g} s, "
                f"{r['warmup']:g} s warm-up, load before {r['load_before']}; {r.get('cpu')}).", ""]
    return out


def _memfloor_section(runs: list[dict]) -> list[str]:
    """bench/memfloor.py: the DuckDB compare at several memory limits, each in a fresh process."""
    if not runs:
        return []
    intro = ["`bench/memfloor.py --data-dir D --limits ... [--partitions K,auto]`: the whole DuckDB compare job",
             "on one month, once per memory limit and number of VP partitions, each in a fresh process. DuckDB",
             "does not spill all of a hash aggregate's state, so one partition of a large month fails instead of",
             "spilling; the rule of pipeline/partitions.py (auto) splits the month into partitions of about",
             "200 bytes of the limit per entry, where they barely spill (until 2026-11-26: until one fit, 20 bytes).",
             "Peak RSS: the process tree, DuckDB's cap plus Python, Arrow and the Parquet writer."]
    rows = [[f"{r['rows']:,}", x["limit"], str(x.get("partitions") or "-"),
             f"{x['largest_partition']:,}" if x.get("largest_partition") else "-",
             "yes" if x["ok"] else f"**no** (in {x['last_step']})", _s(x["seconds"]),
             f"{x['peak_rss_mib']:,} MiB" if x.get("peak_rss_mib") else "-", f"{x['peak_spill_mib']:,} MiB",
             f"`{r['command']}`" if i == 0 else ""]
            for r in runs for i, x in enumerate(r["runs"])]
    return _section("DuckDB engine: the memory the compare needs", intro,
                    ["entries", "memory_limit", "partitions", "largest partition", "finished", "seconds", "peak RSS",
                     "peak spill", "command"], rows, "rrrrlrrrl")


def _hours(seconds: float) -> str:
    """A duration in hours, or minutes below one hour (0.0 h said nothing)."""
    return f"{seconds / 3600:,.1f} h" if seconds >= 3600 else f"{seconds / 60:,.0f} min"


#: The paper-scale month of the cost model: ~60 collectors x 5 daily RIB snapshots.
PAPER_ENTRIES = 1e10
CLUSTER_CORES = 200  # 50 executors x 4 cores


def cost_model(doc: dict) -> list[str]:
    """Core-hours and wall time of a paper-scale month from the per-core rates measured at
    the largest scale run (entries per CPU second of each stage's process tree)."""
    scales = sorted(doc["scales"].values(), key=lambda s: s["entries"])
    rates = {}
    for s in scales:  # the largest scale wins
        ig = s["stages"].get("ingest", {})
        for name in ("ingest (native)", "ingest (bgpdump)", "ingest (bgpkit)"):
            v = ig.get(name)
            if v and v.get("cpu_s"):
                rates["ingest"] = (name, s["entries"] / v["cpu_s"], s["scale"], v["seconds"], v["cpu_s"])
                break
        for st, name in (("compare", "spark job"), ("duckdb", "duckdb job")):
            v = (s["stages"].get(st) or {}).get(name)
            if isinstance(v, dict) and v.get("work_s") and v.get("cpu_s"):
                rates[name] = (name, (v.get("rows") or s["entries"]) / v["cpu_s"], s["scale"], v["work_s"], v["cpu_s"])
    if not rates:
        return []
    lines = ["## Cost model: a paper-scale month on a Spark cluster", "",
             f"A month of ~60 collectors x 5 daily RIB snapshots is about {PAPER_ENTRIES:.0e} entries. From the",
             "per-core rate of each stage (entries per CPU second of its whole process tree, measured at",
             f"the largest scale run here), on a cluster of {CLUSTER_CORES} cores (e.g. 50 executors x 4 cores):", ""]
    rows, total = [], 0.0
    for key in ("ingest", "spark job", "duckdb job"):
        if key not in rates:
            continue
        name, r, scale, wall, cpu = rates[key]
        ch = PAPER_ENTRIES / r / 3600
        total += ch if key != "duckdb job" else 0
        wall_h = ch / CLUSTER_CORES if key != "duckdb job" else None
        rows.append([name, scale, f"{cpu:,.0f} CPU s in {wall:,.0f} s", f"{r / 1e3:,.0f} k/s", f"{ch:,.0f}",
                     f"{wall_h * 60:,.0f} min" if wall_h else "one machine: see below"])
    lines += [common.table(["stage", "measured at scale", "measured", "entries / core-s", "core-hours (1e10)",
                            f"wall on {CLUSTER_CORES} cores"], rows, align="lrrrrr"), ""]
    if "duckdb job" in rates:
        r = rates["duckdb job"][1]
        lines += [f"- The DuckDB engine is one process: on one 32-core machine the same month would take about "
                  f"{PAPER_ENTRIES / r / 32 / 3600:,.1f} h if it scaled linearly with cores and spilled without "
                  "slowing down (both estimated, not measured)."]
    done = [e for e in (doc.get("real") or {}).get("endtoend") or []
            if e.get("ok") and (e.get("steps") or {}).get("compare") and e["steps"].get("ingest") and e.get("entries")]
    spark = [e for e in done if e.get("engine") == "spark"]
    done = [e for e in done if e.get("engine", "duckdb") == "duckdb"]
    # The slowest compare per entry of the end-to-end runs: a month that grows by snapshots of
    # the same paths (bench/endtoend.py past scale 250) compares faster than one of more paths.
    for e in sorted(done, key=lambda e: e["entries"] / e["steps"]["compare"])[:1]:
        st, n = e["steps"], e["entries"]
        if n:
            ncpu = int((doc.get("machine") or {}).get("nproc") or 2)
            per = {k: n / (st[k] * ncpu) for k in ("ingest", "compare")}  # entries per core-second (wall x cores)
            limit = e.get("memory_limit") or "the default memory limit"
            lines += [f"- Measured end to end (`{e.get('command')}`, scale {e['scale']}: {n:,} entries, {ncpu} cores, "
                      f"the slowest compare per entry of the end-to-end runs, {e.get('partition_rule', 'partitions by the rule of the time')}): ingest {st['ingest']:,.0f} s, DuckDB compare {st['compare']:,.0f} s at "
                      f"{limit}, i.e. at most {per['ingest'] / 1e3:,.0f} k and {per['compare'] / 1e3:,.0f} k "
                      "entries per core-second (wall time x cores, an upper bound on CPU). A paper-scale month on one "
                      f"64-core machine with the DuckDB engine: ingest about "
                      f"{_hours(PAPER_ENTRIES / per['ingest'] / 64)} (one snapshot file per core) and compare "
                      f"about {_hours(PAPER_ENTRIES / per['compare'] / 64)} if the compare's rate held per core "
                      "and in spills 40x larger (estimated, not measured: DuckDB's aggregates and joins spill "
                      "to disk past its memory limit, and 1e10 rows need ~1-2 TB of local disk for Parquet and spill). "
                      "The compare runs in VP partitions of about 200 bytes of memory per entry (at least 20 to "
                      "finish; section \"DuckDB engine: the memory the compare needs\", pipeline/partitions.py), so "
                      "its memory no longer grows with the month: at 4GB such a month runs in about "
                      f"{PAPER_ENTRIES / 20e6:,.0f} partitions of 20M entries (one after another; the disk for Parquet "
                      "and spill is what grows)."]
    for e in sorted(spark, key=lambda e: e["entries"] / e["steps"]["compare"])[:1]:
        ncpu = int((doc.get("machine") or {}).get("nproc") or 2)
        n, secs = e["entries"], e["steps"]["compare"]
        per = n / (secs * ncpu)
        peak = (e.get("step_peak_rss_mib") or {}).get("compare")
        lines += [f"- Measured end to end with the Spark engine (`{e.get('command')}`, scale {e['scale']}: {n:,} "
                  f"entries, {ncpu} cores, local[*], spark.driver.memory 4g, one VP partition): compare "
                  f"{secs:,.0f} s" + (f" at a peak RSS of {peak / 1024:.1f} GiB" if peak else "") +
                  f", spill and staging at most {e.get('peak_staging_mib', 0):,} MiB, i.e. at most {per / 1e3:,.0f} k "
                  f"entries per core-second (wall time x cores): a paper-scale month in about "
                  f"{PAPER_ENTRIES / per / 3600:,.0f} core-hours, {_hours(PAPER_ENTRIES / per / CLUSTER_CORES)} on "
                  f"{CLUSTER_CORES} cores if that rate held per core (estimated, not measured)."]
    lines += [
        f"- Ingest + Spark job: about {total:,.0f} core-hours a month; ingest parallelises per snapshot file "
        "(300 files), so it fills the cluster; the Spark job's rate is assumed to hold per core on a cluster.",
        "- Measured: the per-core rates above (2-core machine, shared, noisy 10-30%), the CPU seconds of each "
        "stage's process tree, the entry counts.",
        "- Estimated: linear scaling from the measured scale to 1e10 entries (the job's aggregates are "
        "hash aggregates and joins, near-linear; measured here from 1M to 50M), no loss to the cluster's "
        "network shuffle (the measured runs shuffle through local disk), no stragglers, archive download not "
        "counted (~1-2 TB of compressed MRT a month, bandwidth-bound), ~5% of the job's time for JVM/executor start-up.",
        ""]
    return lines


def _targets(r: dict) -> list[str]:
    """bench/ingest.py's issue-10 target checks of one run, as bullet lines."""
    t = r.get("targets") or []
    return [*(f"- {'met' if x['met'] else '**not met**'}: {x['what']}: {x['value']}" for x in t), ""] if t else []


def series(doc: dict) -> dict[str, list[tuple[int, float, int]]]:
    """variant -> [(entries, seconds, peak RSS)] over scales."""
    out: dict[str, list] = {}
    for s in sorted(doc["scales"].values(), key=lambda s: s["entries"]):
        for name, v in s["stages"].get("ingest", {}).items():
            if v.get("seconds"):
                out.setdefault(name, []).append((s["entries"], v["seconds"], max(v["maxrss_bytes"], v["tree_peak_bytes"])))
        for name, v in s["stages"].get("compare", {}).items():
            if v.get("work_s"):
                out.setdefault(name, []).append((s["entries"], v["work_s"], max(v["maxrss_bytes"], v["tree_peak_bytes"])))
        for name, v in (s["stages"].get("duckdb") or {}).items():
            if isinstance(v, dict) and v.get("work_s") and "time_vs_floor" in v:
                out.setdefault(name, []).append((s["entries"], v["work_s"], max(v["maxrss_bytes"], v["tree_peak_bytes"])))
    return out


def plot(doc: dict, path: Path, con) -> Path | None:
    data = series(doc)
    if not data:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker  # noqa: F401
    except ImportError:
        svg = path.with_suffix(".svg")
        svg.write_text(_svg(data))
        con.print(f"[yellow]matplotlib is not installed: wrote {svg} instead of {path}[/]")
        return svg
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5.2))
    for name, pts in data.items():
        xs = [p[0] / 1e6 for p in pts]
        style = "--" if name in ("bgpdump -m", "spark scan floor", "duckdb scan floor") or name.endswith("-dc") else "-"
        ax1.plot(xs, [p[1] for p in pts], style, marker="o", label=name)
        ax2.plot(xs, [p[2] / MiB for p in pts], style, marker="o", label=name)
    for ax, title, unit in ((ax1, "time", "seconds (best run)"), (ax2, "peak RSS", "MiB (max of max-proc, tree sum)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain = matplotlib.ticker.FuncFormatter(lambda v, _pos: f"{v:g}")
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(plain)
        ax.set_xlabel("RIB entries (millions)")
        ax.set_ylabel(unit)
        ax.set_title(f"{title} against entries, per stage")
        ax.grid(True, which="both", alpha=0.3)
    ax2.axhline(1024, color="grey", lw=0.8, ls=":")
    ax2.annotate("1 GiB", (ax2.get_xlim()[0], 1024), textcoords="offset points", xytext=(4, 3), fontsize=8, color="grey")
    ax1.legend(fontsize=8)
    f = doc["machine"]
    fig.suptitle(f"bgp-congruency benchmarks: {f['nproc']} cores, {f['memory']} RAM, {f['cpu']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _svg(data) -> str:  # fallback without matplotlib: a bare log-log line chart
    import math

    W, H, P = 720, 420, 60
    xs = [p[0] for pts in data.values() for p in pts]
    ys = [p[1] for pts in data.values() for p in pts]
    lx0, lx1 = math.log10(min(xs)) - 0.1, math.log10(max(xs)) + 0.1
    ly0, ly1 = math.log10(min(ys)) - 0.1, math.log10(max(ys)) + 0.1

    def X(v):
        return P + (math.log10(v) - lx0) / (lx1 - lx0) * (W - 2 * P)

    def Y(v):
        return H - P - (math.log10(v) - ly0) / (ly1 - ly0) * (H - 2 * P)

    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
             f'<rect width="{W}" height="{H}" fill="white"/>',
             f'<text x="{W / 2}" y="20" text-anchor="middle">seconds against entries (log-log)</text>']
    for i, (name, pts) in enumerate(data.items()):
        c = colors[i % len(colors)]
        d = " ".join(f"{X(p[0]):.1f},{Y(p[1]):.1f}" for p in pts)
        parts.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{d}"/>')
        parts.append(f'<text x="{W - P + 5}" y="{P + 14 * i}" fill="{c}">{name}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def notes(doc: dict) -> list[str]:
    """What limits each stage, from the figures (CPU time vs wall time, ratios)."""
    out = []
    for s in sorted(doc["scales"].values(), key=lambda s: s["scale"]):
        ig = s["stages"].get("ingest", {})
        name = next((k for k in ("ingest (native)", "ingest (bgpkit)") if ig.get(k)), None)
        if name and ig.get("bgpdump -m"):
            b = ig[name]
            out.append(f"scale {s['scale']}: {name} used {b['cpu_s']:.0f} CPU s in {b['seconds']:.0f} s wall "
                       f"({b['cpu_s'] / b['seconds']:.1f} cores) at {b['time_vs_bgpdump_m']:.2f}x bgpdump -m's time.")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, nargs="+", default=[], metavar="N",
                    help="about N million RIB entries per month, e.g. 1 10 50 (several allowed)")
    ap.add_argument("--stages", default=",".join(STAGES), help="comma-separated subset of ingest,compare,duckdb")
    ap.add_argument("--backends", default="native",
                    help="comma-separated ingest backends, default native (production's default); the "
                         "first one's Parquet feeds the Spark and DuckDB stages")
    ap.add_argument("--repeat", type=int, default=2, help="runs per measurement, best reported (default 2)")
    ap.add_argument("--min-coverage", type=float,
                    help="default-free threshold for the job and DuckDB (default: the config's, 0.9)")
    ap.add_argument("--timeout", type=float, default=3 * 3600, help="seconds per run before it is killed")
    ap.add_argument("--no-results", action="store_true", help="don't touch bench/RESULTS.md and RESULTS.png")
    ap.add_argument("--note", action="append", default=[], metavar="TEXT",
                    help="a line for the 'what limits each stage' section of RESULTS.md (repeatable; "
                         "replaces the previous notes)")
    ap.add_argument("--render-only", action="store_true",
                    help="only re-render RESULTS.md/.png from their data and bench/out/*.json")
    ap.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    a = ap.parse_args(argv)
    if not a.scale and not a.render_only:
        ap.error("--scale: required (unless --render-only)")
    if any(n < 1 or n > 1000 for n in a.scale):
        ap.error("--scale: 1..1000")
    con = common.console()
    stages = [s.strip() for s in a.stages.split(",") if s.strip()]
    bad = set(stages) - set(STAGES)
    if bad:
        ap.error(f"--stages: unknown {', '.join(sorted(bad))}")
    if not 1 <= a.repeat <= 20:
        ap.error("--repeat: 1..20")
    from bgp_congruency.ingest import backends as B

    backends = []
    for b in [x.strip() for x in a.backends.split(",") if x.strip()]:
        try:
            B.get(b)
            backends.append(b)
        except B.BackendUnavailable as exc:
            con.print(f"[yellow]skipping backend {b}: {exc}[/]")
    if "compare" in stages:
        from bgp_congruency.pipeline.spark_session import java_problem

        if problem := java_problem():
            con.print(f"[red]{problem}[/]")
            return 2
    command = " ".join(["bench/run.py", *(argv if argv is not None else sys.argv[1:])])
    doc = load_previous()
    doc.setdefault("scales", {})
    if a.note:
        doc["notes_manual"] = a.note
    if a.render_only:
        write_results(doc, con, measured=False)
        return 0
    results = []
    for n in a.scale:
        r = run_scale(n, stages=stages, backends=backends, repeat=a.repeat, min_coverage=a.min_coverage,
                      con=con, timeout_s=a.timeout)
        r.update(command=command, repeat=a.repeat, date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                 load_after=common.load_now())
        this_run = {k: r[k] for k in ("command", "repeat", "date", "load_after")}
        r["stage_runs"] = {st: this_run for st in r["stages"]}
        results.append(json.loads(json.dumps(r, default=str)))  # what this run measured, and only that
        if not r["stages"]:
            continue  # nothing measured: results.json keeps the earlier figures as they are
        merged = dict(r)
        merged.pop("not_run", None)
        prev = doc["scales"].get(str(n), {})
        if prev and set(r["stages"]) != set(STAGES):  # a partial run updates only its stages in results.json
            prev_runs = prev.get("stage_runs") or {st: {k: prev.get(k) for k in this_run} for st in prev["stages"]}
            merged["stage_runs"] = {**prev_runs, **r["stage_runs"]}
            merged["stages"] = {**prev.get("stages", {}), **r["stages"]}
        doc["scales"][str(n)] = merged
        if not a.no_results:
            write_results(doc, con)
    common.write_json({"scales": results}, common.OUT / "run-results.json", stdout=a.json)
    oks = []
    for r in results:  # a stage asked for and not run fails the bench: it printed no figure for it
        for name, st in r["stages"].items():
            oks += [v["ok"] for v in st.values()]
        if r.get("check"):
            oks.append(r["check"]["identical"])
        oks += [False for _ in r.get("not_run", {})]
    return 0 if all(oks) else 1


def _parts(r: dict) -> tuple:
    """What a bench run measured, by the parts it holds (not when or where it ran)."""
    return tuple(sorted(k for k in r if k not in ("command", "machine")))


def write_results(doc: dict, con, measured: bool = True) -> None:
    """results.json, RESULTS.md and the plot; the machine table is this machine's only when
    this run measured something (a re-render keeps the machine the figures came from)."""
    if measured or "machine" not in doc:
        doc["machine"] = common.machine_facts()
    real = doc.setdefault("real", {})
    for key, path in (("ingest", common.OUT / "ingest-file.json"), ("compare", common.OUT / "compare-real-2026-07.json")):
        if path.is_file():
            real[key] = json.loads(path.read_text())
    for key, pattern in (("steps", "steps-*.json"), ("endtoend", "endtoend-*.json"),
                         ("generate", "generate-*.json"), ("hints", "hints-*.json"),
                         ("memfloor", "memfloor-*.json"), ("duckdb_versions", "duckdb-versions-*.json"),
                         ("commits", "commits-*.json"),
                         ("churn", "churn.json"),
                         ("routes", "routes-*.json"),
                         ("commands", "commands.json"),
                         ("multipath", "multipath.json"),
                         ("relationships", "relationships*.json"),
                         ("reveal", "reveal*.json"),
                         ("route_simulation", "route_simulation.json"),
                         ("s3", "s3-compare*.json")):
        files = [p for p in sorted(common.OUT.glob(pattern)) if not p.name.endswith(".out.json")]  # a run's own --json
        if files:
            new = [json.loads(p.read_text()) for p in files]
            # Profiles and end-to-end runs of other data dirs, scales, engines, limits stay until re-measured.
            ident = {"steps": lambda r: (r["data_dir"], r["engine"], r.get("memory_limit")),
                     "endtoend": lambda r: (r["scale"], r.get("engine", "duckdb")),
                     "memfloor": lambda r: (r["data_dir"], r["rows"]),
                     "routes": lambda r: (Path(r["archive"]).name, r["times"], r.get("limit"),
                                          r.get("ingest_only", False)),
                     # a run of some parts (--vps alone, --scale alone) replaces those parts only
                     "reveal": _parts, "relationships": _parts}.get(key)
            if ident:
                have = {ident(r) for r in new}
                new = [r for r in real.get(key) or [] if ident(r) not in have] + new
            real[key] = new
    synth_files = sorted(common.OUT.glob("ingest-synth-*.json")) + sorted(common.OUT.glob("ingest-file-*.json"))
    if synth_files:
        real["ingest_synth"] = [json.loads(p.read_text()) for p in synth_files]
    doc["notes"] = doc.get("notes_manual") or notes(doc)
    tmp = RESULTS_JSON.with_name(".results.json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    os.replace(tmp, RESULTS_JSON)
    RESULTS_MD.write_text(render_md(doc))
    p = plot(doc, RESULTS_PNG, con)
    con.print(f"wrote {RESULTS_MD}" + (f" and {p}" if p else ""))


if __name__ == "__main__":
    sys.exit(main())
