"""The DuckDB engine (no JVM) against the pure-Python reference (the synthetic ground truth
on both engines is in test_synth_end_to_end.py); its local Store; its bad-input, out-of-memory and CLI behaviour. Spark == DuckDB on
the same data is checked in test_compare.py, next to the Spark runs it reuses."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bgp_congruency.common import duck as caps
from bgp_congruency.common.config import ConfigError, load
from bgp_congruency.common.tables import TABLES
from bgp_congruency.congruency import reference
from bgp_congruency.lake.published import files as published_files
from bgp_congruency.pipeline import job
from bgp_congruency.pipeline.publish import LocalStore
from tests.support import cases
from tests.support.data import PEERS_IN_BOTH_2026, ROOT
from tests.support.month import (
    HAND_CASES,
    VARIANT_CASES,
    as_written_before,
    assert_same_as_reference,
    canon,
    entry_rows,
    link_ingested,
    published,
    published_tables,
    reference_of,
    write_entries,
)

MONTHS = ("2026-07", "2026-08")


def duck(cfg, **kw):
    return cfg.with_overrides(engine="duckdb", **kw)


def run(cfg, month: str) -> job.MonthResult:
    [res] = job.compare_months(cfg, [month])
    return res


#: VP partitions the reference tests run the DuckDB compare in: the rule's choice (one, for
#: these months), two, and seven (some of them empty). The forced partitions are `slow`
#: (over a second each): the fast loop keeps the rule's choice.
PARTITIONS = (None, pytest.param(2, marks=pytest.mark.slow), pytest.param(7, marks=pytest.mark.slow))


@pytest.mark.slow
def test_the_rule_s_uneven_ranges_give_the_reference_tables(config, ingested_2026, tmp_path, monkeypatch):
    """The rule's own partitions (pipeline/partitions.cut: contiguous hash ranges cut where
    the VPs' counts fill one), made about five of the real sample by a smaller capacity per
    entry: uneven, each full, and the tables the reference's."""
    import pyarrow.dataset as ds

    from bgp_congruency.common import vp_hash
    from bgp_congruency.pipeline import partitions as P

    data = tmp_path / "data"
    link_ingested(ingested_2026, data, "2026-07")
    cfg = duck(config, data_dir=data, duckdb_memory_limit="1GB")
    total = ds.dataset(list((data / "routes" / "month=2026-07").rglob("part-*.parquet"))).count_rows()  # routes
    monkeypatch.setattr(P, "FAST_BYTES_PER_ENTRY", P.limit_bytes(cfg) // (total // 5))
    chosen, partitions = [], job.partitions
    monkeypatch.setattr(job, "partitions", lambda *a: chosen.append(partitions(*a)) or chosen[-1])
    res = run(cfg, "2026-07")
    assert res.error is None, res.error
    [cuts] = chosen
    k = len(cuts) - 1
    assert 5 <= k <= 8 and cuts != vp_hash.even(k)
    assert_same_as_reference(data, "2026-07", config.method)


@pytest.mark.slow
@pytest.mark.parametrize("k", PARTITIONS)
def test_real_pair_matches_reference(config, ingested_2026, tmp_path, k):
    data = tmp_path / "data"
    link_ingested(ingested_2026, data, "2026-07")
    res = run(duck(config, data_dir=data, compare_partitions=k), "2026-07")
    assert res.error is None, res.error
    ref = assert_same_as_reference(data, "2026-07", config.method)
    assert res.summary == {k: v for k, v in ref["month_summary"][0].items() if k != "month"}
    assert {r["vp_asn"] for r in published(data, "vps", "2026-07") if r["pairs"]} == PEERS_IN_BOTH_2026


@pytest.mark.parametrize("k", PARTITIONS)
@pytest.mark.slow
def test_hand_made_cases_match_reference(config, tmp_path, k):
    for month, (make, cov) in HAND_CASES.items():
        write_entries(tmp_path, month, make())
    for month, (make, cov) in HAND_CASES.items():
        cfg = replace(duck(config, data_dir=tmp_path, compare_partitions=k),
                      method=replace(config.method, min_coverage=cov))
        res = run(cfg, month)
        assert res.error is None, res.error
        assert_same_as_reference(tmp_path, month, cfg.method)


@pytest.mark.parametrize("k", PARTITIONS)
@pytest.mark.slow
def test_variant_cases_match_reference(config, tmp_path, k):
    for month, (make, change) in VARIANT_CASES.items():
        write_entries(tmp_path, month, make())
        cfg = replace(duck(config, data_dir=tmp_path, compare_partitions=k), method=replace(config.method, **change))
        res = run(cfg, month)
        assert res.error is None, res.error
        assert_same_as_reference(tmp_path, month, cfg.method)


@pytest.mark.slow
def test_rerun_replaces_the_month_exactly_and_leaves_others(config, tmp_path):
    write_entries(tmp_path, "2024-01", cases.full_month_rows())
    write_entries(tmp_path, "2024-03", cases.quartile_rows())
    cfg = duck(config, data_dir=tmp_path)
    assert run(cfg, "2024-03").error is None
    files = lambda: {p: p.read_bytes() for p in tmp_path.glob("*/month=2024-03/**/*") if p.is_file()}  # noqa: E731
    other = files()
    first, again = job.compare_months(cfg, ["2024-01", "2024-01"])
    assert first.error is None and again.error is None and first.summary == again.summary
    assert len(published(tmp_path, "pairs", "2024-01")) == first.summary["pairs"]
    assert files() == other
    assert not list((tmp_path / "_staging").glob("*"))


def _partition_of(asns, k: int) -> set[int]:
    """The partitions these peer ASNs fall in (common/vp_hash.py's Python form)."""
    from bgp_congruency.common import vp_hash

    return {vp_hash.partition(a, k) for a in asns}


@pytest.mark.slow
def test_the_vp_hash_agrees_in_sql_numpy_and_bucket_ranges():
    """The partition of an ASN in DuckDB SQL equals the Python form, and its bucket (numpy,
    as ingest stores it) lies in the partition's bucket range: a partition that skips row
    groups by bucket loses no row (ASNs at both ends of the space included)."""
    import duckdb
    import numpy as np

    from bgp_congruency.common import vp_hash

    asns = [0, 1, 2, 3356, 6939, 65535, 4_200_000_000, 2**32 - 1] + list(range(1000, 1500))
    bucket = vp_hash.buckets(np.array(asns, dtype=np.uint32)).tolist()
    con = duckdb.connect()
    for k in (1, 2, 5, 7, 32, 43, 170):
        got = con.execute(f"SELECT {vp_hash.sql_partition('a', k)}, {vp_hash.sql_bucket('a')} "
                          "FROM unnest(?::BIGINT[]) WITH ORDINALITY t(a, i) ORDER BY i", [asns]).fetchall()
        assert [p for p, _ in got] == [vp_hash.partition(a, k) for a in asns]
        assert [b for _, b in got] == bucket
        for (p, _), b in zip(got, bucket):
            lo, hi = vp_hash.bucket_span(vp_hash.even(k), p)
            assert lo <= b <= hi
    assert sorted(set(vp_hash.partition(a, 2) for a in asns)) == [0, 1]
    # the rule's uneven ranges (pipeline/partitions.cut): each ASN in exactly one range, the
    # one its hash falls in, and its bucket within that range's buckets
    from bgp_congruency.pipeline import partitions as P

    cuts = P.cut([(a, 1 + a % 7) for a in asns], 200 * 40)  # ranges of at most 40 entries
    assert 40 < len(cuts) - 1 < 100 and list(cuts) == sorted(set(cuts))
    for i in range(len(cuts) - 1):
        got = {a for (a,) in con.execute(f"SELECT a FROM unnest(?::BIGINT[]) t(a) WHERE {vp_hash.sql_range('a', cuts, i)}",
                                         [asns]).fetchall()}
        assert got == {a for a in asns if cuts[i] <= vp_hash.hash_of(a) < cuts[i + 1]}
        lo, hi = vp_hash.bucket_span(cuts, i)
        assert all(lo <= b <= hi for a, b in zip(asns, bucket) if a in got)


def test_the_routes_are_in_vp_bucket_order(tmp_path):
    """The merge keeps every route and its bucket; the routes are written in bucket order in
    row groups, so min/max statistics on vp_bucket prune a compare partition's reads; the
    decoded entries expand back from them."""
    import numpy as np

    from bgp_congruency.common import routes, vp_hash
    from tests.support.month import write_entries

    rows = [dict(collector="rrc00", snapshot_time=datetime(2024, 1, 1, tzinfo=timezone.utc), peer_asn=asn,
                 peer_ip="192.0.2.1", afi=4, prefix=f"10.{i // 256}.{i % 256}.0/24", as_path=[asn, 7000 + i % 5],
                 has_as_set=False) for i in range(250_000) for asn in (1000 + i % 97,)]
    write_entries(tmp_path, "2024-01", rows)
    [f] = routes.month_files(tmp_path, "2024-01")["rrc00"]
    t = pq.read_table(f)
    assert t.num_rows == len(rows)
    assert sorted(zip(t["peer_asn"].to_pylist(), t["prefix"].to_pylist())) == \
        sorted((r["peer_asn"], r["prefix"]) for r in rows)
    want = vp_hash.buckets(np.array(t["peer_asn"].to_pylist(), dtype=np.uint32)).tolist()
    assert t[vp_hash.COLUMN].to_pylist() == want == sorted(want)
    md = pq.ParquetFile(f).metadata
    spans = [(md.row_group(g).column(md.schema.names.index(vp_hash.COLUMN)).statistics.min,
              md.row_group(g).column(md.schema.names.index(vp_hash.COLUMN)).statistics.max)
             for g in range(md.num_row_groups)]
    assert len(spans) > 1 and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


@pytest.mark.slow
def test_a_month_ingested_before_the_routes_layout_is_merged_and_compares_the_same(config, tmp_path):
    """A month an earlier version ingested as one file per dump (rib_entries/month=M/
    collector=C/, one of them from before the VP-bucket layout, without vp_bucket) is merged
    into routes by the next ingest (no download), its old files removed; the compare then
    gives the reference's tables, in partitions too."""
    from bgp_congruency.common import vp_hash
    from bgp_congruency.ingest import run as ingest_run
    from bgp_congruency.ingest.writer import entries
    from tests.support.month import ENTRIES

    write_entries(tmp_path / "want", "2024-01", cases.full_month_rows())
    for f in (tmp_path / "want" / ENTRIES / "month=2024-01").rglob("*.parquet"):
        old = tmp_path / "rib_entries" / "month=2024-01" / f.parent.name / f.name
        old.parent.mkdir(parents=True)
        # an earlier file (AS paths as lists) of rrc00 without the VP bucket, the others' with it
        t = pa.Table.from_batches([entries(b) for b in pq.read_table(f).to_batches()])
        bucket = vp_hash.buckets(t["peer_asn"].to_numpy().astype("uint32"))
        pq.write_table(t if "rrc00" in f.parent.name else t.append_column(vp_hash.COLUMN, pa.array(bucket)), old)
    cfg = duck(config, data_dir=tmp_path, compare_partitions=2)
    ingest_run.merge_pending(cfg, "2024-01")
    assert not (tmp_path / "rib_entries").exists()
    assert run(cfg, "2024-01").error is None
    for table in ("paths", "vps", "pairs", "month_summary", "cleaning_stats"):
        want = reference_of(tmp_path / "want", "2024-01", config.method)[table]
        assert canon(published(tmp_path, table, "2024-01")) == canon(want), table


@pytest.mark.slow
def test_all_vps_in_one_partition_and_empty_partitions(config, tmp_path):
    """A month whose VPs all hash to one of two partitions (the other empty), and the next
    month in seven partitions (four or more empty), give the reference's tables; the
    transitions between them are the hand-worked six."""
    vps = [a for a in range(1000, 3000) if _partition_of([a], 2) == {0}][:3]
    dests = (7001, 7002, 7003)

    def rows(v6_odd):  # IPv6 to an odd destination through v6_odd
        return [r for v in vps for d in dests for r in (
            cases.R("rrc00", v, 4, [v, 3356, d]), cases.R("rrc00", v, 6, [v, v6_odd if d % 2 else 3356, d]))]

    write_entries(tmp_path, "2024-01", rows(6939))
    write_entries(tmp_path, "2024-02", rows(3356))
    for month, k in (("2024-01", 2), ("2024-02", 7)):
        assert run(duck(config, data_dir=tmp_path, compare_partitions=k), month).error is None
        folder = Path(published_files(tmp_path, ["pairs"], month)["pairs"][0]).parent  # this publish's
        assert len(list(folder.glob("part-*.parquet"))) == k
        assert_same_as_reference(tmp_path, month, config.method)
        if month == "2024-01":
            assert [len(pq.read_table(f)) for f in sorted(folder.glob("*.parquet"))] == [9, 0]
    got = sorted((r["vp_asn"], r["dest_asn"], r["kind"]) for r in published(tmp_path, "transitions", "2024-02"))
    assert got == sorted((v, d, "existing_pair") for v in vps for d in (7001, 7003))


MARK = 978_307_200  # 2001-01-01: the modification time of the killed run's file


def _kill_mid_partition(tmp_path: Path, data: Path) -> Path:
    """`congruency compare` of 2024-01 in three partitions, SIGKILLed in its second VP
    partition (the first one's tables staged, the second's first); its staging folder."""
    import signal
    import time

    flag = tmp_path / "paused"
    flag.unlink(missing_ok=True)
    (tmp_path / "k3.toml").write_text("compare_partitions = 3\n[method]\nmin_coverage = 0.0\n")  # the `config` fixture's
    code = ("import sys; from bgp_congruency.cli.main import main; sys.exit(main(['compare', '--data-dir', "
            f"{str(data)!r}, '--month', '2024-01', '--config', {str(tmp_path / 'k3.toml')!r}]))")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "CONGRUENCY_PAUSE_AT": "mid-partition", "CONGRUENCY_PAUSE_FILE": str(flag)})
    for _ in range(600):
        if flag.exists() or proc.poll() is not None:
            break
        time.sleep(0.1)
    assert flag.exists(), "the compare never reached its second partition"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    [staged] = (data / "_staging").glob("2024-01-*")
    assert (staged / "pairs" / "part-0.parquet").exists() and not (staged / "pairs" / "part-1.parquet").exists()
    assert (staged / "paths" / "part-1.parquet").exists()
    os.utime(staged / "pairs" / "part-0.parquet", (MARK, MARK))  # kept by a rename, lost by a rewrite
    return staged


