"""The Spark job against the pure-Python reference (congruency/reference.py), row for row:
on the hand-made cases of test_method.py on the suite's local session; on the real
2026-07-30 route-views2 + route-views6 pair through spark-submit on a real standalone
cluster; and on bad input."""
from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bgp_congruency.common.params import MethodParams
from bgp_congruency.common.tables import TABLES
from bgp_congruency.pipeline import job
from tests.support import cases, jvm
from tests.support.data import PEERS_IN_BOTH_2026, ROOT, RV2_2026, RV6_2026, require_tool
from tests.support.month import (
    HAND_CASES,
    VARIANT_CASES,
    as_written_before,
    assert_same_as_reference,
    canon,
    published,
    published_tables,
    read_published,
    write_entries,
)

pytestmark = pytest.mark.spark


def file_schema(data: Path, table: str, month: str) -> list[tuple[str, str]]:
    """(column, Arrow type) of a published table's files, in order; `month` is the folder."""
    files = sorted((data / table / f"month={month}").rglob("*.parquet"))
    schemas = {tuple((f.name, str(f.type)) for f in pq.read_schema(p)) for p in files}
    assert len(schemas) == 1, schemas
    return list(schemas.pop())


def _duckdb_twin(spark_data: Path, config, month: str, params) -> Path:
    """The DuckDB engine's tables of the same routes, in a data dir beside `spark_data`."""
    duck = spark_data.parent / f"{spark_data.name}-duckdb"
    (duck / "routes").mkdir(parents=True, exist_ok=True)
    link = duck / "routes" / f"month={month}"
    if not link.exists():
        link.symlink_to((spark_data / "routes" / f"month={month}").resolve())
    manifest = spark_data / "manifest" / f"month={month}"
    if manifest.exists() and not (duck / "manifest" / f"month={month}").exists():  # provenance reads it
        (duck / "manifest").mkdir(exist_ok=True)
        (duck / "manifest" / f"month={month}").symlink_to(manifest.resolve())
    cfg = replace(config.with_overrides(data_dir=duck, engine="duckdb"), method=params)
    [res] = job.compare_months(cfg, [month])
    assert res.error is None, res.error
    return duck


def assert_engines_agree(spark_data: Path, config, month: str, params, duck: Path | None = None) -> None:
    """The DuckDB engine on the same routes (in a data dir of its own, months run in the
    same order; `duck`: one the session computed already) gives the Spark engine's tables,
    transitions included: same rows, same column order and types, both those of common/tables.py."""
    from bgp_congruency.common.tables import TRANSITIONS

    if duck is None:
        duck = _duckdb_twin(spark_data, config, month, params)
    names = (*TABLES, "transitions")
    duck_rows, spark_rows = published_tables(duck, names, month), published_tables(spark_data, names, month)
    for table in names:
        schema = TRANSITIONS if table == "transitions" else TABLES[table]
        want = [(f.name, str(f.type)) for f in schema if f.name != "month"]
        assert file_schema(duck, table, month) == want, table
        assert file_schema(spark_data, table, month) == want, table
        assert canon(duck_rows[table]) == canon(spark_rows[table]), table
    # Provenance: the same schema on both engines, the same row but for when and by which engine.
    from bgp_congruency.common.tables import PROVENANCE

    want = [(f.name, str(f.type)) for f in PROVENANCE if f.name != "month"]
    assert file_schema(duck, "provenance", month) == want == file_schema(spark_data, "provenance", month)
    [d], [s] = (read_published(x, "provenance", month).to_pylist() for x in (duck, spark_data))
    assert (d.pop("engine"), s.pop("engine")) == ("duckdb", "spark")
    d.pop("published_at"), s.pop("published_at")
    if not d["snapshots_used"]:  # hand-made months have no manifest: nothing to trace
        assert d["entries"] == 0 and d["coverage_policy"] is None
    assert d == s


