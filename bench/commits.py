#!/usr/bin/env python3
"""The DuckDB compare job of two commits side by side on one month: what a change of the
code costs, on this machine and this DuckDB, measured in one run.

Each commit is checked out once as a git worktree under bench/out/worktrees/, with its own
build of the native module (`native`: cargo, once per commit) and none of this checkout's
modules (ONLY_THIS_COMMIT), and runs the
whole `congruency compare` of the month (pipeline/job.compare_months: the engine's steps, the
hints build, the publish) with the config's defaults (common/config.load: the collectors' VP
groups too), in a fresh process, into a data dir of
its own that holds only the month's routes and manifest (linked) and is emptied before every run (a
first publish each time). The commits alternate with the DuckDB scan floor (bench/compare.py:
the same files and columns, every value decoded, one query, this checkout's), round-robin,
best of --repeat; then the published tables of the commits' last runs are compared row for
row. Wall seconds are the job's own, inside the process (imports not counted), as
bench/run.py's "duckdb job". Both commits read the month as routes (common/routes.py); against
a commit from before the routes, which ingests differently, use bench/routes.py.

    .venv/bin/python bench/commits.py --data-dir bench/out/synth-10/data --month 2026-07 \\
        --commits 5e55cb6,HEAD --repeat 3 [--json]

Writes bench/out/commits-NAME[-LIMIT].json (NAME: the data dir's folder name, or its parent's for a
folder named data), which bench/run.py renders into RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common, render  # noqa: E402
from bench.common import OUT  # noqa: E402

#: The published tables compared row for row between commits: the engine's, and those the
#: compare's stagers build from the routes (provenance names its commit, so it differs).
TABLES = ("cleaning_stats", "paths", "vps", "pairs", "divergence", "month_summary", "as_relationships",
          "prefix_origins", "hints")

#: The child: one commit's compare job, timed inside the process (argv: data dir, month).
JOB = """
import json, sys, time
from bgp_congruency.common.config import load
from bgp_congruency.pipeline import job
cfg = load().with_overrides(data_dir=sys.argv[1], engine="duckdb",  # as `congruency compare`: VP groups too
                            duckdb_memory_limit=sys.argv[3] or None)
t = time.perf_counter()
[res] = job.compare_months(cfg, [sys.argv[2]])
print(json.dumps({"work_s": time.perf_counter() - t, "error": res.error}))
"""

#: The floor, in this checkout (argv: the data dir, the month).
FLOOR = """
import json, sys, time
from pathlib import Path
from bench.compare import DUCKDB_FLOOR, route_files
from bgp_congruency.common import duck
from bgp_congruency.common.config import Config
from bgp_congruency.common.duck import read_parquet
con = duck.connect(Config(engine="duckdb"))
files = route_files(Path(sys.argv[1]), sys.argv[2])
t = time.perf_counter()
con.execute(DUCKDB_FLOOR.format(src=read_parquet(files))).fetchone()
print(json.dumps({"work_s": time.perf_counter() - t}))
"""


def worktree(commit: str) -> tuple[str, Path]:
    """(full hash, a worktree of it under bench/out/worktrees, made once)."""
    sha = subprocess.run(["git", "rev-parse", "--verify", f"{commit}^{{commit}}"], cwd=common.ROOT,
                         capture_output=True, text=True)
    if sha.returncode:
        raise SystemExit(f"error: --commits: {commit!r} is no commit of {common.ROOT}")
    sha = sha.stdout.strip()
    tree = OUT / "worktrees" / sha[:12]
    if not (tree / "pipeline" / "job.py").is_file():
        shutil.rmtree(tree, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=common.ROOT, check=True)
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha], cwd=common.ROOT, check=True,
                       capture_output=True)
    ns = tree.parent / f"{sha[:12]}-pythonpath"
    if not (ns / "bgp_congruency").is_symlink():
        ns.mkdir(parents=True, exist_ok=True)
        (ns / "bgp_congruency").symlink_to(tree, target_is_directory=True)
    (ns / "sitecustomize.py").write_text(ONLY_THIS_COMMIT)
    native(tree, ns)
    return sha, tree


#: Imported at the start of every child with the commit's PYTHONPATH folder (Python's
#: sitecustomize): `bgp_congruency` is a namespace package, and the venv's editable install of
#: this checkout would lend the commit every module it lacks, silently HEAD's code.
ONLY_THIS_COMMIT = """import sys

sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable___bgp_congruency")]
sys.path[:] = [p for p in sys.path if not p.startswith("__editable__.bgp_congruency")]
"""


def native(tree: Path, ns: Path) -> None:
    """The commit's own native module (ingest/native) in its PYTHONPATH folder `ns`, built once:
    without it both commits would load the one installed in the venv, and a change of the
    decoder or the route merger would measure nothing."""
    built = ns / "congruency_mrt" / ".built"  # the interpreter it was built for
    if not (tree / "ingest" / "native" / "Cargo.toml").is_file() or \
            (built.is_file() and built.read_text() == sys.executable):
        return
    import importlib.util

    installed = importlib.util.find_spec("congruency_mrt")
    if installed is None or installed.origin is None:
        raise SystemExit("error: congruency_mrt is not installed in this venv (run `make setup`)")
    common.console().print(f"building {tree.name}'s native module (cargo build --release) ...")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{Path.home() / '.cargo' / 'bin'}"
                                 f"{os.pathsep}{os.environ.get('PATH', '')}",
           "PYO3_PYTHON": sys.executable, "CARGO_TARGET_DIR": str(tree.parent / f"{tree.name}-cargo")}
    # as maturin builds the wheel (ingest/native/pyproject.toml): not linked to libpython
    got = subprocess.run(["cargo", "build", "--release", "--quiet", "--features", "pyo3/extension-module"],
                         cwd=tree / "ingest" / "native", env=env, capture_output=True, text=True)
    if got.returncode:
        raise SystemExit(f"error: cargo build of {tree}/ingest/native failed: {got.stderr.strip()[-500:]}")
    pkg = ns / "congruency_mrt"
    shutil.rmtree(pkg, ignore_errors=True)
    pkg.mkdir()
    shutil.copy(installed.origin, pkg / "__init__.py")  # maturin's: it imports the .so beside it
    shutil.copy(Path(env["CARGO_TARGET_DIR"]) / "release" / "libcongruency_mrt.so", pkg / "congruency_mrt.abi3.so")
    built.write_text(sys.executable)


def fresh_data_dir(sha: str, data_dir: Path, month: str) -> Path:
    """bench/out/commits/<sha>: only the month's routes and manifest, linked (nothing published)."""
    d = OUT / "commits" / sha[:12]
    shutil.rmtree(d, ignore_errors=True)
    for sub in ("routes", "manifest"):
        (d / sub).mkdir(parents=True)
        (d / sub / f"month={month}").symlink_to((data_dir / sub / f"month={month}").resolve(), target_is_directory=True)
    return d


def child(script: str, args: list[str], pythonpath: str, label: str, timeout_s: float) -> dict:
    out = OUT / f"commits-child-{os.getpid()}.out"
    m = common.run_child([sys.executable, "-c", script, *args], label=label, timeout_s=timeout_s,
                         stdout=out, env={"PYTHONPATH": pythonpath})
    text = out.read_text() if out.exists() else ""
    out.unlink(missing_ok=True)
    lines = [ln for ln in text.splitlines() if ln.startswith("{")]
    if m.rc != 0 or not lines:
        raise SystemExit(f"error: {label} exited {m.rc}: {text.strip()[-500:]}")
    got = json.loads(lines[-1])
    if got.get("error"):
        raise SystemExit(f"error: {label}: {got['error']}")
    return {"work_s": got["work_s"], "peak_rss": m.tree_peak}


def same_tables(a: Path, b: Path, month: str) -> dict:
    """Rows of each published table in a and b, and rows in one and not the other."""
    import duckdb

    con = duckdb.connect()
    out = {}
    for t in TABLES:
        fa, fb = (sorted(str(p) for p in (d / t / f"month={month}").rglob("*.parquet")) for d in (a, b))
        if not fa or not fb:  # a table one commit's compare does not publish (the hints, before 5abd4eb)
            out[t] = {"published_by": [d.name for d, f in ((a, fa), (b, fb)) if f]}
            continue
        out[t] = differing(con, *(f"read_parquet({f!r}, hive_partitioning = false)" for f in (fa, fb)))
    return out