@pytest.mark.slow
def test_a_run_killed_mid_partition_is_resumed_by_the_next(config, tmp_path, capfd, monkeypatch):
    """SIGKILL in the second of three VP partitions: nothing is published; a run refused
    before it starts (a VP larger than a partition) keeps that staging folder; the next run
    reuses it (every partition's cleaning, the first partition's tables: the very files it
    staged), redoes the rest, says so in one line, and publishes the tables of a run never
    interrupted."""
    from bgp_congruency.pipeline import partitions as P

    data = tmp_path / "data"
    write_entries(data, "2024-01", cases.full_month_rows())
    whole = tmp_path / "whole"
    write_entries(whole, "2024-01", cases.full_month_rows())
    assert run(duck(config, data_dir=whole, compare_partitions=3), "2024-01").error is None
    staged = _kill_mid_partition(tmp_path, data)
    assert not (data / "pairs").exists()
    monkeypatch.setattr(P, "BYTES_PER_ENTRY", 10**9)  # as in the refusal test below
    res = run(duck(config, data_dir=data, duckdb_memory_limit="16MB"), "2024-01")
    assert "one vantage point has" in res.error and res.error.endswith("raise duckdb_memory_limit")
    assert (staged / "_work" / "partitions.duckdb").exists() and (staged / "pairs" / "part-0.parquet").exists()
    assert not (staged / "_spill").exists()  # the refused run's own spill folder is gone
    monkeypatch.undo()
    capfd.readouterr()
    res = run(duck(config, data_dir=data, compare_partitions=3), "2024-01")
    assert res.error is None, res.error
    notes = [ln for ln in capfd.readouterr().err.splitlines() if "resuming" in ln]
    assert notes == [f"note: {staged}: resuming what a stopped run of the month finished with the same inputs: 3 of 3 "
                     "partitions' cleaning and 1 of 3 partitions' tables are reused"]
    [published_dir] = (data / "pairs" / "month=2024-01").iterdir()
    assert published_dir.name == staged.name and (published_dir / "part-0.parquet").stat().st_mtime == MARK
    for table in TABLES:
        if table not in ("sensitivity", "selector_eval"):
            assert canon(published(data, table, "2024-01")) == canon(published(whole, table, "2024-01")), table
    assert [p.name for p in (data / "_staging").iterdir() if not p.name.endswith(".lock")] == []