# ------------------------------------------------------------------ real data
def assert_real_pair(data: Path, config, summary: dict, duck: Path) -> None:
    """The real sample's tables in `data`: the reference's, DuckDB's (`duck`), and for a sample
    of pairs the most frequent prepend-free path of `bgpdump -m` of each file (independent
    evidence). `summary`: the compare's."""
    ref = assert_same_as_reference(data, "2026-07", config.method)
    assert_engines_agree(data, config, "2026-07", config.method, duck=duck)
    vps_with_pairs = {r["vp_asn"] for r in published(data, "vps", "2026-07") if r["pairs"]}
    assert vps_with_pairs == PEERS_IN_BOTH_2026
    assert summary["vps_with_pairs"] == len(PEERS_IN_BOTH_2026)
    [month_summary] = ref["month_summary"]
    assert summary["pairs"] == month_summary["pairs"] > 1000
    pairs = {(r["vp_asn"], r["dest_asn"]): r for r in published(data, "pairs", "2026-07")}
    assert len(pairs) == month_summary["pairs"]
    sample = sorted(pairs)[:: max(1, len(pairs) // 25)]
    for afi, f in ((4, RV2_2026), (6, RV6_2026)):
        counts = bgpdump_paths(f, {k[0] for k in sample})
        for vp, dest in sample:
            seen = counts.get((vp, dest), Counter())
            best = min(seen, key=lambda p: (-seen[p], len(p), p))
            assert list(best) == pairs[(vp, dest)][f"v{afi}_path"], (vp, dest, afi)


def bgpdump_paths(path: Path, peers: set[int]) -> dict[tuple[int, int], Counter]:
    require_tool("bgpdump")
    out = subprocess.run(["bgpdump", "-q", "-m", str(path)], capture_output=True, text=True, check=True).stdout
    res: dict = {}
    for line in out.splitlines():
        f = line.split("|")
        if int(f[4]) not in peers or f[5] in ("0.0.0.0/0", "::/0") or "{" in f[6]:
            continue
        asns = [int(a) for a in f[6].split()]
        p = tuple(a for i, a in enumerate(asns) if i == 0 or a != asns[i - 1])
        res.setdefault((p[0], p[-1]), Counter())[p] += 1
    return res


def test_variant_cases_match_reference(spark, config, tmp_path):
    for month, (make, change) in VARIANT_CASES.items():
        write_entries(tmp_path, month, make())
        cfg = replace(config.with_overrides(data_dir=tmp_path), method=replace(config.method, **change))
        res = job.compare_month(cfg, month, spark=spark)
        assert res.error is None, res.error
        assert_same_as_reference(tmp_path, month, cfg.method)


def test_hand_made_cases_match_reference(spark, config, tmp_path):
    """Every hand-made month on Spark equals the reference. Over 60 s: six Spark compares
    (~15 s each on 2 cores, whatever the month's size)."""
    for month, (make, cov) in HAND_CASES.items():
        write_entries(tmp_path, month, make())
    for i, (month, (make, cov)) in enumerate(HAND_CASES.items()):
        cfg = replace(config.with_overrides(data_dir=tmp_path), method=replace(config.method, min_coverage=cov))
        res = job.compare_month(cfg, month, spark=spark)
        assert res.error is None, res.error
        assert_same_as_reference(tmp_path, month, cfg.method)
        if i == 0:  # rows, column order and types as DuckDB's (the same schema every month; the values: the reference)
            assert_engines_agree(tmp_path, config, month, cfg.method)


def test_routes_without_as_path_repeats_compare_the_same_on_spark(spark, config, tmp_path):
    """Every cleaning reason (cases.cleaning_rows) beside a month of three collectors, with
    rrc00's and route-views2's routes as an earlier version wrote them (no as_path_repeats)
    and route-views6's as ingest writes them now: Spark unions the collectors by name and
    cleans every path of the first two; the tables equal the reference's."""
    write_entries(tmp_path, "2024-04", cases.cleaning_rows() + cases.full_month_rows())
    for collector in ("rrc00", "route-views2"):
        as_written_before(tmp_path, "2024-04", collector, "as_path_repeats")
    res = job.compare_month(config.with_overrides(data_dir=tmp_path), "2024-04", spark=spark)
    assert res.error is None, res.error
    assert_same_as_reference(tmp_path, "2024-04", config.method)


def test_a_month_whose_every_path_is_cleaned_away_compares_on_spark(spark, config, tmp_path):
    """No entry kept (a default route and an AS_SET in each family): Spark's per_path has no
    row, so its split write (steps.SPARK_SPLIT) has no representative part to move and writes
    `paths` empty; every table equals the reference's and has DuckDB's schema."""
    rows = [cases.R("rrc00", 1, 4, [1, 2], prefix="0.0.0.0/0"), cases.R("rrc00", 1, 4, [1, 3], as_set=True),
            cases.R("rrc00", 1, 6, [1, 2], prefix="::/0"), cases.R("rrc00", 1, 6, [1, 3], as_set=True)]
    write_entries(tmp_path, "2024-05", rows)
    res = job.compare_month(config.with_overrides(data_dir=tmp_path), "2024-05", spark=spark)
    assert res.error is None, res.error
    assert_same_as_reference(tmp_path, "2024-05", config.method)
    assert published(tmp_path, "paths", "2024-05") == []
    assert_engines_agree(tmp_path, config, "2024-05", config.method)


def test_the_split_must_give_the_table_its_sql_selects(spark, config, tmp_path, monkeypatch):
    """Spark stages `paths` as per_path's representative part (steps.SPARK_SPLIT) and checks
    it against the table's own SQL, analysed: an edit of that SQL that the split does not
    follow is a one-line error, not a table quietly other than its SQL."""
    from bgp_congruency.pipeline import steps as S

    i = next(i for i, s in enumerate(S.MONTH_STEPS) if s.name == "paths")
    edited = replace(S.MONTH_STEPS[i], spark=S.MONTH_STEPS[i].spark.replace(", snapshots\n", "\n"))
    assert edited.spark != S.MONTH_STEPS[i].spark
    monkeypatch.setattr(S, "MONTH_STEPS", S.MONTH_STEPS[:i] + (edited,) + S.MONTH_STEPS[i + 1:])
    write_entries(tmp_path, "2024-01", cases.full_month_rows())
    res = job.compare_month(config.with_overrides(data_dir=tmp_path), "2024-01", spark=spark)
    assert res.error and "steps.SPARK_SPLIT: per_path's part where representative is true" in res.error, res.error
    assert "\n" not in res.error and published(tmp_path, "paths", "2024-01") == []


def test_the_staging_peak_is_sampled_while_the_compare_runs(tmp_path):
    """The compare's staging peak (pipeline/job._StagingPeak) is what its folder held at its
    fullest, seen by the sampling thread though the file is gone by the end; a last sample
    after `stop` is the final word, and a file removed while it walks counts 0."""
    folder = tmp_path / "staged"
    (folder / "_spill").mkdir(parents=True)
    peak = job._StagingPeak(str(folder))
    peak.EVERY_S = 0.02
    with peak:
        (folder / "_spill" / "spill.tmp").write_bytes(b"x" * 300_000)
        deadline = time.monotonic() + 5
        while peak.peak < 300_000 and time.monotonic() < deadline:
            time.sleep(0.01)
        (folder / "_spill" / "spill.tmp").unlink()
        (folder / "pairs.parquet").write_bytes(b"y" * 1_000)
        peak.stop()
        peak.sample()
    assert peak.peak == 300_000  # the spill's, not the 1,000 bytes left at the end
    peak.sample()
    assert peak.peak == 300_000


def test_the_edit_distance_sql_is_the_method_s_in_both_dialects(spark):
    """steps.edit_distance_sql in Spark and in DuckDB equals method.edit_distance on hand-picked
    lists (either or both empty, a prefix, a suffix, reversed, no ASN in common: the SQL's
    shortcut) and 300 random ones: the pairs step runs it on paths with their common ends cut
    off, which leaves empty lists."""
    import random

    import duckdb

    from bgp_congruency.congruency.method import edit_distance
    from bgp_congruency.pipeline.steps import edit_distance_sql

    rnd = random.Random(59)
    cases_ = [([], []), ([], [1]), ([1, 2], []), ([1, 2, 3], [1, 2]), ([2, 3], [1, 2, 3]), ([1, 2, 3], [3, 2, 1]),
              ([5], [5]), ([1, 2], [3, 4, 5]), ([4, 5, 6], [7]), ([1, 2, 1], [2, 3])]
    cases_ += [([rnd.randint(1, 5) for _ in range(rnd.randint(0, 6))], [rnd.randint(1, 5) for _ in range(rnd.randint(0, 6))])
               for _ in range(300)]
    want = [edit_distance(a, b) for a, b in cases_]
    spark.createDataFrame([(i, a, b) for i, (a, b) in enumerate(cases_)], "i int, a array<bigint>, b array<bigint>") \
        .createOrReplaceTempView("ed_cases")
    got_spark = [r.d for r in spark.sql(f"SELECT i, {edit_distance_sql('a', 'b', 'spark')} AS d FROM ed_cases ORDER BY i")
                 .collect()]
    con = duckdb.connect()
    con.execute("CREATE TABLE ed_cases (i INTEGER, a BIGINT[], b BIGINT[])")
    con.executemany("INSERT INTO ed_cases VALUES (?, ?, ?)", [(i, a, b) for i, (a, b) in enumerate(cases_)])
    got_duckdb = [d for (d,) in con.execute(f"SELECT {edit_distance_sql('a', 'b')} FROM ed_cases ORDER BY i").fetchall()]
    assert got_spark == got_duckdb == want and max(want) >= 5
    assert want[7:10] == [3, 3, 2]
    # a missing list has no distance, whichever side (the no-AS-in-common shortcut included)
    con.execute("CREATE TABLE ed_null AS SELECT [1, 2]::BIGINT[] AS a, NULL::BIGINT[] AS n")
    assert con.execute(f"SELECT {edit_distance_sql('a', 'n')}, {edit_distance_sql('n', 'a')} FROM ed_null").fetchone() \
        == (None, None)


def test_group_names_are_literals_in_both_dialects(spark):
    """A VP group or collector name with a quote or a backslash maps the same on both engines."""
    import duckdb

    from bgp_congruency.pipeline import steps as S

    groups = {"it's": "a\\b'c", "plain": "g"}
    step = S.both("g", "view", "SELECT {group} AS g FROM t ORDER BY collector")
    params = replace(MethodParams(), groups=groups)
    rows = [("it's",), ("other",), ("plain",)]
    spark.createDataFrame(rows, "collector string").createOrReplaceTempView("t")
    got_spark = [r.g for r in spark.sql(S.render(step, "spark", params, S.SnapshotPlan((1,), {}))).collect()]
    con = duckdb.connect()
    con.execute("CREATE TABLE t (collector VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?)", rows)
    got_duckdb = [r[0] for r in con.execute(S.render(step, "duckdb", params, S.SnapshotPlan((1,), {}))).fetchall()]
    assert got_spark == got_duckdb == ["a\\b'c", "other", "g"]


def test_rerun_replaces_the_month_exactly_and_leaves_others(spark, config, tmp_path):
    write_entries(tmp_path, "2024-01", cases.full_month_rows())
    write_entries(tmp_path, "2024-03", cases.quartile_rows())
    cfg = config.with_overrides(data_dir=tmp_path)
    assert job.compare_month(cfg, "2024-03", spark=spark).error is None
    other = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.glob("*/month=2024-03/**/*") if p.is_file()}
    first = job.compare_month(cfg, "2024-01", spark=spark)
    again = job.compare_month(cfg, "2024-01", spark=spark)
    assert first.error is None and again.error is None and first.summary == again.summary
    assert len(published(tmp_path, "pairs", "2024-01")) == first.summary["pairs"]  # no duplicates
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.glob("*/month=2024-03/**/*") if p.is_file()} == other
    assert not list((tmp_path / "_staging").glob("*"))


