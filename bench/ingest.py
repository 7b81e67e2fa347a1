#!/usr/bin/env python3
"""Ingest throughput and peak RSS: each decoding backend, from the compressed MRT file to
Parquet through ingest.run.decode_file (our framing check included, as production does
it), next to `bgpdump -m FILE > /dev/null` and `bzip2 -dc FILE > /dev/null` (gzip -dc for
.gz, cat for raw MRT) on the same file(s), in the same run. Every run is a fresh child
process; runs are interleaved round-robin and the fastest of --repeat is reported (peak
RSS: the largest over the repeats). Ratios are times relative to `bgpdump -m` (below 1 =
faster). "decode only (native)" is the native decoder without the Parquet writer.

--raw decompresses the file first and measures on raw MRT; --one-core pins every variant
to one CPU (taskset). The issue 10 targets are checked at the end (and in the JSON).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench.common import MiB, mib, rate  # noqa: E402

BACKENDS = ("native", "bgpdump", "pybgpstream")


def slot_for(path: Path):
    """The Slot production would have for an archive file (collector, project, month,
    dump time from the path: RouteViews or RIS layout)."""
    from bgp_congruency.ingest.discovery import Slot

    m = re.match(r"^(rib|bview)\.(\d{8})\.(\d{4})(\.bz2|\.gz)?$", path.name)
    if not m:
        raise ValueError(f"{path}: not a RIB dump name (rib.YYYYMMDD.HHMM.bz2 / bview.YYYYMMDD.HHMM.gz)")
    when = datetime.strptime(m.group(2) + m.group(3), "%Y%m%d%H%M").replace(tzinfo=timezone.utc)
    parts = path.parts
    if m.group(1) == "rib":
        i = parts.index("bgpdata") if "bgpdata" in parts else len(parts) - 3
        collector, project = parts[i - 1], "routeviews"
    else:
        collector, project = parts[-3], "ris"
    return Slot(collector=collector, project=project, month=f"{when:%Y-%m}", target=when,
                url=str(path), dump_time=when)


def child_decode_only(files: list[Path], result: str | None) -> int:
    """Child mode: the native decoder's batches, counted, not written (the decoder alone)."""
    from bgp_congruency.common.config import Config
    from bgp_congruency.ingest.backends import native

    t0 = time.perf_counter()
    entries = 0
    for f in files:
        slot = slot_for(f)
        for b in native.decode_checked(f, Config().batch_rows, collector=slot.collector, project=slot.project,
                                       snapshot_time=slot.dump_time, source_file=str(f)):
            entries += b.num_rows
    common.write_result(result, {"entries": entries, "seconds": time.perf_counter() - t0,
                                 "python_hwm": common.hwm_bytes()})
    return 0


def child_decode(backend_name: str, files: list[Path], out_dir: Path, result: str | None) -> int:
    """Child mode: decode every file with one backend into out_dir, then merge each
    collector's dumps into its routes (production's layout and steps: ingest/run.py, the
    collectors' route mergers fed as the dumps are decoded, `route_feeds`)."""
    from bgp_congruency.common import layout
    from bgp_congruency.common.config import Config
    from bgp_congruency.ingest import backends, routes
    from bgp_congruency.ingest.run import decode_file, route_feeds
    from bgp_congruency.ingest.writer import SnapshotWriter

    t0 = time.perf_counter()
    backend = backends.get(backend_name)
    cfg = Config(data_dir=str(out_dir))
    batch_rows = cfg.batch_rows
    entries = 0
    decoded_files: dict[tuple[str, str], list[Path]] = {}
    feeds = route_feeds(cfg, [slot_for(f) for f in files])
    for f in files:
        slot = slot_for(f)
        share = feeds[slot.collector].start()
        writer = SnapshotWriter(Path(layout.decoded_file(out_dir, slot.month, slot.collector, f.name)), share)
        try:
            stats, decoded = decode_file(f, slot, backend, writer, batch_rows=batch_rows, source=str(f),
                                         grouped=share.grouped(f.stat().st_size, slot.project))
            decoded_files.setdefault((slot.month, slot.collector), []).append(Path(writer.publish()))
            writer = None
        finally:
            if writer is not None:
                writer.abort()
        entries += decoded[4] + decoded[6]
    outputs = []
    for (month, collector), fs in sorted(decoded_files.items()):
        outputs.append(str(routes.merge(cfg, month, collector, fs, feed=feeds[collector])))
        for d in fs:
            d.unlink()
    common.write_result(result, {"entries": entries, "seconds": time.perf_counter() - t0,
                                 "python_hwm": common.hwm_bytes(), "outputs": outputs,
                                 "batch_rows": batch_rows})
    common.reap_descendants()
    return 0