@pytest.mark.slow
def test_a_killed_run_of_other_inputs_is_not_resumed(config, tmp_path, capfd):
    """The month re-ingested after the kill (an entry file changed), or compared in one
    partition instead of three: the killed run's work is dropped, the month computed whole,
    no file of the killed run published."""
    data = tmp_path / "data"
    write_entries(data, "2024-01", cases.full_month_rows())
    whole = tmp_path / "whole"
    write_entries(whole, "2024-01", cases.full_month_rows())
    assert run(duck(config, data_dir=whole, compare_partitions=3), "2024-01").error is None
    for change in ("entries", "partitions"):
        staged = _kill_mid_partition(tmp_path, data)
        if change == "entries":
            entry = next((data / "routes").rglob("part-*.parquet"))
            os.utime(entry, ns=(entry.stat().st_atime_ns, entry.stat().st_mtime_ns + 10**9))
        capfd.readouterr()
        # K = 1 writes only part-0: the killed run's paths/part-1 would be published beside it
        res = run(duck(config, data_dir=data, compare_partitions=3 if change == "entries" else 1), "2024-01")
        assert res.error is None, res.error
        assert "resuming" not in capfd.readouterr().err
        published_dir = data / "pairs" / "month=2024-01" / staged.name  # the folder is reused, emptied
        assert MARK not in [p.stat().st_mtime for p in published_dir.iterdir()]
        if change == "partitions":
            assert [p.name for p in (data / "paths" / "month=2024-01" / staged.name).iterdir()] == ["part-0.parquet"]
        for table in ("paths", "vps", "pairs", "month_summary"):
            assert canon(published(data, table, "2024-01")) == canon(published(whole, table, "2024-01")), table
        assert [p.name for p in (data / "_staging").iterdir() if not p.name.endswith(".lock")] == []


