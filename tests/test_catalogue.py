"""The collector catalogue: lifetimes at their sources' precision, collector sets, the
refresh from the projects' metadata (the stored real outputs of RIPEstat rrc-info and the
RouteViews API, served on 127.0.0.1), the coverage policy and the plan.

Evidence: the dates and counts of ../shared/data/collectors/COLLECTORS.md (written from the
same sources by hand), and the stored JSON documents themselves.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import datetime, timezone

import pytest

from bgp_congruency.cli.main import main as cli
from bgp_congruency.ingest import catalogue
from bgp_congruency.ingest import catalogue_sources as cs
from bgp_congruency.ingest.policy import assess
from bgp_congruency.runner.plan import human
from tests.support.archive_server import serve
from tests.support.cli import congruency
from tests.support.data import DATA

FACTS = DATA / "collectors"
RIPESTAT = FACTS / "src_mrtdl_stat-ripe-net-data-rrc-info-data.json"
ROUTEVIEWS = FACTS / "src_mrtdl_api-routeviews-guest-collector.json"
needs_facts = pytest.mark.skipif(not RIPESTAT.is_file(), reason=f"collector fact sheet not found at {FACTS}")


def utc(*a) -> datetime:
    return datetime(*a, tzinfo=timezone.utc)


def test_shipped_catalogue_has_every_collector_of_the_fact_sheet():
    cat = catalogue.load()
    ris = [n for n, c in cat.items() if c.project.name == "ris"]
    rv = [n for n, c in cat.items() if c.project.name == "routeviews"]
    # COLLECTORS.md: rrc00-rrc26 but rrc17 (no source); 60 RouteViews names, the Cisco one has no MRT archive.
    assert sorted(ris) == [f"rrc{i:02d}" for i in range(27) if i != 17]
    assert len(rv) == 59 and "route-views" not in rv
    # Families only where a source gives them (COLLECTORS.md: 4 RouteViews collectors).
    assert {n: cat[n].afis for n in rv if cat[n].afis} == {
        "route-views2": (4,), "route-views6": (6,), "route-views4": (4, 6), "route-views.sfmix": (4, 6)}
    assert cat["route-views2"].legacy_paths == ("",)
    # Dates as COLLECTORS.md gives them.
    assert (cat["rrc02"].active_from, cat["rrc02"].active_until) == ("2001-03", "2008-10")
    assert (cat["route-views.jinx"].active_from, cat["route-views.jinx"].active_until) == (
        "2012-07-10T00:00Z", "2019-08-15T02:15Z")
    assert cat["route-views.gorex"].active_from == "2019-08-30T20:01Z"  # 20:00:16 rounds up: never before it began
    assert cat["hkix.hkg"].active_from is None and cat["hkix.hkg"].evidence_from == "2025-10"


def test_lifetimes_at_their_precision():
    cat = catalogue.load()
    rrc02, sydney, siex, hk = cat["rrc02"], cat["route-views.sydney"], cat["route-views.siex"], cat["hkix.hkg"]
    # Month precision (RIPEstat): the whole deactivation month counts.
    assert rrc02.state_at(utc(2008, 10, 31, 16)) == "active" and rrc02.state_at(utc(2008, 11, 1)) == "inactive"
    assert rrc02.month_state("2009-06") == "inactive" and rrc02.month_state("2005-01") == "active"
    # Exact (RouteViews API): installed 2010-08-14T02:00Z, removed 2022-04-13T14:00Z.
    assert sydney.state_at(utc(2010, 8, 14, 0)) == "inactive" and sydney.state_at(utc(2010, 8, 14, 2)) == "active"
    assert sydney.month_state("2010-08") == "partial" and sydney.month_state("2010-07") == "inactive"
    assert siex.state_at(utc(2022, 4, 13, 14)) == "active" and siex.state_at(utc(2022, 4, 13, 16)) == "inactive"
    # No sourced start: unknown (probed) before the first evidence, active from it.
    assert hk.state_at(utc(2020, 1, 1)) == "unknown" and hk.state_at(utc(2025, 10, 1)) == "active"


def test_collector_sets():
    cat = catalogue.load()
    assert catalogue.expand(("all",)) == list(cat)
    assert set(catalogue.expand(("ris",))) == {n for n in cat if n.startswith("rrc")}
    assert set(catalogue.expand(("routeviews", "rrc00"))) == {n for n in cat if not n.startswith("rrc")} | {"rrc00"}
    assert catalogue.expand(("rrc01", "route-views2", "rrc01")) == ["route-views2", "rrc01"]
    with pytest.raises(KeyError, match="unknown collector 'rrc17'"):
        catalogue.expand(("rrc17",))
    active = catalogue.active(("all",), "2009-06")
    # In June 2009: the 15 RIS collectors activated by then and not retired (rrc02/08/09 were).
    assert sorted(n for n, s in active.items() if n.startswith("rrc") and s == "active") == [
        "rrc00", "rrc01", "rrc03", "rrc04", "rrc05", "rrc06", "rrc07", "rrc10", "rrc11", "rrc12", "rrc13",
        "rrc14", "rrc15", "rrc16"]


@needs_facts
def test_refresh_from_the_stored_sources_reproduces_the_shipped_catalogue():
    """The shipped catalogue is what a refresh on the stored outputs gives: refreshing it
    again changes nothing, and writing it gives the same file."""
    res = cs.refresh(None, ripestat=str(RIPESTAT), routeviews=str(ROUTEVIEWS), routeviews_date="2025-05-24")
    assert res.added == [] and res.changed == [], (res.added, res.changed)
    assert cs.to_toml(res.collectors, res.projects) == catalogue.CATALOGUE.read_text()


@needs_facts
def test_refresh_over_http_follows_pages_and_records_a_removal(tmp_path, capsys):
    """Both JSON shapes served on 127.0.0.1: the RouteViews list split over two pages (the
    `next` link), one collector removed since, one new; RIPEstat as stored."""
    rv = json.loads(ROUTEVIEWS.read_text())
    results = rv["results"]
    for r in results:
        if r["name"] == "route-views.perth":
            r["removed"] = "2026-03-01T10:00:00Z"
    results.append({**results[0], "name": "route-views.example", "installed": "2026-09-02T08:30:00Z",
                    "removed": None, "url": "https://api.routeviews.org/collector/99/"})
    root = tmp_path / "www"
    root.mkdir()
    shutil.copy(RIPESTAT, root / "rrc-info.json")
    with serve(root) as url:
        (root / "rv1.json").write_text(json.dumps({**rv, "next": f"{url}/rv2.json", "results": results[:30]}))
        (root / "rv2.json").write_text(json.dumps({**rv, "next": None, "previous": f"{url}/rv1.json",
                                                   "results": results[30:]}))
        out = tmp_path / "cat.toml"
        rc = cli(["catalogue", "refresh", "--ripestat", f"{url}/rrc-info.json", "--routeviews", f"{url}/rv1.json",
                  "--out", str(out), "--data-dir", str(tmp_path / "data"), "--json"])
        assert rc == 0
        assert url.hits("/rv2.json") == 1
    said = json.loads(capsys.readouterr().out)
    assert said["added"] == ["route-views.example"]
    assert "route-views.perth" in said["changed"]
    cat = catalogue.load(out)
    assert len(cat) == len(catalogue.load()) + 1
    assert cat["route-views.perth"].active_until == "2026-03-01T10:00Z"
    assert cat["route-views.example"].active_from == "2026-09-02T08:30Z" and cat["route-views.example"].afis == ()
    assert cat["route-views2"].legacy_paths == ("",)  # kept: no source carries it
    # The refreshed catalogue is what the commands use once the config names it.
    (tmp_path / "cfg.toml").write_text(f'catalogue = "{out}"\n')
    rc = cli(["catalogue", "list", "--month", "2026-04", "--collectors", "route-views.perth,route-views.example",
              "--config", str(tmp_path / "cfg.toml"), "--json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["collectors"] == []


def test_refresh_that_cannot_read_a_source_writes_nothing(tmp_path, capsys):
    root = tmp_path / "www"
    root.mkdir()
    (root / "rrc-info.json").write_text('{"data": {"rrcs": [{"name": "RRC00"}]}}')
    (root / "rv.json").write_text("<html>not json</html>")
    out = tmp_path / "cat.toml"
    with serve(root) as url:
        assert cli(["catalogue", "refresh", "--ripestat", f"{url}/rrc-info.json", "--routeviews", f"{url}/rv.json",
                    "--out", str(out)]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"error: catalogue refresh: {url}/rrc-info.json: not a RIPEstat rrc-info document "
                       "(missing 'activated_on'); nothing written"]
        assert cli(["catalogue", "refresh", "--ripestat", str(RIPESTAT), "--routeviews", f"{url}/rv.json",
                    "--out", str(out)]) == 1
        assert "rv.json: not JSON" in capsys.readouterr().err
        assert cli(["catalogue", "refresh", "--ripestat", str(RIPESTAT), "--routeviews", f"{url}/gone.json",
                    "--out", str(out)]) == 1
        assert "gone.json: HTTP 404" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob(".cat.toml*"))


def test_observed_families_fill_in_unknown_ones(tmp_path):
    """Where no source gives a collector's families, those of its ingested snapshots do."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bgp_congruency.common.tables import MANIFEST

    d = tmp_path / "data" / "manifest" / "month=2026-07"
    d.mkdir(parents=True)
    rows = [{"month": "2026-07", "slot": f"{c}@x", "collector": c, "project": "routeviews", "status": st,
             "target_time": utc(2026, 7, 1), "entries_v4": v4, "entries_v6": v6, "skipped": []}
            for c, st, v4, v6 in (("route-views.wide", "ok", 10, 3), ("route-views.isc", "ok", 7, 0),
                                  ("route-views.linx", "failed", None, None), ("route-views2", "ok", 5, 0))]
    pq.write_table(pa.Table.from_pylist(rows, schema=MANIFEST), d / "manifest.parquet")
    seen = cs.observed_afis(tmp_path / "data")
    assert seen == {"route-views.wide": ((4, 6), ["2026-07"]), "route-views.isc": ((4,), ["2026-07"]),
                    "route-views2": ((4,), ["2026-07"])}
    res = cs.merge(catalogue.load(), catalogue.projects(), [], seen)
    assert res.learned == ["route-views.isc", "route-views.wide"]  # route-views2's are sourced already
    assert res.collectors["route-views.wide"].afis_source == "observed in ingested RIBs (2026-07)"
    # That single file is an earlier version's manifest: a write of one collector's rows gives
    # that collector its own file, which shadows its rows of the single file; the single file
    # stays until every collector of it has its own (ingest/manifest.py), and the manifest view
    # reads the same rows as manifest.read meanwhile.
    import duckdb

    from bgp_congruency.ingest import manifest
    from bgp_congruency.lake.views import ingest_bodies

    data = tmp_path / "data"

    def viewed():
        return sorted(duckdb.connect().execute(f"SELECT slot, status, entries_v6 FROM ({ingest_bodies(data)['manifest']})")
                      .fetchall())

    def row(c, v6, status="ok"):
        return manifest.Row(month="2026-07", slot=f"{c}@x", collector=c, project="routeviews",
                            target_time=utc(2026, 7, 1), status=status, entries_v4=5, entries_v6=v6)

    manifest.merge_write(data, "2026-07", [row("route-views2", 2)])
    assert sorted(p.name for p in d.iterdir()) == ["collector=route-views2.parquet", "manifest.parquet"]
    got = manifest.read(data, "2026-07")
    assert {k: (r["status"], r["entries_v6"]) for k, r in got.items()} == {
        "route-views.wide@x": ("ok", 3), "route-views.isc@x": ("ok", 0), "route-views.linx@x": ("failed", None),
        "route-views2@x": ("ok", 2)}
    assert viewed() == sorted((k, r["status"], r["entries_v6"]) for k, r in got.items())
    assert cs.observed_afis(data)["route-views2"] == ((4, 6), ["2026-07"])
    # its last row dropped, a collector's file stays, empty: the single file's row does not come back
    manifest.merge_write(data, "2026-07", [], drop={"route-views.linx@x"})
    assert (d / "collector=route-views.linx.parquet").exists() and len(manifest.read(data, "2026-07")) == 3
    assert [s for s, *_ in viewed()] == ["route-views.isc@x", "route-views.wide@x", "route-views2@x"]
    # every collector of the single file with its own: the single file goes
    manifest.merge_write(data, "2026-07", [row("route-views.wide", 3), row("route-views.isc", 0)])
    assert "manifest.parquet" not in {p.name for p in d.iterdir()} and len(manifest.read(data, "2026-07")) == 3
    assert [s for s, *_ in viewed()] == ["route-views.isc@x", "route-views.wide@x", "route-views2@x"]


