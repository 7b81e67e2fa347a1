"""How much of a session's RIB changes per hour, measured on the real update files of the
shared archive with `bgpdump -m` (an independent decoder): the figures synth/churn.py's model
is fitted to.

Per BGP session (peer IP) of each file, over the file's window (its first to its last record):
- touched: distinct prefixes announced or withdrawn;
- of the announcements of a prefix the window announced before, the share with another AS
  path (a path change) and with the same one (a re-announcement, invisible in a RIB);
- withdrawals, and the distinct prefixes withdrawn.
Per hour is the window's figure scaled to an hour: an upper bound (a prefix that flaps in every
5 minutes counts in each). The share of a session's table is against the global table of its
family in the file's year (TABLE below: an assumption, not measured here).

Writes bench/out/churn.json (RESULTS.md's churn section).

    .venv/bin/python bench/churn.py [--json]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import render  # noqa: E402

ARCHIVE = ROOT.parent / "shared" / "data" / "archive"
FILES = (
    "rrc01/2024.10/updates.20241001.0055.gz",
    "rrc23/2022.04/updates.20220421.0200.gz",
    "route-views.sydney/bgpdata/2022.06/UPDATES/updates.20220601.0230.bz2",
    "route-views2/bgpdata/2026.02/UPDATES/updates.20260222.1530.bz2",
)
#: Prefixes of a full table per family in the file's year (approximate public figures of
#: the global table, e.g. the CIDR report: an assumption of this bench, not a measurement).
TABLE = {2022: {4: 900_000, 6: 150_000}, 2024: {4: 980_000, 6: 210_000}, 2026: {4: 1_050_000, 6: 240_000}}


def measure(path: Path) -> dict:
    out = subprocess.run(["bgpdump", "-m", str(path)], capture_output=True, text=True, check=True).stdout
    first = last = None
    sess: dict[str, dict] = defaultdict(lambda: {"touched": set(), "last": {}, "repeat": 0, "changed": 0,
                                                  "announced": 0, "withdrawals": 0, "withdrawn": set()})
    for line in out.splitlines():
        f = line.split("|")
        if len(f) < 6 or f[2] not in ("A", "W"):
            continue
        ts = float(f[1])
        first, last = (ts if first is None else min(first, ts)), (ts if last is None else max(last, ts))
        s, prefix = sess[f[3]], f[5]
        s["touched"].add(prefix)
        if f[2] == "W":
            s["withdrawals"] += 1
            s["withdrawn"].add(prefix)
            s["last"].pop(prefix, None)
            continue
        s["announced"] += 1
        aspath = f[6]
        if prefix in s["last"]:
            s["repeat"] += 1
            s["changed"] += aspath != s["last"][prefix]
        s["last"][prefix] = aspath
    window = max(1.0, (last or 0) - (first or 0))
    year = int(path.name.split(".")[1][:4])
    rows = []
    for ip, s in sess.items():
        fam = 6 if ":" in ip else 4
        rows.append({"afi": fam, "touched": len(s["touched"]), "repeat": s["repeat"], "changed": s["changed"],
                     "announced": s["announced"], "withdrawals": s["withdrawals"], "withdrawn": len(s["withdrawn"]),
                     "share_per_hour": len(s["touched"]) * 3600 / window / TABLE[year][fam]})
    rep = sum(r["repeat"] for r in rows)
    touches = sum(r["announced"] + r["withdrawals"] for r in rows)
    return {
        "file": str(path.relative_to(ARCHIVE)), "window_s": round(window, 1), "sessions": len(rows),
        "median_touched": statistics.median(r["touched"] for r in rows),
        "median_touched_per_hour": round(statistics.median(r["touched"] for r in rows) * 3600 / window),
        "median_share_per_hour": statistics.median(r["share_per_hour"] for r in rows),
        "path_change_share": round(sum(r["changed"] for r in rows) / rep, 4) if rep else None,
        "withdrawal_share": round(sum(r["withdrawals"] for r in rows) / touches, 4) if touches else None,
        "withdrawn_share_of_touched": round(sum(r["withdrawn"] for r in rows) / max(1, sum(r["touched"] for r in rows)), 4),
    }


def pool(files: list[dict]) -> dict:
    """The figures synth/churn.py is fitted to: the median over the files of each file's."""
    return {k: statistics.median(g[k] for g in files)
            for k in ("median_share_per_hour", "path_change_share", "withdrawal_share")}


# ------------------------------------------------------------------ its section of RESULTS.md
def section(runs: list[dict]) -> list[str]:
    """bench/churn.py: how a session's routes change per hour in the real update files."""
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
    rows = [[f"`{g['file']}`", render.num(g["window_s"], 0), g["sessions"], render.num(g["median_touched"], 0),
             g["median_touched_per_hour"], f"{100 * g['median_share_per_hour']:.3f}%", render.pct(g["path_change_share"]),
             render.pct(g["withdrawal_share"])] for g in r["files"]]
    p = r["pooled"]
    rows.append(["pooled (median of the files)", "", "", "", "", f"{100 * p['median_share_per_hour']:.3f}%",
                 render.pct(p["path_change_share"]), render.pct(p["withdrawal_share"])])
    return render.section("Churn: how much of a RIB changes per hour (bench/churn.py)", intro,
                    ["update file", "window s", "sessions", "median touched", "per hour", "of a table per hour",
                     "repeats with a new path", "withdrawals"], rows, align="lrrrrrrr")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    got = [measure(ARCHIVE / f) for f in FILES]
    pooled = pool(got)
    from bench import common

    doc = {"files": got, "pooled": pooled, "command": "bench/churn.py",
           "date": common.now_utc()}
    common.write_json(doc, common.OUT / "churn.json", stdout=args.json)
    if args.json:
        return 0
    for g in got:
        print(f"{g['file']}: window {g['window_s']:.0f} s, {g['sessions']} sessions; median touched "
              f"{g['median_touched']} ({g['median_touched_per_hour']}/h, {100 * g['median_share_per_hour']:.3f}% "
              f"of a table/h); repeats with a new path {100 * g['path_change_share']:.1f}%; withdrawals "
              f"{100 * g['withdrawal_share']:.1f}% of updates")
    print(f"pooled (median of the files): {100 * pooled['median_share_per_hour']:.3f}% of a table touched per hour, "
          f"{100 * pooled['path_change_share']:.1f}% of repeats change path, {100 * pooled['withdrawal_share']:.1f}% "
          "of updates are withdrawals")
    return 0


if __name__ == "__main__":
    sys.exit(main())
