"""Shared helpers of the benchmarks: child processes with wall time and peak RSS, tables, JSON.

Every measurement runs in a fresh process tree so measurements never share a heap: the
bench starts a bare launcher interpreter (LAUNCHER below, a "child subreaper") which forks
and execs the measured command, times it, waits for it with os.wait4 and reaps whatever it
left behind (a JVM, a decoder). Two memory figures come back:

- `maxrss`: the launcher's RUSAGE_CHILDREN ru_maxrss after everything is reaped = the
  largest peak RSS of any single process in the command's tree (the kernel folds reaped
  descendants' maxima into their reaper's): max(python, JVM, bgpdump...), not their sum.
  Floor: the launcher's own few MiB, which its fork carries into the command's figure;
- `tree_peak`: the largest *sum* of RSS over the command's whole process tree, sampled
  from /proc every 0.1 s (may miss a peak shorter than that; fork-before-exec moments of
  a process are not counted twice, see tree_rss).
"""
from __future__ import annotations

import ctypes
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
OUT = BENCH / "out"
SHARED = ROOT.parent / "shared" / "data"
ARCHIVE = SHARED / "archive"
DEFAULT_RIB = ARCHIVE / "route-views2/bgpdata/2026.07/RIBS/rib.20260730.1400.bz2"
PAGE = os.sysconf("SC_PAGE_SIZE")
PR_SET_CHILD_SUBREAPER = 36
SAMPLE_S = 0.1
MiB = 1 << 20


def pythonpath() -> str:
    """PYTHONPATH for a child run by another interpreter (a venv of another DuckDB version)
    where the project is not installed: the root (for `bench`) and a folder whose
    `bgp_congruency` links to the root (the project's import namespace)."""
    ns = OUT / "pythonpath"
    link = ns / "bgp_congruency"
    if not link.is_symlink():
        ns.mkdir(parents=True, exist_ok=True)
        link.symlink_to(ROOT, target_is_directory=True)
    return f"{ROOT}{os.pathsep}{ns}"


def console():
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def _subreaper() -> None:  # runs in the child between fork and exec; preserved across exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except Exception:
        pass


def become_subreaper() -> None:
    _subreaper()