def test_policy_by_hand():
    def rows(*spec):
        return [{"slot": f"s{i}", "project": p, "status": st} for i, (p, st) in enumerate(spec)]

    r = rows(*[("routeviews", "ok")] * 3, ("routeviews", "missing"), ("ris", "ok"), ("ris", "failed"),
             ("ris", "inactive"))
    strict = assess(r)
    assert (strict.planned, strict.ok, strict.inactive, strict.missing, strict.failed) == (6, 4, 1, ["s3"], ["s5"])
    assert not strict.go_on and strict.reason == "4 of 6 planned snapshots ok (67%), below min_snapshot_share 1"
    assert assess(r, min_snapshot_share=0.6, min_project_share=0.5).go_on
    low = assess(r, min_snapshot_share=0.6, min_project_share=0.6)
    assert not low.go_on and low.reason.startswith("ris: 1 of 2 planned snapshots ok (50%)")
    assert assess(r, tolerate_failures=True).go_on
    assert not assess(rows(("ris", "inactive"))).go_on
    assert not assess(rows(("ris", "failed")), tolerate_failures=True).go_on
    assert strict.to_dict()["projects"] == {"routeviews": {"planned": 4, "ok": 3, "share": 0.75},
                                            "ris": {"planned": 2, "ok": 1, "share": 0.5}}


