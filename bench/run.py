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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common, render  # noqa: E402
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
            rows.append([s["scale"], f"{s['entries']:,}", name, render.num(v["seconds"]), rate(v["entries_per_s"]),
                         render.ratio(v["time_vs_bgpdump_m"]), render.num(v.get("cpu_s"), 1), mib(v["maxrss_bytes"]),
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
            rows.append([s["scale"], f"{v.get('rows') or s['entries']:,}", name, render.num(v["work_s"]), rate(v["rows_per_s"]),
                         render.ratio(v["time_vs_floor"]), render.num(v["session_s"], 1), render.num(v.get("cpu_s"), 0),
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
            rows.append([s["scale"], f"{v.get('rows') or s['entries']:,}", name, render.num(v["work_s"]), rate(v["rows_per_s"]),
                         render.ratio(v["time_vs_floor"]), render.ratio(v["work_s"] / job if job and v["work_s"] and name == "duckdb job" else None),
                         render.num(v.get("cpu_s"), 0), mib(v["maxrss_bytes"]),
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
            rows = [[n, render.num(v["seconds"]), rate(v["entries_per_s"]), render.ratio(v["time_vs_bgpdump_m"]),
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
                rows = [[n, render.num(v["seconds"]), rate(v["entries_per_s"]), render.ratio(v["time_vs_bgpdump_m"]),
                         mib(v["maxrss_bytes"]), mib(v["tree_peak_bytes"])] for n, v in r["variants"].items()]
                lines += [common.table(["variant", "seconds", "entries/s", "vs bgpdump -m", "peak RSS max proc",
                                        "peak RSS tree"], rows), "", *_targets(r)]
        if real.get("compare"):
            r = real["compare"]
            lines += [f"`{r.get('command', 'bench/compare.py')}` ({r['rows']:,} rows, min_coverage "
                      f"{r.get('min_coverage')}):", ""]
            rows = [[n, render.num(v["work_s"]), rate(v["rows_per_s"]), render.ratio(v["time_vs_floor"]), render.num(v["session_s"], 1),
                     mib(v["maxrss_bytes"]), mib(v["jvm_hwm_bytes"]), mib(v["tree_peak_bytes"])]
                    for n, v in r["variants"].items()]
            lines += [common.table(["variant", "seconds", "rows/s", "vs floor", "session s", "peak RSS max proc",
                                    "JVM VmHWM", "peak RSS tree"], rows), ""]
    lines += render.sections(real)
    if doc.get("notes"):
        lines += ["## What limits each stage", "", *[f"- {n}" for n in doc["notes"]], ""]
    lines += ["![time and peak RSS against entries](RESULTS.png)", ""]
    return "\n".join(lines)


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
        r.update(command=command, repeat=a.repeat, date=common.now_utc(),
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
    for key, pattern, _module in render.BENCHES:
        files = [p for p in sorted(common.OUT.glob(pattern)) if not p.name.endswith(".out.json")]  # a run's own --json
        if files:
            new = [json.loads(p.read_text()) for p in files]
            if key == "steps":  # profiles written before they recorded their time: the file's
                for r, p in zip(new, files):
                    r.setdefault("date", common.now_utc(p.stat().st_mtime) + " (file time)")
            # Profiles and end-to-end runs of other data dirs, scales, engines, limits stay until re-measured.
            ident = {"steps": lambda r: (r["data_dir"], r["engine"], r.get("memory_limit")),
                     "endtoend": lambda r: (r["scale"], r.get("engine", "duckdb")),
                     "memfloor": lambda r: (r["data_dir"], r["rows"]),
                     # a run against another baseline commit is a row of its own
                     "routes": lambda r: (Path(r["archive"]).name, r["times"], r.get("limit"),
                                          r.get("ingest_only", False), any("spark_s" in c for c in r["commits"]),
                                          r["commits"][0]["commit"]),
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