def reap_descendants(timeout_s: float = 120.0) -> int:
    """Wait for every remaining child (orphans re-parented to this subreaper included), so
    their peak RSS is folded into ours; kills what is still alive after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    reaped = 0
    for _ in range(100_000):  # bounded: one iteration per reaped child or 0.05 s
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid:
            reaped += 1
            continue
        if time.monotonic() > deadline:
            for child in _children(os.getpid()):
                try:
                    os.kill(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 10
        time.sleep(0.05)
    return reaped


def _proc_table() -> dict[int, tuple[int, bytes, int, int]]:
    """pid -> (ppid, comm, rss bytes, vsize bytes), from one pass over /proc/*/stat."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as fh:
                s = fh.read()
        except OSError:
            continue
        close = s.rfind(b")")
        rest = s[close + 2:].split()
        try:
            out[int(d)] = (int(rest[1]), s[s.find(b"(") + 1:close], int(rest[21]) * PAGE, int(rest[20]))
        except (IndexError, ValueError):
            continue
    return out


def _ppid_map() -> dict[int, int]:
    return {p: v[0] for p, v in _proc_table().items()}


def _children(pid: int) -> list[int]:
    return [p for p, pp in _ppid_map().items() if pp == pid]


def tree_pids(root: int) -> list[int]:
    pp = _ppid_map()
    kids: dict[int, list[int]] = {}
    for p, q in pp.items():
        kids.setdefault(q, []).append(p)
    out, stack = [], [root]
    while stack and len(out) < 10_000:
        p = stack.pop()
        out.append(p)
        stack.extend(kids.get(p, ()))
    return out


def tree_rss(root: int, include_root: bool = False) -> int:
    """Sum of RSS over root's descendants. A child with exactly its parent's virtual size
    and within 5% of its parent's RSS (over 32 MiB) is a fork/vfork between fork and exec
    (the JVM's posix_spawn and Python's subprocess start helpers that way): it shares or
    copies the parent's pages for a moment and is skipped, or every such moment would count
    the parent twice."""
    tab = _proc_table()
    kids: dict[int, list[int]] = {}
    for p, v in tab.items():
        kids.setdefault(v[0], []).append(p)
    total, stack, seen = 0, [root], 0
    while stack and seen < 10_000:
        p = stack.pop()
        seen += 1
        stack.extend(kids.get(p, ()))
        if p not in tab or (p == root and not include_root):
            continue
        ppid, _comm, rss, vsize = tab[p]
        parent = tab.get(ppid)
        if parent and parent[3] == vsize and parent[2] > 32 * MiB and abs(rss - parent[2]) <= 0.05 * parent[2]:
            continue
        total += rss
    return total


def rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def hwm_bytes(pid: int | str = "self") -> int:
    """VmHWM (peak RSS) of a live process, from /proc."""
    try:
        m = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
        return int(m.group(1)) * 1024 if m else 0
    except OSError:
        return 0


@dataclass
class Measure:
    label: str
    cmd: list[str]
    wall_s: float
    maxrss: int  # bytes, ru_maxrss of wait4 (largest single process in the reaped tree)
    tree_peak: int  # bytes, largest sampled sum of RSS over the tree
    user_s: float
    sys_s: float
    rc: int
    result: dict = field(default_factory=dict)  # what the child reported, if anything
    timed_out: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


# The launcher between the bench and the measured command: a bare interpreter (-S -E, a
# few MiB) so the fork it makes for the command carries almost nothing into the command's
# ru_maxrss (Linux keeps a forked process's pre-exec peak in it). It is a subreaper (set
# by the bench before exec), times the command, waits for it with os.wait4, reaps every
# orphan left behind, and reports RUSAGE_CHILDREN: the largest peak RSS of any process in
# the command's tree.
LAUNCHER = r"""
import os, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
_, st, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
deadline = time.monotonic() + 120
for _ in range(100000):
    try:
        p, _s = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if p == 0:
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
import json, resource
allc = resource.getrusage(resource.RUSAGE_CHILDREN)
rc = os.waitstatus_to_exitcode(st)
with open(out, "w") as fh:
    json.dump({"wall": wall, "rc": rc, "child_maxrss": ru.ru_maxrss * 1024,
               "tree_maxrss": allc.ru_maxrss * 1024, "user": allc.ru_utime, "sys": allc.ru_stime}, fh)
os._exit(rc if 0 <= rc < 256 else 1)
"""


def duckdb_config(work: Path, limit: str) -> Path:
    """A config file for the runs at scale: the DuckDB engine under memory limit `limit`."""
    cfg = work / "scale.toml"
    cfg.write_text(f'engine = "duckdb"\nduckdb_memory_limit = "{limit}"\n')
    return cfg


def measured(m: Measure, label: str) -> dict:
    """run_child's Measure as a bench's figures (wall, CPU, peak RSS of the largest process and
    of the tree, MiB), after checking the process succeeded; says them on stderr."""
    assert m.rc == 0, f"{label}: exit {m.rc}"
    print(f"{label}: {m.wall_s:.1f} s, peak {m.maxrss >> 20} MiB", file=sys.stderr)
    return {"wall_s": m.wall_s, "cpu_s": round(m.user_s + m.sys_s, 1), "peak_mib": m.maxrss >> 20,
            "tree_peak_mib": m.tree_peak >> 20}


def run_child(cmd: list[str], *, label: str = "", timeout_s: float = 3600, stdout=None,
              env: dict | None = None, result_path: Path | None = None) -> Measure:
    """Run `cmd` in a fresh process tree (under LAUNCHER, its own session) and measure it.

    stdout: a path to write the command's stdout to (None = /dev/null). result_path: a
    JSON file the command writes its own figures to, returned as Measure.result."""
    import tempfile

    full_env = {**os.environ, "PYTHONPATH": pythonpath(), **(env or {})}
    if result_path is not None:
        Path(result_path).unlink(missing_ok=True)
    fd, usage_path = tempfile.mkstemp(prefix="bench-usage-", suffix=".json")
    os.close(fd)
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL
    peak = [0]
    done = threading.Event()
    timed_out = [False]
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-S", "-E", "-c", LAUNCHER, usage_path, *map(str, cmd)],
                            stdout=out, stderr=None, env=full_env, cwd=ROOT,
                            start_new_session=True, preexec_fn=_subreaper)

    def sample():
        while not done.wait(SAMPLE_S):
            total = tree_rss(proc.pid)
            peak[0] = max(peak[0], total)
            if time.perf_counter() - t0 > timeout_s and not timed_out[0]:
                timed_out[0] = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        _pid, status, ru = os.wait4(proc.pid, 0)
    finally:
        wall = time.perf_counter() - t0
        done.set()
        sampler.join(timeout=5)
        if out is not subprocess.DEVNULL:
            out.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    try:
        usage = json.loads(Path(usage_path).read_text())
    except (OSError, ValueError):  # killed before it could report
        usage = {"wall": wall, "rc": proc.returncode, "tree_maxrss": ru.ru_maxrss * 1024,
                 "user": ru.ru_utime, "sys": ru.ru_stime}
    Path(usage_path).unlink(missing_ok=True)
    result = {}
    if result_path is not None and Path(result_path).is_file():
        try:
            result = json.loads(Path(result_path).read_text())
        except ValueError:
            result = {}
    rc = usage["rc"] if not timed_out[0] else -9
    return Measure(label or " ".join(map(str, cmd[:3])), [str(c) for c in cmd], round(usage["wall"], 3),
                   usage["tree_maxrss"], peak[0], round(usage["user"], 3), round(usage["sys"], 3),
                   rc, result, timed_out[0])


def shell(command: str) -> list[str]:
    return ["/bin/sh", "-c", command]


def py(script: str, *args) -> list[str]:
    """A bench script run by this same interpreter, as a child."""
    return [sys.executable, str(BENCH / script), *map(str, args)]


def best(measures: list[Measure], key=lambda m: m.wall_s) -> Measure:
    """The fastest successful run; its memory figures are replaced by the largest seen
    over all repeats (conservative)."""
    ok = [m for m in measures if m.rc == 0] or measures
    b = min(ok, key=key)
    return Measure(b.label, b.cmd, b.wall_s, max(m.maxrss for m in ok), max(m.tree_peak for m in ok),
                   b.user_s, b.sys_s, b.rc, b.result, b.timed_out)


def repeat(n: int, fn, con=None, label: str = "") -> tuple[Measure, list[Measure]]:
    """Run fn() -> Measure n times (n >= 1); returns (best, all)."""
    runs = []
    for i in range(max(1, n)):
        m = fn()
        runs.append(m)
        if con is not None:
            state = "ok" if m.rc == 0 else f"FAILED rc={m.rc}" + (" (timeout)" if m.timed_out else "")
            con.print(f"  {label or m.label} run {i + 1}/{n}: {m.wall_s:.2f}s, maxrss "
                      f"{mib(m.maxrss)}, tree {mib(m.tree_peak)} [{state}]")
        if m.rc != 0:
            break
    return best(runs), runs


def mib(n: int | float | None) -> str:
    return "-" if n is None else f"{n / MiB:,.0f} MiB"


def rate(n: float | None) -> str:
    if not n:
        return "-"
    return f"{n / 1e6:.2f} M/s" if n >= 1e6 else f"{n / 1e3:,.0f} k/s"


def table(headers: list[str], rows: list[list], align: str | None = None) -> str:
    """A GitHub-flavoured Markdown table (also readable as plain text)."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or "l" + "r" * (len(headers) - 1)

    def line(r):
        return "| " + " | ".join(c.ljust(w[i]) if align[i] == "l" else c.rjust(w[i]) for i, c in enumerate(r)) + " |"

    sep = "|" + "|".join(("-" * (w[i] + 1) + ":") if align[i] == "r" else ("-" * (w[i] + 2)) for i in range(len(w))) + "|"
    return "\n".join([line(cells[0]), sep, *(line(r) for r in cells[1:])])


def write_json(obj, path: Path | None = None, stdout: bool = False) -> None:
    text = json.dumps(obj, indent=1, default=str)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    if stdout:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def write_result(path: str | None, obj: dict) -> None:
    """Child side: hand figures back to the parent."""
    if path:
        Path(path).write_text(json.dumps(obj, default=str))


def _cmd(cmd: list[str]) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return (r.stdout or r.stderr).strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def machine_facts() -> dict:
    """nproc, memory, CPU model and tool versions, for RESULTS.md."""
    import importlib.metadata as md

    lscpu = _cmd(["lscpu"])
    model = re.search(r"Model name:\s*(.+)", lscpu)
    mem = re.search(r"Mem:\s+(\S+)", _cmd(["free", "-h"]))

    def ver(pkg):
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return "not installed"

    bgpdump = _cmd(["dpkg-query", "-W", "-f", "${Version}", "bgpdump"]) or "unknown"
    java = _cmd(["java", "-version"]).splitlines()
    return {
        "nproc": _cmd(["nproc"]),
        "memory": mem.group(1) if mem else "",
        "cpu": model.group(1).strip() if model else platform.processor(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "pyspark": ver("pyspark"),
        "duckdb": ver("duckdb"),
        "pyarrow": ver("pyarrow"),
        "congruency-mrt (native decoder)": ver("congruency-mrt"),
        "bgpdump": f"{bgpdump} (Debian package)" if shutil.which("bgpdump") else "not installed",
        "java": java[0] if java else "",
    }


def now_utc(seconds: float | None = None) -> str:
    """When a bench measured, as its results record it (`date`): now, or the epoch `seconds`."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def load_now() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


# --- synthetic archives (synth), cached under bench/out/ -------------------------

#: Entries per snapshot of the whole synthetic archive ~ SYNTH_ALL * ases * vps, and of its
#: route-views2 file ~ SYNTH_RV2 * ases * vps (measured: 1.9-2.3 and 0.5-0.65 at 4,000-30,000 ASes, vps = ases/50).
SYNTH_ALL = 2.1
SYNTH_RV2 = 0.6
SYNTH_MONTH = "2026-07"


def synth_params(entries: int, *, per: float, snapshots: int) -> dict:
    """ases/vps/snapshots for about `entries` (per snapshot factor `per`), vps = ases / 50."""
    product = entries / snapshots / per
    ases = max(300, int(round((product * 50) ** 0.5)))
    vps = max(12, min(1000, ases // 50))
    return {"seed": 1, "ases": ases, "vps": vps, "months": [SYNTH_MONTH], "snapshots_per_month": snapshots}


def data_name(data_dir: Path) -> str:
    """A data dir's name in bench/out's file names and RESULTS.md: the folder holding it when it
    is called `data` (bench/out/synth-10/data -> synth-10), else its own."""
    src = Path(data_dir).resolve()
    return src.parent.name if src.name == "data" else src.name


def du(path) -> int:
    """Bytes of the files under `path` (files removed while it walks, as spill files are, count
    0): the project's own walker, common/layout.bytes_under, which the plan and the compare's
    staging peak use (imported here: bench/common is loaded before the project's namespace)."""
    from bgp_congruency.common.layout import bytes_under

    return bytes_under(path)


def synth_archive(out: Path, params: dict, con=None) -> dict:
    """Generate (or reuse when SYNTH.json matches `params`) a synthetic archive at `out`,
    without ground truth; returns its ground_truth/files.json listing, with "generate_s": the
    generation's wall time (recorded in GENERATED.json beside it, so a reuse still reports it)."""
    from bgp_congruency.synth.generate import generate

    meta, listing = out / "SYNTH.json", out / "ground_truth" / "files.json"
    if meta.is_file() and listing.is_file():
        have = json.loads(meta.read_text())
        if all(have.get(k) == v for k, v in params.items()):
            if con:
                con.print(f"reusing synthetic archive {out} ({json.loads(listing.read_text())['entries']:,} entries)")
            gen = out / "GENERATED.json"
            return {**json.loads(listing.read_text()),
                    "generate_s": json.loads(gen.read_text())["seconds"] if gen.is_file() else None}
    if con:
        con.print(f"generating synthetic archive {out}: {params}")
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                  console=con or console(), transient=True) as prog:
        task = prog.add_task("synth", total=None)

        def report(done, total, desc):
            prog.update(task, completed=done, total=total, description=desc)

        summary = generate(out, ground_truth=False, progress=report, **params)
    seconds = round(summary["seconds"], 1)
    (out / "GENERATED.json").write_text(json.dumps({"seconds": seconds}) + "\n")
    if con:
        con.print(f"  {summary['entries']:,} entries in {summary['files']} files, {seconds:.0f}s")
    return {**json.loads(listing.read_text()), "generate_s": seconds}