def test_a_vp_larger_than_a_partition_is_refused_in_one_line(config, tmp_path, monkeypatch):
    """A memory limit too small for the month's largest VP: one line naming the setting,
    before anything is staged. (The hand month is tiny: the bytes per entry are raised so
    that its largest VP exceeds 16MB.)"""
    from bgp_congruency.pipeline import partitions as P

    write_entries(tmp_path, "2024-01", cases.full_month_rows())
    rows = cases.full_month_rows()  # each of a VP's routes once (its snapshots are one row)
    largest = max(len({(r["collector"], r["peer_ip"], r["afi"], r["prefix"], tuple(r["as_path"] or ()),
                        r["has_as_set"]) for r in rows if r["peer_asn"] == a}) for a in {r["peer_asn"] for r in rows})
    monkeypatch.setattr(P, "BYTES_PER_ENTRY", 16 * 10**6 // largest + 1)
    res = run(duck(config, data_dir=tmp_path, duckdb_memory_limit="16MB"), "2024-01")
    need = largest * P.BYTES_PER_ENTRY
    assert res.error == (f"{tmp_path}/routes/month=2024-01: one vantage point has {largest:,} routes, more "
                         f"than one partition can hold at duckdb_memory_limit = 15 MiB (about "
                         f"{P.BYTES_PER_ENTRY:,} bytes per route: {need / 2**20:,.0f} MiB); raise duckdb_memory_limit")
    assert not (tmp_path / "pairs").exists()
    assert [p.name for p in (tmp_path / "_staging").iterdir() if not p.name.endswith(".lock")] == []
    assert run(duck(config, data_dir=tmp_path, duckdb_memory_limit="64MB", compare_partitions=1), "2024-01").error is None


def test_partition_rule():
    """The job's partitions (`cut`): VPs in hash order, a range cut before the VP that would
    take it past limit / FAST_BYTES_PER_ENTRY entries (2M at 400 MB), a larger VP alone;
    past MAX_PARTITIONS ranges the fit floor; a VP that does not fit the limit at
    BYTES_PER_ENTRY (20M at 400 MB) is refused. The plan's estimate (`choose`): the even split."""
    from bgp_congruency.common import vp_hash
    from bgp_congruency.pipeline import partitions as P

    cap = P.capacity(400 * 10**6)
    assert cap == 2_000_000
    even = lambda total: lambda k: [total // k + (i < total % k) for i in range(k)]  # noqa: E731
    assert P.choose(even(cap), cap, 400 * 10**6) == 1
    assert P.choose(even(cap + 1), cap + 1, 400 * 10**6) == 2
    assert P.choose(even(10 * cap), 10 * cap, 400 * 10**6) == 10
    assert P.choose(even(10**12), 10**12, None) == 1 and P.choose(even(5), 5, 10, fixed=3) == 3
    n = P.MAX_PARTITIONS * 15  # at 400 bytes: 2 preferred entries a partition, 20 at the floor
    assert P.choose(even(n), n, 400) == P.MAX_PARTITIONS
    assert P.capacity(10**12) == P.MAX_PARTITION_ENTRIES
    assert P.unfit(20_000_000, 400 * 10**6) is None and P.unfit(20_000_001, 400 * 10**6)
    assert P.peak_bytes(cap, 400 * 10**6) == 400 * 10**6 and P.peak_bytes(cap // 2, 400 * 10**6) == 200 * 10**6

    # worked by hand at 2,000 bytes (10 entries a range, 100 at the floor): six VPs of 4, 5,
    # 3, 12, 1 and 9 entries in hash order make [4 5] [3] [12] [1 9], cut at the 3rd, 4th
    # and 5th VP's hash
    asns = sorted(range(1, 7), key=vp_hash.hash_of)
    vps = list(zip(asns, (4, 5, 3, 12, 1, 9)))
    cuts = P.cut(vps, 2000)
    assert cuts == (0, *(vp_hash.hash_of(a) for a in asns[2:5]), vp_hash.SPACE)
    assert P.sizes(vps, cuts) == [9, 3, 12, 10]
    assert P.cut(vps, 2000, fixed=3) == vp_hash.even(3) and P.cut(vps, None) == vp_hash.even(1)
    # 999 VPs of 1M entries and one of 15M at 2GB (10M a range): the big VP alone, the others
    # in full ranges (the rule before: the heaviest of K even ranges had to fit, 101-300 of them)
    vps = [(a, 10**6) for a in range(1, 1000)] + [(1000, 15 * 10**6)]
    cuts = P.cut(vps, 2 * 10**9)
    got = P.sizes(vps, cuts)
    assert sum(got) == 1014 * 10**6 and got.count(15 * 10**6) == 1
    assert all(n <= 10**7 for n in got if n != 15 * 10**6) and len(got) <= 103
    # more ranges than MAX_PARTITIONS at the preference, but not at the fit floor: the floor
    vps = [(a, 6) for a in range(1, 2 * P.MAX_PARTITIONS + 1)]
    got = P.sizes(vps, P.cut(vps, 2000))
    assert len(got) == 2 * P.MAX_PARTITIONS * 6 // 96 and max(got) == 96
    with pytest.raises(P.Unfit, match="raise duckdb_memory_limit"):  # one VP a range at the floor too
        P.cut([(a, 60) for a in range(1, 2 * P.MAX_PARTITIONS + 1)], 2000)


@pytest.mark.slow
def test_local_store_publishes_a_month_in_one_commit_and_keeps_others(tmp_path):
    """A publish moves the staged tables to folders of their own and commits them at once:
    the month's files are the new ones, the other month's are untouched, nothing is staged."""
    from bgp_congruency.lake import published
    from tests.support.month import publish_rows

    pair = {"vp_group": "g", "vp_asn": 1, "dest_asn": 2, "v4_path": [1, 2], "v6_path": [1, 2], "congruent": True,
            "shared_asns": [], "shared_adjacent": None, "hops_v4": 1, "hops_v6": 1}
    for month, vp in (("2024-01", 1), ("2024-02", 9)):
        publish_rows(tmp_path, month, {"pairs": [dict(pair, vp_asn=vp, month=month)]})
    other = published.files(tmp_path, ["pairs"], "2024-02")["pairs"]
    store = LocalStore(tmp_path)
    staged = store.staging("2024-01")
    for t, rows in (("pairs", [dict(pair, vp_asn=5, month="2024-01")]), ("vps", [])):
        (Path(staged) / t).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=TABLES[t]).drop_columns(["month"]), Path(staged) / t / "part-0.parquet")
    sid = Path(staged).name
    assert store.publish(staged, ["pairs", "vps"], "2024-01") == [
        f"{tmp_path}/pairs/month=2024-01/{sid}", f"{tmp_path}/vps/month=2024-01/{sid}"]
    assert published.files(tmp_path, ["pairs"], "2024-01")["pairs"] == [f"{tmp_path}/pairs/month=2024-01/{sid}/part-0.parquet"]
    assert [r["vp_asn"] for r in published.read(tmp_path, "pairs", "2024-01").to_pylist()] == [5]
    assert published.months(tmp_path, "vps") == ["2024-01"]  # published, with no rows
    assert published.read(tmp_path, "vps", "2024-01").num_rows == 0
    assert published.files(tmp_path, ["pairs"], "2024-02")["pairs"] == other
    assert not list((tmp_path / "_staging").iterdir())
    assert store.has_files(f"{tmp_path}/pairs") and not store.has_files(f"{tmp_path}/nothing")


@pytest.mark.slow
def test_bad_input_is_one_line_and_touches_nothing(config, tmp_path):
    """The messages are the Spark engine's (test_compare checks both engines give equal ones)."""
    write_entries(tmp_path, "2024-01", cases.full_month_rows())
    cfg = duck(config, data_dir=tmp_path)
    assert run(cfg, "2024-01").error is None
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    src = f"{tmp_path}/routes/month="
    assert run(cfg, "2023-12").error == \
        f"{src}2023-12: no ingested data for month 2023-12 (run congruency ingest first)"
    write_entries(tmp_path, "2024-04", [x for x in cases.full_month_rows() if x["afi"] == 4])
    assert run(cfg, "2024-04").error == \
        f"{src}2024-04: month 2024-04 has no IPv6 entries; both address families are needed"
    good = next((tmp_path / "routes" / "month=2024-01").glob("collector=*/gen-*"))
    bad = tmp_path / "routes" / "month=2024-05" / "collector=x" / good.name / "part-0.parquet"
    bad.parent.mkdir(parents=True)
    shutil.copy(good / "snapshots.json", bad.parent)
    pq.write_table(pa.table({"collector_name": ["x"], "afi": pa.array([4], pa.int8())}), bad)
    assert run(cfg, "2024-05").error == \
        f"{src}2024-05: column 'peer_asn' is missing (not a month's routes?)"
    wrong = tmp_path / "routes" / "month=2024-06" / "collector=x" / good.name / "part-0.parquet"
    wrong.parent.mkdir(parents=True)
    shutil.copy(good / "snapshots.json", wrong.parent)
    rows = pq.read_table(next(good.glob("part-*.parquet")))
    pq.write_table(rows.set_column(rows.schema.get_field_index("afi"), "afi", rows["afi"].cast(pa.string())), wrong)
    assert run(cfg, "2024-06").error == f"{src}2024-06: column 'afi' is string, expected tinyint"
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file() and p in before} == before
    for m in ("2024-04", "2024-05", "2024-06"):
        assert not (tmp_path / "pairs" / f"month={m}").exists()
    assert not list((tmp_path / "_staging").glob("*"))