def decompressor(f: Path) -> str:
    return "gzip -dc" if f.name.endswith(".gz") else "bzip2 -dc" if f.name.endswith(".bz2") else "cat"


def variants(files: list[Path], backends: list[str], work: Path, keep: dict[str, Path] | None = None,
             pin: bool = False, decode_only: bool = True):
    """name -> (command, result file). keep: backend -> data dir to write its Parquet to."""
    q = " ".join(f"'{f}'" for f in files)
    out = {}
    for b in backends:
        dest = (keep or {}).get(b) or work / f"parquet-{b}"
        res = work / f"result-{b}.json"
        out[f"ingest ({b})"] = (common.py("ingest.py", "--child-decode", b, "--out-dir", dest,
                                          "--result", res, *files), res)
    if decode_only and "native" in backends:
        res = work / "result-decode-only.json"
        out["decode only (native)"] = (common.py("ingest.py", "--child-decode-only", "--result", res, *files), res)
    out["bgpdump -m"] = (common.shell(f"for f in {q}; do bgpdump -m \"$f\" >/dev/null 2>&1 || exit 1; done"), None)
    kinds = {decompressor(f) for f in files}
    label = next(iter(kinds)) if len(kinds) == 1 else "bzip2/gzip -dc"
    out[label] = (common.shell("; ".join(f"{decompressor(f)} '{f}' >/dev/null || exit 1" for f in files)), None)
    if pin:
        cpu = str(min(os.sched_getaffinity(0)))
        out = {k: (["taskset", "-c", cpu, *cmd], res) for k, (cmd, res) in out.items()}
    return out


def count_entries(files: list[Path]) -> int:
    from bgp_congruency.ingest import framing

    return sum(framing.scan(f).total_entries for f in files)


def measure(files: list[Path], *, backends: list[str], repeat: int, work: Path, con,
            keep: dict[str, Path] | None = None, timeout_s: float = 3600, pin: bool = False) -> dict:
    """Run every variant `repeat` times, round-robin; returns figures per variant."""
    work.mkdir(parents=True, exist_ok=True)
    vs = variants(files, backends, work, keep, pin)
    runs: dict[str, list] = {k: [] for k in vs}
    for r in range(max(1, repeat)):
        for name, (cmd, res) in vs.items():
            if runs[name] and runs[name][-1].rc != 0:
                continue
            con.print(f"[dim]run {r + 1}/{repeat}[/] {name} (load {common.load_now()})")
            m = common.run_child(cmd, label=name, timeout_s=timeout_s, result_path=res)
            con.print(f"  {m.wall_s:.2f}s, maxrss {mib(m.maxrss)}, tree {mib(m.tree_peak)}"
                      + ("" if m.rc == 0 else f" [red]FAILED rc={m.rc}[/]"))
            runs[name].append(m)
    entries = None
    for b in backends:
        ok = [m for m in runs[f"ingest ({b})"] if m.rc == 0 and m.result.get("entries")]
        if ok:
            entries = ok[0].result["entries"]
            break
    if entries is None:
        entries = count_entries(files)
    base = common.best(runs["bgpdump -m"])
    base_s = base.wall_s if base.rc == 0 else None
    rows = {}
    for name, ms in runs.items():
        b = common.best(ms)
        ok = b.rc == 0
        rows[name] = {
            "seconds": b.wall_s if ok else None,
            "entries_per_s": round(entries / b.wall_s) if ok and b.wall_s else None,
            "time_vs_bgpdump_m": round(b.wall_s / base_s, 3) if ok and base_s else None,
            "maxrss_bytes": b.maxrss,
            "tree_peak_bytes": b.tree_peak,
            "cpu_s": round(b.user_s + b.sys_s, 2),
            "inner_seconds": round(b.result["seconds"], 3) if b.result.get("seconds") else None,
            "runs_s": [m.wall_s for m in ms],
            "ok": ok,
            "command": " ".join(b.cmd) if len(" ".join(b.cmd)) < 400 else " ".join(b.cmd)[:400] + " ...",
        }
    return {"files": [str(f) for f in files], "entries": entries,
            "bytes": sum(f.stat().st_size for f in files), "repeat": repeat, "variants": rows}