def differing(con, a: str, b: str) -> dict:
    """The rows of two relations, and the rows in one and not the other, over the columns both
    have (a table that gained columns after a commit, as as_relationships' `decided` and
    `evidence`, is compared on the others, which are named)."""
    ca, cb = ([c for c, *_ in con.execute(f"DESCRIBE SELECT * FROM {r}").fetchall()] for r in (a, b))
    cols = ", ".join(f'"{c}"' for c in ca if c in cb)
    n = [con.execute(f"SELECT count(*) FROM {r}").fetchone()[0] for r in (a, b)]
    diff = sum(con.execute(f"SELECT count(*) FROM (SELECT {cols} FROM {x} EXCEPT ALL SELECT {cols} FROM {y})")
               .fetchone()[0] for x, y in ((a, b), (b, a)))
    out = {"rows": n, "differing_rows": diff}
    if set(ca) != set(cb):
        out["columns_in_one_only"] = sorted(set(ca) ^ set(cb))
    return out


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/commits.py: the DuckDB compare job of two commits side by side on one month."""
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
                         f"`{c['commit'][:9]}` {c['subject'][:60]}", render.num(c["best_s"]),
                         ", ".join(f"{x:.2f}" for x in c["runs_s"]), render.num(r["floor_s"]), f"{c['vs_floor']:.1f}x",
                         render.ratio(c.get("vs_first")) if i else "-", common.mib(c["peak_rss"]),
                         (("identical" if same else "DIFFERENT") + "".join(
                             f"; {t} only {v['published_by'][0][:9]}" for t, v in r["tables"].items()
                             if v.get("published_by"))) if i else "",
                         f"`{r['command']}` ({r['date']}, load after {r['load_after']})" if not i else ""])
    return render.section("DuckDB compare job: two commits side by side", intro,
                    ["data", "commit", "best s", "runs s", "floor s", "vs floor", "vs first", "peak RSS", "tables",
                     "command"], rows, align="llrlrrrrll")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True, help="a data dir with the month ingested")
    ap.add_argument("--month", default="2026-07", help="YYYY-MM (default 2026-07)")
    ap.add_argument("--commits", default="HEAD~1,HEAD", help="two commits, before then after (default HEAD~1,HEAD)")
    ap.add_argument("--limit", help="duckdb_memory_limit for both (default: the config's)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each, interleaved; the best counts (default 3)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds a run may take (default 3600)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    a = ap.parse_args(argv)
    con = common.console()
    from bgp_congruency.common import layout

    src = layout.routes_dir(a.data_dir, a.month)
    if not src.is_dir():
        raise SystemExit(f"error: --data-dir: {src} does not exist (ingest the month first)")
    commits = [c.strip() for c in a.commits.split(",") if c.strip()]
    if len(commits) != 2 or a.repeat < 1:
        raise SystemExit("error: --commits takes two commits, --repeat at least 1")
    trees = [worktree(c) for c in commits]
    runs: dict[str, list[dict]] = {"floor": [], **{sha: [] for sha, _ in trees}}
    for i in range(a.repeat):
        con.print(f"round {i + 1} of {a.repeat}: floor")
        runs["floor"].append(child(FLOOR, [str(a.data_dir.resolve()), a.month], common.pythonpath(), "floor",
                                   a.timeout))
        for sha, tree in trees:
            con.print(f"round {i + 1} of {a.repeat}: {sha[:12]}")
            d = fresh_data_dir(sha, a.data_dir, a.month)
            runs[sha].append(child(JOB, [str(d), a.month, a.limit or ""], f"{tree}{os.pathsep}{tree.parent / (sha[:12] + '-pythonpath')}",
                                   sha[:12], a.timeout))
    floor = min(r["work_s"] for r in runs["floor"])
    rows = []
    for (sha, _), name in zip(trees, commits):
        best = min(runs[sha], key=lambda r: r["work_s"])
        subj = subprocess.run(["git", "log", "-1", "--format=%s", sha], cwd=common.ROOT, capture_output=True,
                              text=True).stdout.strip()
        rows.append({"commit": sha[:12], "asked": name, "subject": subj[:100], "best_s": round(best["work_s"], 2),
                     "runs_s": [round(r["work_s"], 2) for r in runs[sha]], "vs_floor": round(best["work_s"] / floor, 2),
                     "peak_rss": best["peak_rss"]})
    rows[1]["vs_first"] = round(rows[1]["best_s"] / rows[0]["best_s"], 3)
    check = same_tables(*(OUT / "commits" / sha[:12] for sha, _ in trees), a.month)
    name = common.data_name(a.data_dir)
    doc = {"data_dir": str(a.data_dir), "name": name, "month": a.month, "repeat": a.repeat, "limit": a.limit,
           "floor_s": round(floor, 3), "floor_runs_s": [round(r["work_s"], 3) for r in runs["floor"]],
           "commits": rows, "tables": check,
           "command": "bench/commits.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "date": common.now_utc(), "load_after": common.load_now(),
           "machine": common.machine_facts().get("cpu")}
    common.write_json(doc, OUT / f"commits-{name}{'-' + a.limit if a.limit else ''}.json")
    if a.json:
        common.write_json(doc, stdout=True)
    else:
        con.print(common.table(["commit", "best s", "runs s", "vs floor", "vs first"],
                               [[r["commit"], f"{r['best_s']:.2f}", ", ".join(f"{x:.2f}" for x in r["runs_s"]),
                                 f"{r['vs_floor']:.1f}x", f"{r.get('vs_first', 1):.3f}x"] for r in rows]))
        con.print(f"floor {floor:.2f} s; tables: " + ", ".join(
            f"{t} " + ("identical" if v.get("differing_rows") == 0 else
                       f"only published by {', '.join(v['published_by'])}" if "published_by" in v else str(v))
            for t, v in check.items()))
    return 0 if all(v.get("differing_rows", 0) == 0 for v in check.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