@pytest.mark.slow
def test_out_of_memory_is_one_line_and_publishes_nothing(config, ingested_2026, tmp_path):
    data = tmp_path / "data"
    link_ingested(ingested_2026, data, "2026-07")
    spill = tmp_path / "spill"
    cfg = duck(config, data_dir=data, duckdb_memory_limit="24MB", duckdb_temp_dir=str(spill), duckdb_threads=1,
               compare_partitions=1)
    res = run(cfg, "2026-07")
    assert res.error is not None and "\n" not in res.error
    assert res.error.startswith(f"{data}/routes/month=2026-07: DuckDB ran out of memory or disk (memory_limit 24MB")
    assert sorted(p.name for p in data.iterdir()) == ["_staging", "routes"]
    assert not list((data / "_staging").iterdir())
    assert spill.is_dir() and not list(spill.iterdir())  # the run's own folder under duckdb_temp_dir is gone


@pytest.mark.slow
def test_a_month_at_its_memory_floor_keeps_its_work_on_disk_and_matches_reference(config, ingested_2026, tmp_path,
                                                                                   monkeypatch):
    """At the memory the month needs in one partition (DuckDB 1.5.5, one thread, from its routes:
    out of memory at 38MB, done at 40MB; 43 and 46MB before 2026-11-28, from every entry) the
    tables are still the reference's; the partitions' aggregates are in the staging
    folder's work database (seen in pragma_database_size after a step), which DuckDB writes
    to disk as it fills (at 46MB nothing else spills: no temp file)."""
    from bgp_congruency.pipeline.engines import duckdb as duckdb_engine

    data = tmp_path / "data"
    link_ingested(ingested_2026, data, "2026-07")
    on_disk, run_step = [], duckdb_engine.DuckDBEngine._run_step

    def step_and_look(self, *a, **kw):
        run_step(self, *a, **kw)
        on_disk.append(self.con.execute(
            "SELECT (SELECT coalesce(sum(size), 0) FROM duckdb_temporary_files()) + (SELECT used_blocks * block_size "
            f"FROM pragma_database_size() WHERE database_name = '{duckdb_engine.WORK}')").fetchone()[0])

    monkeypatch.setattr(duckdb_engine.DuckDBEngine, "_run_step", step_and_look)
    res = run(duck(config, data_dir=data, duckdb_memory_limit="36MB", duckdb_threads=1, compare_partitions=1),
              "2026-07")
    assert res.error.startswith(f"{data}/routes/month=2026-07: DuckDB ran out of memory or disk (memory_limit 36MB")
    on_disk.clear()
    res = run(duck(config, data_dir=data, duckdb_memory_limit="43MB", duckdb_threads=1, compare_partitions=1),
              "2026-07")
    assert res.error is None, res.error
    assert max(on_disk) > 0
    assert_same_as_reference(data, "2026-07", config.method)
    assert sorted(p.name for p in (data / "_staging").iterdir()) == []