# ------------------------------------------------------------------ bad input
def test_bad_input_is_one_line_and_touches_nothing(spark, config, tmp_path):
    write_entries(tmp_path, "2024-01", cases.full_month_rows())
    cfg = config.with_overrides(data_dir=tmp_path)
    assert job.compare_month(cfg, "2024-01", spark=spark).error is None
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}

    # The same one-line messages as the DuckDB engine's (test_engines.py): one flow, pipeline/job.py.
    src = f"{tmp_path}/routes/month="
    r = job.compare_month(cfg, "2023-12", spark=spark)
    assert r.error == f"{src}2023-12: no ingested data for month 2023-12 (run congruency ingest first)"

    v4_only = [x for x in cases.full_month_rows() if x["afi"] == 4]
    write_entries(tmp_path, "2024-04", v4_only)
    r = job.compare_month(cfg, "2024-04", spark=spark)
    assert r.error == f"{src}2024-04: month 2024-04 has no IPv6 entries; both address families are needed"

    good = next((tmp_path / "routes" / "month=2024-01").glob("collector=*/gen-*"))
    bad = tmp_path / "routes" / "month=2024-05" / "collector=x" / good.name / "part-0.parquet"
    bad.parent.mkdir(parents=True)
    shutil.copy(good / "snapshots.json", bad.parent)
    pq.write_table(pa.table({"collector_name": ["x"], "afi": pa.array([4], pa.int8())}), bad)
    r = job.compare_month(cfg, "2024-05", spark=spark)
    assert r.error == f"{src}2024-05: column 'peer_asn' is missing (not a month's routes?)"
    wrong = tmp_path / "routes" / "month=2024-06" / "collector=x" / good.name / "part-0.parquet"
    wrong.parent.mkdir(parents=True)
    shutil.copy(good / "snapshots.json", wrong.parent)
    rows = pq.read_table(next(good.glob("part-*.parquet")))
    pq.write_table(rows.set_column(rows.schema.get_field_index("afi"), "afi", rows["afi"].cast(pa.string())), wrong)
    r = job.compare_month(cfg, "2024-06", spark=spark)
    assert r.error == f"{src}2024-06: column 'afi' is string, expected tinyint"
    after = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file() and p in before}
    assert after == before
    assert not (tmp_path / "pairs" / "month=2024-04").exists()
    assert not (tmp_path / "pairs" / "month=2024-05").exists()