@pytest.mark.kernel
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_plan_counts_slots_and_checks_the_budget(tmp_path, capsys):
    """June 2009, all collectors, days 1-5 at 00:00: 8 RouteViews + 14 RIS collectors active
    (test_collector_sets), 8 more with no sourced start are probed; 22 x 5 slots. The data
    dirs sit on tmpfs mounts of known size (64 GiB, 1 GiB), so `plan`'s free-space check sees
    the same space on every machine (it failed once on a CI machine with 21 GB free)."""
    big, small = tmp_path / "big", tmp_path / "small"
    for mnt, size in ((big, "64g"), (small, "1g")):  # tmpfs takes no memory until written
        mnt.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], check=True)
    try:
        _plan_counts_slots_and_checks_the_budget(tmp_path, big / "data", small / "data", capsys)
    finally:
        for mnt in (big, small):
            subprocess.run(["umount", "-l", str(mnt)], check=False)


def _plan_counts_slots_and_checks_the_budget(tmp_path, data, small, capsys):
    (tmp_path / "noexport.toml").write_text("tunnels_export = false\n")
    assert cli(["plan", "--month", "2009-06", "--collectors", "all", "--data-dir", str(data), "--json",
                "--config", str(tmp_path / "noexport.toml")]) == 0
    p = json.loads(capsys.readouterr().out)
    [m] = p["months"]
    assert len(m["collectors"]) == 22 and m["snapshots"] == 110 and m["to_fetch"] == 110
    assert len(m["probes"]) == 8 and "rrc02" in m["inactive"]
    assert p["fits"] and p["assumed"] == sorted(m["collectors"])
    assert m["export_bytes"] == 0 and m["step_seconds"]["export"] == 0
    # 110 RIBs of the assumed 17M entries. Each collector's 5 daily snapshots hold its 17M routes
    # and 0.84% new ones a later day (5,922,710 routes of 28,654,760 entries in 5 days, measured:
    # runner/plan.py): 17,568,821 routes, 386,514,062 for the 22. At a 4GB limit partitions of at
    # most 4e9 / 200 = 20M routes (pipeline/partitions.py): 20 of at most 19,325,704 (386,514,062
    # / 20 rounded up), each using 200 bytes a route
    assert m["entries"] == 110 * 17_000_000
    new = (5_922_710 / (28_654_760 / 5) - 1) / 4
    assert m["routes"] == 22 * int(17_000_000 * (1 + 4 * new)) == 386_514_062
    # the time by step, from the rates runner/plan.py names (bench/endtoend.py's 4GB months):
    # the download at 100 Mbit/s (plan_download_mbit_s); no export with tunnels_export = false
    steps = m["step_seconds"]
    assert steps == {"download": round(m["download_bytes"] * 8 / 100e6, 1),
                     "ingest": round(110 * 17_000_000 / (248_138_550 / 114.0), 1),
                     "compare": round(386_514_062 / (51_396_863 / 124.3), 1), "export": 0.0, "reports": 4.5}
    assert m["seconds"] == round(sum(steps.values()), 1) and p["step_seconds"] == steps
    # what the month adds, per route of it (an empty data dir: the generated 4GB months' bytes,
    # bench/endtoend.py): its routes, 8.56 bytes (the 10^9-entry month's 440,119,249 for
    # 51,396,863), the compare's tables, 9.29 (the 250M month's 476,432,134 for 51,290,917), and
    # its 110 MRT files (cache_policy keep); on top, the most it stages at once: the compare's
    # 38.9 bytes a route (1,903 MiB for the 250M month), more than ingest's decoded dumps (4.90
    # bytes an entry, the real sample's Parquet)
    routes_b, pub_b = int(386_514_062 * (440_119_249 / 51_396_863)), int(386_514_062 * (476_432_134 / 51_290_917))
    assert (m["routes_bytes"], m["published_bytes"]) == (routes_b, pub_b)
    assert m["disk_bytes"] == p["disk_bytes"] == routes_b + pub_b + m["download_bytes"]
    staged = int(386_514_062 * (1_903 * 2**20 / 51_290_917))
    assert staged > 110 * 17_000_000 * 4.91 and m["staging_bytes"] == p["staging_bytes"] == staged
    need = human(m["disk_bytes"] + staged)
    # the default exports the hints as JSON Lines (tunnels_export): up to 206.8 bytes and 1/1.44M s
    # a route (10,605,706,234 bytes, 35.7 s for 51,290,917 routes), an upper bound, so shown and
    # warned about past the free space, not refused on
    assert cli(["plan", "--month", "2009-06", "--collectors", "all", "--data-dir", str(data), "--json"]) == 0
    out, err = capsys.readouterr()
    [m2] = json.loads(out)["months"]
    assert m2["export_bytes"] == int(386_514_062 * 10_605_706_234 / 51_290_917) and m2["disk_bytes"] == m["disk_bytes"]
    assert m2["step_seconds"]["export"] == round(386_514_062 / (51_290_917 / 35.7), 1)
    assert err.strip().splitlines() == ["warning: plan: the hints export may need up to 79.9 GB more, past the free "
                                        "space (68.7 GB); tunnels_export = false leaves it out (see congruency plan)"]
    assert cli(["plan", "--month", "2009-06", "--collectors", "all", "--data-dir", str(data)]) == 0
    out, _ = capsys.readouterr()
    assert f"export {round(51_290_917 / 35.7):,} routes/s" in out and "time by step: download " in out
    assert "hints export (tunnels_export): up to 79.9 GB more" in out
    (tmp_path / "budget.toml").write_text('disk_budget = "100GB"\n')  # 36.6 GB fits, 36.6 + 79.9 does not
    assert need == "36.6 GB"
    assert cli(["plan", "--month", "2009-06", "--collectors", "all", "--data-dir", str(data), "--json",
                "--config", str(tmp_path / "budget.toml")]) == 0
    assert capsys.readouterr().err.strip().splitlines() == [
        "warning: plan: the hints export may need up to 79.9 GB more, past the disk_budget (100.0 GB); "
        "tunnels_export = false leaves it out (see congruency plan)"]
    (tmp_path / "mem.toml").write_text('duckdb_memory_limit = "4GB"\n')
    assert cli(["plan", "--month", "2009-06", "--collectors", "all", "--data-dir", str(data), "--json",
                "--config", str(tmp_path / "mem.toml")]) == 0
    [m] = json.loads(capsys.readouterr().out)["months"]
    assert (m["partitions"], m["compare_peak_bytes"]) == (20, 19_325_704 * 200)
    (tmp_path / "mem.toml").write_text('duckdb_memory_limit = "400MB"\n')
    assert cli(["plan", "--month", "2009-06", "--collectors", "all", "--data-dir", str(data), "--json",
                "--config", str(tmp_path / "mem.toml")]) == 0
    [m] = json.loads(capsys.readouterr().out)["months"]
    # partitions of at most 2M routes: 194 of at most 1,992,341 (386,514,062 / 194 rounded up)
    assert (m["partitions"], m["compare_peak_bytes"]) == (194, 1_992_341 * 200)
    (tmp_path / "cfg.toml").write_text('disk_budget = "1GB"\n')
    assert cli(["plan", "--months", "2009-06..2009-07", "--collectors", "ris", "--data-dir", str(data),
                "--config", str(tmp_path / "cfg.toml")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: plan: disk_budget 1GB: ") and "needs about" in err[0]
    # no budget, but 1 GiB free: refused by the free space, in one line naming the data dir
    assert cli(["plan", "--month", "2009-06", "--collectors", "all", "--data-dir", str(small)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: plan: {small}: the run needs about ") \
        and f"needs about {need} but only 1.1 GB is free" in err[0], err  # 1 GiB = 1.07e9 bytes
    assert f"({human(m['disk_bytes'])} it adds and {human(staged)} staged at once; cache_policy 'keep'" in err[0]


# --- 8. one word for each collector state ------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("month", ["2009-06", "2014-06", "2026-07"])
def test_catalogue_list_and_plan_count_alike(tmp_path, month):
    """`catalogue list` counted collectors no source dates (first seen 2025-2026) as active
    in 2009-06 (30) where `plan` said 22 active + 8 probed."""
    lst = congruency("catalogue", "list", "--month", month, "--json")
    rows = json.loads(lst.stdout)["collectors"]
    import calendar

    last = calendar.monthrange(*map(int, month.split("-")))[1]  # the whole month, as `list` sees it
    plan = congruency("plan", "--month", month, "--collectors", "all", "--days", f"1-{last}", "--data-dir",
                      str(tmp_path / "d"), "--json")
    [m] = json.loads(plan.stdout)["months"]
    probes = sorted(r["name"] for r in rows if r["state"] == "probe")
    active = sorted(r["name"] for r in rows if r["state"] in ("active", "partial"))
    assert (active, probes) == (sorted(m["collectors"]), sorted(m["probes"]))
    assert {r["state"] for r in rows} <= {"active", "partial", "probe"}
    text = congruency("catalogue", "list", "--month", month).stdout.strip().splitlines()[-1]
    assert text.startswith(f"{len(active)} collector(s) active in {month}")
    assert (f", {len(probes)} to probe" in text) == bool(probes)