def test_memory_limit_auto():
    """The default cap is half of the memory this process may use, checked against what the
    kernel reports (/proc/meminfo, and a cgroup v2 limit where there is one) and against the
    cap DuckDB itself then holds."""
    import duckdb

    ram = int(re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text()).group(1)) * 1024
    cg = Path("/sys/fs/cgroup/memory.max")
    if cg.is_file() and cg.read_text().strip().isdigit():
        ram = min(ram, int(cg.read_text()))
    assert load().duckdb_memory_limit == "auto"
    con = duckdb.connect()
    caps.limit(con, "auto", None)
    held = con.execute("SELECT value FROM duckdb_settings() WHERE name = 'memory_limit'").fetchone()[0]
    gib = float(held.split()[0]) * {"GiB": 2**30, "MiB": 2**20}[held.split()[1]]
    assert abs(gib - ram / 2) < 0.01 * ram, (held, ram)
    assert caps.memory_limit("3GB") == "3GB" and caps.memory_limit(None) is None


def test_config_engine(tmp_path):
    assert load().engine == "duckdb"
    p = tmp_path / "c.toml"
    p.write_text('engine = "spark"\nduckdb_memory_limit = "2GB"\n')
    assert load(p).engine == "spark" and load(p).duckdb_memory_limit == "2GB"
    p.write_text('engine = "polars"\n')
    with pytest.raises(ConfigError, match='engine: expected one of "duckdb", "spark"'):
        load(p)
    p.write_text('duckdb_memory_limit = "lots"\n')
    with pytest.raises(ConfigError, match=r'duckdb_memory_limit: expected a size like 500GB or 2TiB or "auto", got .lots.'):
        load(p)
    cfg = load()
    assert job.effective_engine(cfg) == "duckdb"
    assert job.effective_engine(cfg.with_overrides(spark_master="spark://head:7077")) == "spark"
    assert job.effective_engine(cfg.with_overrides(data_dir="hdfs:///congruency")) == "spark"
    assert job.effective_engine(cfg.with_overrides(engine="spark")) == "spark"