def test_cli_compare_exit_codes(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "compare", "--month", "2024-13",
                        "--data-dir", str(tmp_path)], capture_output=True, text=True, env=env)
    assert p.returncode == 2 and p.stderr.strip() == "error: --month: expected YYYY-MM, got '2024-13'"
    p = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "compare", "--month", "2024-01",
                        "--data-dir", str(tmp_path), "--min-coverage", "1.5"], capture_output=True, text=True, env=env)
    assert p.returncode == 2 and "--min-coverage" in p.stderr


# ------------------------------------------------------------------ real cluster / spark-submit
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def standalone_cluster(tmp_path):
    """A real Spark standalone master and one worker on 127.0.0.1 (pyspark's spark-class)."""
    import pyspark

    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(tmp_path / "logs"), "SPARK_WORKER_DIR": str(tmp_path / "work"),
           "PYSPARK_PYTHON": sys.executable}
    # The daemons log at Spark's defaults into cluster.log (no conf dir), at the JIT's first
    # tier as every JVM of the suite (tests/support/jvm.py); the drivers keep the suite's conf
    # dir, and their executors take its settings from them.
    daemons = {k: v for k, v in env.items() if k != "SPARK_CONF_DIR"} | {"SPARK_DAEMON_JAVA_OPTS": jvm.OPTIONS}
    port, ui = _free_port(), _free_port()
    cls = str(home / "bin" / "spark-class")
    logs = open(tmp_path / "cluster.log", "wb")
    master = subprocess.Popen([cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(ui)],
                              env=daemons, stdout=logs, stderr=logs)
    worker = subprocess.Popen([cls, "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}",
                               "--host", "127.0.0.1", "--cores", "2", "--memory", "3g",
                               "--webui-port", str(_free_port())],
                              env=daemons, stdout=logs, stderr=logs)
    try:
        import json
        import urllib.request

        def alive_workers() -> int:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                    return json.load(r).get("aliveworkers", 0)
            except OSError:
                return 0

        deadline = time.monotonic() + 120
        while alive_workers() < 1:  # bounded: fails after two minutes
            log = (tmp_path / "cluster.log").read_text(errors="replace")[-2000:]
            assert time.monotonic() < deadline, log
            assert master.poll() is None and worker.poll() is None, log
            time.sleep(0.5)
        yield f"spark://127.0.0.1:{port}", env
    finally:
        for p in (worker, master):
            p.terminate()
        for p in (worker, master):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        logs.close()