def render(res: dict) -> str:
    rows = []
    for name, v in res["variants"].items():
        rows.append([name, f"{v['seconds']:.2f}" if v["seconds"] else "failed", rate(v["entries_per_s"]),
                     f"{v['time_vs_bgpdump_m']:.2f}x" if v["time_vs_bgpdump_m"] else "-",
                     mib(v["maxrss_bytes"]), mib(v["tree_peak_bytes"]), f"{v['cpu_s']:.1f}"])
    return common.table(["variant", "seconds (best)", "entries/s", "time vs bgpdump -m",
                         "peak RSS (max proc)", "peak RSS (tree sum)", "CPU s"], rows)


def synth_file(entries: int, con) -> Path:
    """A single-snapshot synthetic archive whose route-views2 RIB has about `entries`
    entries (cached in bench/out/); returns that file, the archive's biggest RIB."""
    params = common.synth_params(entries, per=common.SYNTH_RV2, snapshots=1)
    out = common.OUT / f"synth-file-{entries}"
    listing = common.synth_archive(out, params, con)
    rv2 = [f for f in listing["files"] if f["collector"] == "route-views2"]
    best = max(rv2, key=lambda f: sum(f["entries"].values()))
    return out / best["path"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--file", type=Path, help=f"MRT RIB file (default {common.DEFAULT_RIB})")
    p.add_argument("--synth-entries", type=int, metavar="N",
                   help="instead: a generated single-snapshot archive whose route-views2 RIB has "
                        "about N entries (cached in bench/out/synth-file-N)")
    p.add_argument("--repeat", type=int, default=2, help="runs per variant; the best is reported (default 2)")
    p.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated (default native,bgpdump,pybgpstream)")
    p.add_argument("--raw", action="store_true", help="decompress the file first; measure on raw MRT")
    p.add_argument("--one-core", action="store_true", help="pin every variant to one CPU (taskset -c)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds per run before it is killed (default 3600)")
    p.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    p.add_argument("--child-decode", help=argparse.SUPPRESS)
    p.add_argument("--child-decode-only", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out-dir", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("files", nargs="*", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child_decode:
        return child_decode(a.child_decode, a.files, a.out_dir, a.result)
    if a.child_decode_only:
        return child_decode_only(a.files, a.result)
    con = common.console()
    if a.repeat < 1 or a.repeat > 20:
        p.error("--repeat: 1..20")
    if a.file and a.synth_entries:
        p.error("--file and --synth-entries are exclusive")
    from bgp_congruency.ingest import backends as B

    wanted = [b.strip() for b in a.backends.split(",") if b.strip()]
    usable = []
    for b in wanted:
        try:
            B.get(b)
            usable.append(b)
        except B.BackendUnavailable as exc:
            con.print(f"[yellow]skipping backend {b}: {exc}[/]")
    if not shutil.which("bgpdump"):
        con.print("[red]bgpdump is not on PATH: the bgpdump -m baseline is needed[/]")
        return 2
    if a.synth_entries:
        f = synth_file(a.synth_entries, con)
        tag = f"synth-{a.synth_entries}"
    else:
        f = a.file or common.DEFAULT_RIB
        tag = "file"
    if not f.is_file():
        con.print(f"[red]{f}: no such file[/]")
        return 2
    if a.raw and decompressor(f) != "cat":
        raw = common.OUT / "raw" / Path(*f.parts[-5:-1]) / f.name.rsplit(".", 1)[0]
        raw.parent.mkdir(parents=True, exist_ok=True)
        with open(raw, "wb") as out:
            subprocess.run([*decompressor(f).split(), str(f)], stdout=out, check=True)
        f, tag = raw, tag + "-raw"
    tag += "-1core" if a.one_core else ""
    work = common.OUT / "ingest" / tag
    shutil.rmtree(work, ignore_errors=True)
    con.print(f"ingest bench on {f} ({f.stat().st_size / MiB:.1f} MiB), backends {usable}, repeat {a.repeat}"
              + (", pinned to one CPU" if a.one_core else ""))
    res = measure([f], backends=usable, repeat=a.repeat, work=work, con=con, timeout_s=a.timeout, pin=a.one_core)
    shutil.rmtree(work, ignore_errors=True)  # the Parquet outputs are not kept
    res["machine"] = {"nproc": common.machine_facts()["nproc"]}
    res["command"] = " ".join(["bench/ingest.py", *(argv if argv is not None else sys.argv[1:])])
    common.write_json(res, common.OUT / f"ingest-{tag}.json", stdout=a.json)
    con.print(f"\n{res['entries']:,} entries, {res['bytes'] / MiB:.1f} MiB; best of {a.repeat} runs "
              "(wall time of a fresh process each; peak RSS = largest over the runs)")
    con.print(render(res))
    res["targets"] = targets(res)
    for t in res["targets"]:
        con.print(("[green]met[/]    " if t["met"] else "[red]NOT met[/] ") + t["what"] + f": {t['value']}")
    common.write_json(res, common.OUT / f"ingest-{tag}.json")
    return 0 if all(v["ok"] for v in res["variants"].values()) else 1


def targets(res: dict) -> list[dict]:
    """Issue 10's targets for the default (native) backend, from this run's figures."""
    v = res["variants"]
    nat = v.get("ingest (native)")
    if not nat or not nat["ok"]:
        return []
    out = []
    floor = next((v[k] for k in ("bzip2 -dc", "gzip -dc") if k in v and v[k]["ok"]), None)
    if nat["time_vs_bgpdump_m"] and floor:
        speedup = 1 / nat["time_vs_bgpdump_m"]
        out.append({"what": "compressed file to published Parquet >= 1.5x faster than bgpdump -m",
                    "value": f"{speedup:.2f}x faster", "met": speedup >= 1.5})
        vs_floor = nat["seconds"] / floor["seconds"]
        out.append({"what": "... and <= 1.5x the decompression alone (bzip2/gzip -dc)",
                    "value": f"{vs_floor:.2f}x", "met": vs_floor <= 1.5})
    if "cat" in v:
        for k in ("ingest (native)", "decode only (native)"):
            if k in v and v[k]["ok"]:
                out.append({"what": f"raw MRT, {k}: >= 1M entries/s", "value": rate(v[k]["entries_per_s"]),
                            "met": v[k]["entries_per_s"] >= 1_000_000})
    peak = max(nat["maxrss_bytes"], nat["tree_peak_bytes"])
    out.append({"what": f"peak RSS < 1 GiB ({res['entries']:,} entries)", "value": mib(peak), "met": peak < 1024 * MiB})
    return out


if __name__ == "__main__":
    sys.exit(main())