@pytest.mark.slow
def test_cli_default_engine_needs_no_java(tmp_path):
    """`congruency compare` on the default engine with no java anywhere on PATH or JAVA_HOME."""
    write_entries(tmp_path, "2024-01", cases.full_month_rows())
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").symlink_to(sys.executable)
    env = {"PATH": str(bindir), "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "compare", "--month", "2024-01", "--data-dir", str(tmp_path),
                        "--min-coverage", "0", "--json"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    ref = reference.compute_month(entry_rows(tmp_path, "2024-01"), "2024-01", replace(load().method, min_coverage=0.0))
    assert out["summary"]["pairs"] == ref["month_summary"][0]["pairs"] > 0
    assert out["engine"] == "duckdb"

    p = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "compare", "--month", "2024-01", "--data-dir", str(tmp_path),
                        "--engine", "duckdb", "--master", "spark://head:7077"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 2
    assert p.stderr.strip() == "error: --engine duckdb: --master spark://head:7077 names a Spark cluster; use --engine spark"


@pytest.mark.spark
def test_a_spark_session_without_s3a_is_refused_for_an_s3_data_dir(spark):
    """A session handed in that was started without S3A (the suite's own: its jars on the
    class path, the s3 scheme not bound to it) reaches no s3:// data dir: one line naming it
    and what gives it S3A."""
    from bgp_congruency.common.errors import BadInput
    from bgp_congruency.pipeline import s3a
    from bgp_congruency.pipeline.engines.spark import SparkEngine

    assert not s3a.reaches(spark)
    with pytest.raises(BadInput, match=r"^s3://lake/x: this Spark session was started without S3A for s3://"):
        SparkEngine(spark).store("s3://lake/x")


@pytest.mark.slow
def test_as_path_repeats_is_exact_and_routes_without_it_compare_the_same(sample, tmp_path):
    """Ingest's as_path_repeats (common/tables.ROUTES) is true exactly where the route's
    as_path holds an ASN twice, counted here in Python on every route of the real sample; the
    compare cleans only those paths. Routes an earlier version wrote lack the column: with
    route-views6's files rewritten without it (route-views2's keep it), the routes view reads
    it NULL there, and the compare takes every path of route-views6 as one to clean and
    publishes the same tables as the sample's own run."""
    from tests.support.computed import writable

    data = writable(sample.data, tmp_path / "data")
    counts = {True: 0, False: 0}
    for f in sorted((data / "routes" / "month=2026-07").rglob("*.parquet")):
        t = pq.read_table(f, columns=["as_path", "as_path_repeats"])
        for p, r in zip(t["as_path"].to_pylist(), t["as_path_repeats"].to_pylist()):
            assert r == (p is not None and len(set(p)) < len(p)), (f, p, r)
            counts[r] += 1
    as_written_before(data, "2026-07", "route-views6", "as_path_repeats")
    assert counts == {True: 145_472, False: 698_154}, counts  # the 843,626 routes: 17% repeat an ASN
    assert "as_path_repeats" not in pq.read_schema(next((data / "routes" / "month=2026-07").rglob(
        "collector=route-views6/*/*.parquet")))
    # the analysts' routes view reads the column where it is and NULL where it is not
    import duckdb

    from bgp_congruency.lake import views

    got = duckdb.connect().execute(f"SELECT collector, as_path_repeats IS NULL, count(*) FROM "
                                   f"({views.ingest_bodies(data)['routes']}) GROUP BY ALL ORDER BY ALL").fetchall()
    assert got == [("route-views2", False, 679_347), ("route-views6", True, 164_279)]
    assert run(sample.cfg.with_overrides(data_dir=data), "2026-07").error is None
    tables = ("paths", "pairs", "vps", "divergence", "month_summary", "cleaning_stats")
    got = published_tables(data, tables, "2026-07")
    want = published_tables(sample.data, tables, "2026-07")
    for t in tables:
        assert got[t] and canon(got[t]) == canon(want[t]), t


def test_a_month_of_collectors_of_both_versions_compares_and_stages_the_same(config, tmp_path):
    """Every cleaning reason (cases.cleaning_rows) beside a month of three collectors, with
    rrc00's and route-views2's routes as an earlier version wrote them (no as_path_repeats):
    the DuckDB compare unions the collectors by name and cleans every path of those two, and
    equals the reference; the prefixes stager (common/routes.relation_sql) writes what it
    writes from the same month all of one version."""
    from bgp_congruency.selector import origins

    rows = cases.cleaning_rows() + cases.full_month_rows()
    now, old = tmp_path / "now", tmp_path / "old"
    for data in (now, old):
        write_entries(data, "2024-04", rows)
    for collector in ("rrc00", "route-views2"):
        as_written_before(old, "2024-04", collector, "as_path_repeats")
    assert run(duck(config, data_dir=old), "2024-04").error is None
    assert_same_as_reference(old, "2024-04", config.method)
    staged = {}
    for data in (now, old):
        (data / "st").mkdir()
        assert origins.stage(duck(config, data_dir=data), "2024-04", str(data / "st")) > 0
        staged[data] = pq.read_table(data / "st" / "prefix_origins").to_pylist()
    assert staged[old] == staged[now]


def test_the_prefixes_stager_counts_each_entry_of_every_snapshot(config, tmp_path):
    """prefix_origins (selector/origins.py) from the routes, against the hand rows it stands
    for, counted in Python: an entry per (family, prefix, origin) and row, whatever snapshot
    it is in. The routes hold a route once with the bits of its snapshots (150 of them,
    across three words), two ADD-PATH copies of one route in a snapshot as two routes, and
    no origin for a path that is missing, empty or only text; summing each route's entries
    must give the count of the rows."""
    from collections import Counter

    from bgp_congruency.selector import origins

    rows = cases.snapshot_rows() + cases.paths_rows() + cases.cleaning_rows()
    rows += [cases.R("rrc00", 7, 4, [7, 8], prefix="10.7.0.0/16")] * 2  # ADD-PATH: the same route twice
    write_entries(tmp_path, "2024-06", rows)
    (tmp_path / "st").mkdir()
    n = origins.stage(duck(config, data_dir=tmp_path), "2024-06", str(tmp_path / "st"))
    got = {(r["afi"], r["prefix"], r["origin_asn"]): r["entries"]
           for r in pq.read_table(tmp_path / "st" / "prefix_origins").to_pylist()}
    want = Counter((r["afi"], r["prefix"], r["as_path"][-1]) for r in rows if r["as_path"])
    assert got == dict(want) and n == len(want)
    assert got[(4, "10.0.0.0/16", 9)] == 75 and got[(4, "10.7.0.0/16", 8)] == 2