@pytest.mark.cluster
@pytest.mark.slow
def test_real_pair_through_spark_submit_on_a_standalone_cluster(standalone_cluster, config, ingested_2026, sample,
                                                                 s3_server, postgres, tmp_path, monkeypatch):
    """The real sample's compare as a cluster runs it, sharing nothing but S3 and PostgreSQL:
    spark-submit (cli/submit.py, S3A's jars given with --jars as docs/operations.md says) on a
    standalone master and worker on 127.0.0.1, the data dir on the session's S3 server, the
    catalog in its PostgreSQL. The worker's executors reach the bucket with the settings the
    driver gives them (their environment points S3 clients at a dead port: conftest.py), write
    only there, and share no folder with the driver. Every published table equals the
    session's local DuckDB run (`sample`, itself the reference's and bgpdump's:
    assert_real_pair) row for row. `compare --master` on the same cluster then runs a
    hand-made month in a local folder. Over 60 s: a cluster's start, the real month on it (S3A
    ships its 690 MB of jars to the executor), and a second driver."""
    import json
    import uuid

    from bgp_congruency.pipeline import s3a
    from tests.test_s3 import _clean_env, _objects, _tables, _upload

    master, env = standalone_cluster
    submit = Path(env["SPARK_HOME"]) / "bin" / "spark-submit"
    env = {**env, "PYTHONPATH": str(ROOT)}
    db = f"cluster_{uuid.uuid4().hex[:8]}"
    root = f"s3://lake/{db}"
    _upload(s3_server, ingested_2026, root)  # what an ingest onto S3 writes (tests/test_s3.py)
    cf = tmp_path / "c.toml"
    cf.write_text(f'catalog = "postgres:{postgres.database(db)}"\n[s3]\nendpoint = "{s3_server.endpoint}"\n')
    driver = _clean_env(AWS_ACCESS_KEY_ID=s3_server.key_id, AWS_SECRET_ACCESS_KEY=s3_server.secret,
                        **{k: v for k, v in env.items() if k.startswith(("SPARK_", "PYSPARK_")) or k == "PYTHONPATH"})
    p = subprocess.run([str(submit), "--master", master, "--conf", "spark.executor.memory=2g",
                        "--jars", ",".join(map(str, s3a.jars())),
                        str(ROOT / "cli" / "submit.py"), "compare", "--month", "2026-07", "--data-dir", root,
                        "--config", str(cf), "--min-coverage", "0", "--json"],
                       capture_output=True, text=True, env=driver, timeout=900, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.splitlines()[-1])
    assert out["engine"] == "spark"  # spark-submit implies Spark
    assert out["summary"]["pairs"] == 2167 and out["summary"]["vps_with_pairs"] == len(PEERS_IN_BOTH_2026)
    on_s3 = [o for o in _objects(s3_server, root) if "/_staging/" in o]
    assert on_s3 == [], on_s3  # its staging in the bucket, removed after the publish
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    got, want = _tables(root), _tables(sample.data)
    assert set(got) == set(want)
    for t in want:
        strip = (lambda rows: [tuple(kv for kv in r if kv[0] != "engine") for r in rows]) if t == "provenance" \
            else (lambda rows: rows)
        assert strip(got[t]) == strip(want[t]), t
    assert [dict(r)["engine"] for r in got["provenance"]] == ["spark"]
    # `congruency compare --master spark://...`: its own session on the same cluster (a
    # hand-made month: the path to the cluster is what differs, not the job)
    hand = tmp_path / "hand"
    write_entries(hand, "2024-01", cases.full_month_rows())
    p = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "compare", "--month", "2024-01",
                        "--data-dir", str(hand), "--min-coverage", "0", "--master", master,
                        "--conf", "spark.executor.memory=2g", "--json"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads(p.stdout.splitlines()[-1])["engine"] == "spark"  # --master naming a cluster implies Spark
    assert_same_as_reference(hand, "2024-01", config.method)


def test_the_spark_engine_takes_a_data_dir_with_glob_characters_literally(two_months, tmp_path, spark):
    """A month of the two-month archive compared on Spark in `run[1]{a,b}`: the tables DuckDB
    published for it elsewhere (Spark globs every path it reads)."""
    from tests.support.cli import rows

    data = tmp_path / "run[1]{a,b}"
    (data / "routes").mkdir(parents=True)
    (data / "manifest").mkdir()
    for sub in ("routes", "manifest"):
        os.symlink(two_months.data / sub / "month=2026-01", data / sub / "month=2026-01")
    cfg = two_months.cfg.with_overrides(data_dir=data, engine="spark")
    [res] = job.compare_months(cfg, ["2026-01"], spark=spark)
    assert res.error is None, res.error
    for table in ("pairs", "paths", "vps", "divergence", "month_summary"):
        assert rows(data, table, "2026-01") == rows(two_months.data, table, "2026-01"), table
