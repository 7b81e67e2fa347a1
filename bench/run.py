#!/usr/bin/env python3
"""End-to-end benchmark at scale on synthetic archives: ~N million RIB entries per --scale N.

Per scale: generate (or reuse, cached in bench/out/synth-N) a synthetic month with the
synth generator (no ground truth), then measure per stage, every run a fresh process,
round-robin, best of --repeat:
  ingest   each backend through ingest.run.decode_file (framing check included) over all
           the month's files, next to `bgpdump -m` and `bzip2 -dc`/`gzip -dc` on the same files;
  compare  the Spark job (pipeline.job.run_month, local[*]) next to a Spark scan floor;
  duckdb   the DuckDB query of bench/duckdb_pairs.py (and, untimed, its row-for-row check
           against the Spark job's pairs).
Results are merged into bench/RESULTS.md (figures, ratios, peak RSS, machine facts,
versions, the exact command; its data is kept in the file so later runs update it) and
plotted to bench/RESULTS.png (time and peak RSS against entries for each stage).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench import compare as cmp  # noqa: E402
from bench import duckdb_pairs as dp  # noqa: E402
from bench import ingest as ing  # noqa: E402
from bench.common import MiB, mib, rate  # noqa: E402

RESULTS_MD = common.BENCH / "RESULTS.md"
RESULTS_PNG = common.BENCH / "RESULTS.png"
DATA_MARK = "<!-- bench-data"
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
    have_data = any((data / "rib_entries" / f"month={common.SYNTH_MONTH}").glob("*/*.parquet"))
    if ("compare" in stages or "duckdb" in stages) and not have_data:
        con.print("[red]no ingested data for the Spark and DuckDB stages (run the ingest stage)[/]")
        return out
    if "compare" in stages:
        con.print("[bold]compare (Spark)[/]")
        res = cmp.measure(data, common.SYNTH_MONTH, min_coverage, repeat=repeat, con=con, timeout_s=timeout_s)
        out["stages"]["compare"] = res["variants"]
        out["rows"] = res["rows"]
        shutil.rmtree(common.OUT / "compare-work", ignore_errors=True)
    if "duckdb" in stages:
        con.print("[bold]DuckDB[/]")
        pairs = root / "duckdb-pairs.parquet"
        res_path = root / "duckdb-result.json"
        cmd = common.py("duckdb_pairs.py", "--data-dir", data, "--month", common.SYNTH_MONTH, "--out", pairs,
                        "--result", res_path,
                        *(["--min-coverage", min_coverage] if min_coverage is not None else []))
        m, runs = common.repeat(repeat, lambda: common.run_child(cmd, label="duckdb", timeout_s=timeout_s,
                                                                 result_path=res_path), con, "duckdb query")
        ok = m.rc == 0 and m.result.get("seconds")
        rows = m.result.get("rib_entries")
        v = {"ok": bool(ok), "work_s": m.result.get("seconds") if ok else None, "process_s": m.wall_s,
             "rows": rows, "pairs": m.result.get("pairs"), "maxrss_bytes": m.maxrss,
             "tree_peak_bytes": m.tree_peak, "runs_work_s": [r.result.get("seconds") for r in runs],
             "cpu_s": round(m.user_s + m.sys_s, 1)}
        v["rows_per_s"] = round(rows / v["work_s"]) if ok and rows else None
        floor = out["stages"].get("compare", {}).get("spark scan floor", {}).get("work_s")
        v["time_vs_spark_floor"] = round(v["work_s"] / floor, 2) if ok and floor else None
        job = out["stages"].get("compare", {}).get("spark job", {}).get("work_s")
        v["time_vs_spark_job"] = round(v["work_s"] / job, 3) if ok and job else None
        if ok and "compare" in out["stages"] and out["stages"]["compare"]["spark job"]["ok"]:
            chk = dp.check(data, common.SYNTH_MONTH, pairs, con)
            v["check"] = {k: chk[k] for k in ("identical", "duckdb_pairs", "spark_pairs", "only_duckdb", "only_spark")}
            con.print(("[green]" if chk["identical"] else "[red]") +
                      f"DuckDB pairs vs Spark pairs: {'identical' if chk['identical'] else 'DIFFERENT'} "
                      f"({chk['duckdb_pairs']:,} / {chk['spark_pairs']:,} rows)[/]")
        out["stages"]["duckdb"] = v
    out["seconds_total"] = round(time.perf_counter() - t0, 1)
    return out


# --- RESULTS.md -------------------------------------------------------------------------

def load_previous() -> dict:
    if not RESULTS_MD.is_file():
        return {}
    m = re.search(re.escape(DATA_MARK) + r"\n(.*?)\n-->", RESULTS_MD.read_text(), re.S)
    if not m:
        return {}
    try:
        return json.loads(m.group(1))
    except ValueError:
        return {}


def _s(x, nd=2):
    return "-" if x is None else f"{x:,.{nd}f}"


def _ratio(x):
    return "-" if x is None else f"{x:.2f}x"


def render_md(doc: dict) -> str:
    f = doc["machine"]
    scales = sorted(doc["scales"].values(), key=lambda s: s["scale"])
    lines = [
        "# Benchmarks",
        "",
        "Generated by `bench/run.py` (do not edit by hand: the data at the bottom is merged on every run).",
        "Every figure is the best of the runs made (wall time of a fresh process tree per run, runs of",
        "a stage interleaved round-robin); peak RSS is the largest seen over those runs. Timings were",
        "taken on a shared machine (other work running), so expect noise of 10-30%.",
        "",
        "## Machine and versions",
        "",
        common.table(["", ""], [[k, v] for k, v in f.items()], align="ll"),
        "",
        "## Commands",
        "",
        *[f"- scale {s['scale']}: `{s['command']}` ({s['date']}, repeat {s['repeat']}, stage time "
          f"{s.get('seconds_total', 0) / 60:.0f} min)" for s in scales],
        "",
        "Synthetic archives: `ingest.synth.generate` (seed 1, month 2026-07, "
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
    lines += ["## Spark job vs scan floor (local[*])", "",
              "Seconds from a ready SparkSession to the month published (job) or counted (floor: the same",
              "Parquet read as the job, every job column touched); session start (JVM) reported apart.",
              "Ratio = job time / floor time.", ""]
    rows = []
    for s in scales:
        for name, v in s["stages"].get("compare", {}).items():
            rows.append([s["scale"], f"{v.get('rows') or s['entries']:,}", name, _s(v["work_s"]), rate(v["rows_per_s"]),
                         _ratio(v["time_vs_floor"]), _s(v["session_s"], 1), _s(v.get("cpu_s"), 0),
                         mib(v["maxrss_bytes"]), mib(v["jvm_hwm_bytes"]), mib(v["tree_peak_bytes"])])
    lines += [common.table(["scale", "rows", "variant", "seconds", "rows/s", "vs floor", "session s",
                            "CPU s (process)", "peak RSS max proc", "JVM VmHWM", "peak RSS tree"], rows,
                           align="rrlrrrrrrrr"), ""]
    lines += ["## DuckDB pairs query (bench/duckdb_pairs.py, single process, all cores)", "",
              "Seconds to compute the pairs and write them to Parquet. `check`: its pairs compared row",
              "for row with the Spark job's published pairs of the same run.", ""]
    rows = []
    for s in scales:
        v = s["stages"].get("duckdb")
        if v:
            chk = v.get("check") or {}
            rows.append([s["scale"], f"{v.get('rows') or s['entries']:,}", _s(v["work_s"]), rate(v["rows_per_s"]),
                         _ratio(v.get("time_vs_spark_job")), _ratio(v.get("time_vs_spark_floor")),
                         _s(v.get("cpu_s"), 1), mib(v["maxrss_bytes"]), f"{v.get('pairs') or 0:,}",
                         "identical" if chk.get("identical") else ("DIFFERENT" if chk else "-")])
    lines += [common.table(["scale", "rows", "seconds", "rows/s", "vs Spark job", "vs Spark floor",
                            "CPU s (process)", "peak RSS", "pairs", "check"], rows, align="rrrrrrrrrl"), ""]
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
    if doc.get("notes"):
        lines += ["## What limits each stage", "", *[f"- {n}" for n in doc["notes"]], ""]
    lines += ["![time and peak RSS against entries](RESULTS.png)", "",
              DATA_MARK, json.dumps(doc, indent=None, default=str, separators=(",", ":")), "-->", ""]
    return "\n".join(lines)


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
        v = s["stages"].get("duckdb")
        if v and v.get("work_s"):
            out.setdefault("duckdb pairs", []).append((s["entries"], v["work_s"], max(v["maxrss_bytes"], v["tree_peak_bytes"])))
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
        style = "--" if name in ("bgpdump -m", "spark scan floor") or name.endswith("-dc") else "-"
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
    from ingest import backends as B

    backends = []
    for b in [x.strip() for x in a.backends.split(",") if x.strip()]:
        try:
            B.get(b)
            backends.append(b)
        except B.BackendUnavailable as exc:
            con.print(f"[yellow]skipping backend {b}: {exc}[/]")
    if "compare" in stages:
        from pipeline.spark import java_problem

        if problem := java_problem():
            con.print(f"[red]{problem}[/]")
            return 2
    command = " ".join(["bench/run.py", *(argv if argv is not None else sys.argv[1:])])
    doc = load_previous()
    doc.setdefault("scales", {})
    if a.note:
        doc["notes_manual"] = a.note
    if a.render_only:
        write_results(doc, con)
        return 0
    results = []
    for n in a.scale:
        r = run_scale(n, stages=stages, backends=backends, repeat=a.repeat, min_coverage=a.min_coverage,
                      con=con, timeout_s=a.timeout)
        r.update(command=command, repeat=a.repeat, date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                 load_after=common.load_now())
        prev = doc["scales"].get(str(n), {})
        if prev and set(r["stages"]) != set(STAGES):  # a partial run updates only its stages
            prev_stages = dict(prev.get("stages", {}))
            prev_stages.update(r["stages"])
            r["stages"] = prev_stages
        doc["scales"][str(n)] = r
        results.append(r)
        if not a.no_results:
            write_results(doc, con)
    common.write_json({"scales": results}, common.OUT / "run-results.json", stdout=a.json)
    oks = []
    for r in results:
        for name, st in r["stages"].items():
            oks += [st["ok"]] if name == "duckdb" else [v["ok"] for v in st.values()]
            if name == "duckdb" and st.get("check"):
                oks.append(st["check"]["identical"])
    return 0 if all(oks) else 1


def write_results(doc: dict, con) -> None:
    doc["machine"] = common.machine_facts()
    real = doc.setdefault("real", {})
    for key, path in (("ingest", common.OUT / "ingest-file.json"), ("compare", common.OUT / "compare-real-2026-07.json")):
        if path.is_file():
            real[key] = json.loads(path.read_text())
    synth_files = sorted(common.OUT.glob("ingest-synth-*.json")) + sorted(common.OUT.glob("ingest-file-*.json"))
    if synth_files:
        real["ingest_synth"] = [json.loads(p.read_text()) for p in synth_files]
    doc["notes"] = doc.get("notes_manual") or notes(doc)
    RESULTS_MD.write_text(render_md(doc))
    p = plot(doc, RESULTS_PNG, con)
    con.print(f"wrote {RESULTS_MD}" + (f" and {p}" if p else ""))


if __name__ == "__main__":
    sys.exit(main())
