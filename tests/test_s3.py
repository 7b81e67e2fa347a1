"""A data dir on S3 (common/s3.py), its catalog in PostgreSQL: the real sample month compared
on DuckDB with every file on the session's S3 server (tests/support/servers.py), equal row for
row to the session's local run of it (`sample`); read back by a process that has only the
data dir's URL and the AWS environment; and the faults that must write nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import fast_backend
from tests.support.computed import CONFIG_TOML, SAMPLE_MONTH
from tests.support.data import ARCHIVE, needs_data
from tests.support.month import canon

pytestmark = [needs_data]

MONTH = SAMPLE_MONTH


def _cli(*args, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def _clean_env(**aws) -> dict:
    """This process's environment without any AWS_ setting, plus `aws`."""
    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | aws


def _upload(server, local: Path, url: str) -> None:
    """An ingested month's routes and manifest copied to `url` (what ingest onto S3 writes)."""
    from pyarrow import fs

    f = fs.S3FileSystem(access_key=server.key_id, secret_key=server.secret, region="us-east-1", scheme="http",
                        endpoint_override=server.endpoint.removeprefix("http://"))
    for sub in ("routes", "manifest"):
        fs.copy_files(str(local / sub / f"month={MONTH}"), f"{url.removeprefix('s3://')}/{sub}/month={MONTH}",
                      destination_filesystem=f)


def _objects(server, url: str) -> list[str]:
    from pyarrow import fs

    f = fs.S3FileSystem(access_key=server.key_id, secret_key=server.secret, region="us-east-1", scheme="http",
                        endpoint_override=server.endpoint.removeprefix("http://"))
    sel = fs.FileSelector(url.removeprefix("s3://"), recursive=True, allow_not_found=True)
    return sorted(i.path for i in f.get_file_info(sel) if i.type == fs.FileType.File)


def _tables(root, monkeypatch=None) -> dict[str, list[tuple]]:
    """Every published table of the month through lake.connect, canonical; provenance without
    what names the run (its time, its data dir, its catalog snapshot)."""
    from bgp_congruency import lake
    from bgp_congruency.common.tables import MONTH_TABLES

    con = lake.connect(root)
    try:
        out = {}
        for t in MONTH_TABLES:
            cur = con.execute(f"SELECT * FROM {t} WHERE month = ?", [MONTH])
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r)) for r in cur.fetchall()]
            if t == "provenance":
                rows = [{k: v for k, v in r.items() if k in ("month", "engine", "entries", "snapshots")} for r in rows]
            out[t] = canon(rows)
        return out
    finally:
        con.close()


def _catalog_tables(postgres, db: str) -> int:
    r = subprocess.run(["psql", "-h", str(postgres.socket_dir), "-p", postgres.port, "-U", "congruency", "-d", db,
                        "-tAc", "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return int(r.stdout.strip())


@pytest.mark.slow
def test_the_sample_month_on_s3_equals_its_local_run(s3_server, postgres, ingested_2026, sample, tmp_path,
                                                       monkeypatch):
    db = f"s3_{uuid.uuid4().hex[:8]}"
    conninfo = postgres.database(db)
    root = f"s3://lake/{db}"
    cf = tmp_path / "c.toml"
    # The endpoint from the config's [s3] table, the keys from the AWS environment.
    cf.write_text(CONFIG_TOML + f'catalog = "postgres:{conninfo}"\n[s3]\nendpoint = "{s3_server.endpoint}"\n')
    keys = dict(AWS_ACCESS_KEY_ID=s3_server.key_id, AWS_SECRET_ACCESS_KEY=s3_server.secret)
    # Three hosts sharing only the bucket and the database: each its own temp folder, where
    # it keeps its local folder of the data dir (common/s3.local_dir).
    hosts = {h: tmp_path / f"host-{h}" for h in "abc"}
    for d in hosts.values():
        d.mkdir()

    def on(h: str) -> dict:
        return _clean_env(**keys, TMPDIR=str(hosts[h]))

    sel = ("--month", MONTH, "--data-dir", root, "--config", str(cf), "--archive-root", str(ARCHIVE),
           "--days", "30", "--times", "14:00", "--collectors", "route-views2,route-views6")
    # Host a ingests through the monthly run, straight onto S3 (ingest/onto_s3.py), its state
    # recorded in the bucket; an ingest of the same selection then finds every snapshot done.
    r = _cli("run", *sel, "--only", "ingest", "--min-coverage", "0", "--json", env=on("a"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout)["steps"]["ingest"]["status"] == "done"
    r = _cli("ingest", *sel, "--backend", fast_backend(), "--json", env=on("a"))
    assert r.returncode == 0 and json.loads(r.stdout)["already_done"] == 2, r.stderr[-3000:]
    left = list(hosts["a"].glob("congruency-s3-*/ingest/*/month=*"))
    assert not left, left  # only the MRT cache stays
    # Host b resumes the month: the ingest is recorded done; the compare and the later steps run there.
    r = _cli("run", *sel, "--min-coverage", "0", "--json", env=on("b"))
    assert r.returncode == 0, r.stderr[-3000:]
    steps = {k: v["status"] for k, v in json.loads(r.stdout)["steps"].items()}
    assert steps == {"ingest": "skipped", "compare": "done", "hints": "done", "lake": "done", "reports": "done"}, steps
    # Host c sees the month whole from the bucket: its status, and a run that skips every step.
    r = _cli("status", "--month", MONTH, "--data-dir", root, "--config", str(cf), "--json", env=on("c"))
    assert r.returncode == 0, r.stderr
    assert {v["status"] for v in json.loads(r.stdout)["steps"].values()} == {"done"}
    r = _cli("run", *sel, "--min-coverage", "0", "--json", env=on("c"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert {v["status"] for v in json.loads(r.stdout)["steps"].values()} == {"skipped"}, r.stdout

    # Nothing of the month stays on local disk: its staging folder was uploaded and removed.
    staged = [p for h in hosts.values() for p in h.glob("congruency-s3-*/_staging/*") if p.is_dir()]
    assert staged == [], staged
    assert f"lake/{db}/_runs/month={MONTH}/state.json" in _objects(s3_server, root)
    assert f"lake/{db}/exports/month={MONTH}/tunnels.jsonl" in _objects(s3_server, root)
    objects = _objects(s3_server, root)
    assert f"lake/{db}/catalog.url" in objects
    assert any(o.startswith(f"lake/{db}/pairs/month={MONTH}/") for o in objects)

    # Every table equal, row for row, to the session's local run of the same month.
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    on_s3, local = _tables(root), _tables(sample.data)
    # The routes ingest wrote to S3 are the local ingest's, route for route.
    from bgp_congruency import lake

    digest = "SELECT count(*), sum(hash(collector, peer_asn, peer_ip, prefix, as_path, seen)) FROM routes"
    with lake.connect(root) as a, lake.connect(ingested_2026) as b:
        assert a.execute(digest).fetchall() == b.execute(digest).fetchall()
    assert set(on_s3) == set(local)
    for t in local:
        assert on_s3[t] == local[t], t
    assert len(on_s3["pairs"]) == 2167

    # A host with only the data dir's URL and the AWS environment (no config file): the
    # catalog's URL is in the bucket, the endpoint in AWS_ENDPOINT_URL.
    env = _clean_env(**s3_server.env())
    r = _cli("query", "--data-dir", root, "--format", "json", "--sql", "SELECT count(*) AS n FROM pairs", env=env)
    assert r.returncode == 0, r.stderr
    assert '"n": 2167' in r.stdout
    r = _cli("query", "--data-dir", root, "--format", "json", "--sql", "SELECT catalog_snapshot AS s FROM provenance", env=env)
    assert r.returncode == 0, r.stderr
    published_at = json.loads(r.stdout)[0]["s"]
    r = _cli("query", "--data-dir", root, "--as-of", str(published_at - 1), "--format", "json", "--sql",
             "SELECT count(*) AS n FROM pairs", env=env)
    assert r.returncode == 0 and '"n": 0' in r.stdout, r.stdout + r.stderr  # before the month's publish
    # The analyst's SQL reads the data dir only: not another prefix of the bucket, and writes nothing.
    r = _cli("query", "--data-dir", root, "--sql", "SELECT count(*) FROM read_parquet('s3://lake/other/*.parquet')",
             env=env)
    assert r.returncode == 2 and "Cannot access file" in r.stderr, r.stderr
    # lake.connect reads only: a COPY into the data dir is refused, however httpfs spells its URL.
    from bgp_congruency.lake.reader import ReadOnlyError

    with lake.connect(root) as con:
        for url in (root, root.replace("s3://", "s3a://", 1)):
            with pytest.raises(ReadOnlyError, match="inside the data dir"):
                con.execute(f"COPY (SELECT 1 AS x) TO '{url}/pairs/x.parquet'")
    # `sql --print`: the lines to paste, the secret key masked.
    r = _cli("sql", "--data-dir", root, "--print", env=env)
    assert r.returncode == 0, r.stderr
    assert s3_server.secret not in r.stdout and "SECRET '***'" in r.stdout
    assert "CREATE OR REPLACE VIEW main.pairs" in r.stdout
    # The selector answers from S3 as it does locally.
    a = _cli("advise", "--data-dir", root, "--from", "7018", "--to", "AS3356", "--json", env=env)
    b = _cli("advise", "--data-dir", str(sample.data), "--from", "7018", "--to", "AS3356", "--json",
             env=_clean_env())
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert json.loads(a.stdout) == json.loads(b.stdout)
    # The tunnel hints export and the month's page, as from the local run.
    a = _cli("export", "--data-dir", root, "--month", MONTH, "--format", "jsonl", env=env)
    b = _cli("export", "--data-dir", str(sample.data), "--month", MONTH, "--format", "jsonl", env=_clean_env())
    assert a.returncode == 0 and a.stdout == b.stdout and a.stdout.count("\n") > 1000, a.stderr + b.stderr
    r = _cli("report", "--data-dir", root, "--month", MONTH, env=env, timeout=600)
    page = f"{root}/reports/month={MONTH}/report.html"
    assert r.returncode == 0 and page in r.stderr, r.stderr
    assert page.removeprefix("s3://") in _objects(s3_server, root)
    assert not Path("s3:").exists()  # never a local folder named after the URL

    # vacuum on S3: after a re-publish and a killed publish's leftover, it removes exactly the
    # objects no kept snapshot needs.
    r = _cli("compare", "--month", MONTH, "--data-dir", root, "--config", str(cf), "--min-coverage", "0",
             env=_clean_env(**keys))
    assert r.returncode == 0, r.stderr[-2000:]
    from pyarrow import fs

    f = fs.S3FileSystem(access_key=s3_server.key_id, secret_key=s3_server.secret, region="us-east-1", scheme="http",
                        endpoint_override=s3_server.endpoint.removeprefix("http://"))
    some = next(o for o in _objects(s3_server, root) if f"/pairs/month={MONTH}/" in o)
    f.copy_file(some, f"lake/{db}/pairs/month={MONTH}/{MONTH}-0rphan00/part-0.parquet")
    before = _objects(s3_server, root)
    orphan = f"lake/{db}/pairs/month={MONTH}/{MONTH}-0rphan00/part-0.parquet"
    # A young unregistered folder may be a publish in flight (no lock is shared on S3): kept.
    r = _cli("lake", "vacuum", "--data-dir", root, "--keep", "1", "--json", env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["folders_removed"] == 0, r.stdout + r.stderr
    assert orphan in _objects(s3_server, root)
    r = _cli("lake", "vacuum", "--data-dir", root, "--keep", "1", "--grace", "0", "--json", env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["snapshots_kept"] == 1 and out["folders_removed"] >= 1, out
    from bgp_congruency.lake.attach import tables

    con = lake.connect(root)
    try:
        needed = {u.removeprefix("s3://") for t in tables() for (u,) in con.execute(
            "SELECT data_file FROM ducklake_list_files('lake', ?)", [t]).fetchall()}
        needed |= {u.removeprefix("s3://") for (u,) in con.execute(
            "SELECT data_file FROM ducklake_list_files('lake', 'publishes', schema => '_congruency')").fetchall()}
        # A current publish of a table without rows registers no file, but its folder is the ledger's.
        current = tuple(f"lake/{db}/{d}/" for (d,) in con.execute(
            "SELECT folder FROM lake._congruency.publishes WHERE rows = 0").fetchall())
    finally:
        con.close()
    ingest_and_pages = tuple(f"lake/{db}/{p}" for p in ("routes/", "manifest/", "reports/", "exports/", "_runs/",
                                                         "catalog.url"))
    after = [o for o in _objects(s3_server, root) if not o.startswith(ingest_and_pages)]
    assert current and sorted(o for o in after if not o.startswith(current)) == sorted(needed)
    assert len(before) > len(after) + len(needed) // 2  # the first publish's files and the orphan went
    r = _cli("query", "--data-dir", root, "--format", "json", "--sql", "SELECT count(*) AS n FROM pairs", env=env)
    assert r.returncode == 0 and '"n": 2167' in r.stdout, r.stdout + r.stderr


@pytest.mark.slow
def test_s3_faults_say_one_line_and_publish_nothing(s3_server, postgres, ingested_2026, tmp_path):
    db = f"s3f_{uuid.uuid4().hex[:8]}"
    conninfo = postgres.database(db)
    root = f"s3://lake/{db}"
    _upload(s3_server, ingested_2026, root)
    cf = tmp_path / "c.toml"
    cf.write_text(CONFIG_TOML + f'catalog = "postgres:{conninfo}"\n')
    good = s3_server.env()

    def compare(data_dir: str, config: Path, **env) -> subprocess.CompletedProcess:
        return _cli("compare", "--month", MONTH, "--data-dir", data_dir, "--config", str(config),
                    env=_clean_env(**(good | env)), timeout=120)

    def one_line(r, *words):
        assert r.returncode != 0, r.stdout
        errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr
        for w in words:
            assert w in errors[0], errors[0]

    one_line(compare(root, cf, AWS_SECRET_ACCESS_KEY="wrong"), root, s3_server.endpoint, "ACCESS_DENIED")
    one_line(compare("s3://no-such-bucket/x", cf), "s3://no-such-bucket/x", "no bucket no-such-bucket")
    with __import__("socket").socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    one_line(compare(root, cf, AWS_ENDPOINT_URL=f"http://127.0.0.1:{closed}"), f"http://127.0.0.1:{closed}")
    pw = tmp_path / "pw.toml"  # catalog.url is read by every reader of the bucket: no password in it
    pw.write_text(CONFIG_TOML + f'catalog = "postgres:{conninfo} password=hunter2"\n')
    one_line(compare(root, pw), "PGPASSWORD")
    bare = tmp_path / "bare.toml"
    bare.write_text(CONFIG_TOML)
    one_line(compare(root, bare), "catalog", "PostgreSQL")
    # None of these wrote to the catalog or the bucket.
    assert _catalog_tables(postgres, db) == 0
    assert not any(o.endswith("catalog.url") or "/pairs/" in o for o in _objects(s3_server, root))
    # And a retry with the right settings completes.
    r = compare(root, cf)
    assert r.returncode == 0, r.stderr[-2000:]
    assert _catalog_tables(postgres, db) > 0


def test_s3_settings_come_the_aws_way_and_the_config_table_wins(tmp_path, monkeypatch):
    """common/s3.access: keys from the environment, else the profile's files; endpoint and
    region from the [s3] table over the environment over the profile; path style with an
    endpoint; the secret DuckDB gets says exactly that."""
    from bgp_congruency.common import s3
    from bgp_congruency.common.errors import BadInput

    aws = tmp_path / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text("[default]\naws_access_key_id = D\naws_secret_access_key = DS\n"
                                     "[lab]\naws_access_key_id = L\naws_secret_access_key = LS\n")
    (aws / "config").write_text("[default]\nregion = eu-west-1\n[profile lab]\nregion = ap-south-1\n"
                                "endpoint_url = http://10.0.0.1:9000\n")
    home = {"HOME": str(tmp_path)}
    a = s3.access("s3://b1/x", home)
    assert (a.key_id, a.secret, a.region, a.endpoint, a.url_style, a.use_ssl) == ("D", "DS", "eu-west-1", None,
                                                                                "vhost", True)
    a = s3.access("s3://b1/x", home | {"AWS_PROFILE": "lab"})
    assert (a.key_id, a.region, a.endpoint, a.url_style, a.use_ssl) == ("L", "ap-south-1", "10.0.0.1:9000", "path",
                                                                       False)
    env = home | {"AWS_PROFILE": "lab", "AWS_ACCESS_KEY_ID": "E", "AWS_SECRET_ACCESS_KEY": "ES",
                  "AWS_REGION": "us-west-2", "AWS_ENDPOINT_URL": "https://objects.example.net/"}
    a = s3.access("s3://b1/x", env)
    assert (a.key_id, a.secret, a.region, a.endpoint, a.use_ssl) == ("E", "ES", "us-west-2", "objects.example.net",
                                                                     True)
    s3.register("s3://b2/y", s3.S3Params(endpoint="http://127.0.0.1:8333", region="r1", url_style="vhost"))
    a = s3.access("s3://b2/other", env)  # registered per bucket
    assert (a.endpoint, a.region, a.url_style, a.use_ssl, a.key_id) == ("127.0.0.1:8333", "r1", "vhost", False, "E")
    sql = s3.duckdb_secret(a)
    assert sql == ("CREATE OR REPLACE SECRET congruency_s3 (TYPE s3, REGION 'r1', URL_STYLE 'vhost', USE_SSL false, "
                   "ENDPOINT '127.0.0.1:8333', KEY_ID 'E', SECRET 'ES')")
    from bgp_congruency.lake.attach import masked

    assert "'ES'" not in masked(sql) and "SECRET '***'" in masked(sql) and "KEY_ID 'E'" in masked(sql)
    # Spark's S3A gets the same access (pipeline/s3a.conf): the s3 scheme bound to S3A.
    monkeypatch.setattr(os, "environ", {**env, "AWS_SESSION_TOKEN": "T"})
    h = s3.hadoop_conf("s3://b2/other")
    assert {k: h[k] for k in ("fs.s3.impl", "fs.s3a.endpoint", "fs.s3a.endpoint.region", "fs.s3a.path.style.access",
                              "fs.s3a.connection.ssl.enabled", "fs.s3a.access.key", "fs.s3a.secret.key",
                              "fs.s3a.session.token", "fs.s3a.aws.credentials.provider")} == {
        "fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem", "fs.s3a.endpoint": "http://127.0.0.1:8333",
        "fs.s3a.endpoint.region": "r1", "fs.s3a.path.style.access": "false", "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.access.key": "E", "fs.s3a.secret.key": "ES", "fs.s3a.session.token": "T",
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"}
    monkeypatch.setattr(os, "environ", {"HOME": str(tmp_path / "nobody")})
    assert s3.hadoop_conf("s3://b3/z")["fs.s3a.aws.credentials.provider"].endswith("AnonymousAWSCredentialsProvider")
    with pytest.raises(BadInput, match="ftp://x"):
        s3.access("s3://b1/x", {"AWS_ENDPOINT_URL": "ftp://x"})
    with pytest.raises(BadInput, match="s3://: not an S3 URL"):
        s3.split("s3://")
    assert s3.split("s3://bucket/a/b/") == ("bucket", "a/b")


@pytest.mark.slow
def test_the_s3_server_stopped_mid_upload_publishes_nothing_and_a_retry_completes(postgres, ingested_2026,
                                                                                 tmp_path):
    """The endpoint goes away between two tables' uploads (the `publish` pause point): one
    line naming the object and the endpoint, no month in the catalog, no local staging left;
    the server back, the same command completes."""
    from bgp_congruency.pipeline.publish import ObjectStore
    from tests.support import servers

    db = f"s3k_{uuid.uuid4().hex[:8]}"
    conninfo = postgres.database(db)
    root = f"s3://lake/{db}"
    cf = tmp_path / "c.toml"
    cf.write_text(CONFIG_TOML + f'catalog = "postgres:{conninfo}"\n')
    args = [sys.executable, "-m", "bgp_congruency.cli.main", "compare", "--month", MONTH, "--data-dir", root,
            "--config", str(cf), "--min-coverage", "0"]
    flag = tmp_path / "paused"
    with servers.s3_server() as srv:
        _upload(srv, ingested_2026, root)
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=_clean_env(**srv.env(), CONGRUENCY_PAUSE_AT="publish",
                                            CONGRUENCY_PAUSE_FILE=str(flag), CONGRUENCY_PAUSE_S="8"))
        try:
            deadline = time.monotonic() + 240
            while not flag.exists() and p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            assert flag.exists(), p.communicate()[1][-2000:]
            srv.stop()
            _out, err = p.communicate(timeout=240)
        finally:
            p.kill()
        errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert p.returncode == 1 and len(errors) == 1 and "Traceback" not in err, err[-2000:]
        assert f"{root}/" in errors[0] and srv.endpoint in errors[0] and "nothing was published" in errors[0], errors
        staging = Path(ObjectStore(root).staging_root())
        assert not staging.exists() or not any(staging.iterdir()), list(staging.iterdir())
        with servers.s3_server(again=srv) as back:
            env = _clean_env(**back.env())
            r = _cli("query", "--data-dir", root, "--sql", "SELECT count(*) FROM pairs", env=env)
            assert r.returncode == 2 and "no published" in r.stderr, r.stdout + r.stderr  # nothing half-published
            r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
            assert r.returncode == 0, r.stderr[-2000:]
            r = _cli("query", "--data-dir", root, "--format", "json", "--sql", "SELECT count(*) AS n FROM pairs",
                     env=env)
            assert r.returncode == 0 and '"n": 2167' in r.stdout, r.stdout + r.stderr


@pytest.mark.slow
@pytest.mark.spark
def test_spark_with_the_s3_server_stopped_mid_publish_publishes_nothing_and_a_retry_completes(
        spark, postgres, ingested_2026, sample, tmp_path, monkeypatch):
    """The Spark engine through S3A (pipeline/publish.S3AStore; the suite's session, with the S3A
    jars on its class path): the endpoint goes away between two tables' moves (the `publish`
    pause point): one line naming the object and the endpoint, no month in the catalog; the
    server back, the same compare completes and its tables equal the session's local run."""
    import threading
    from dataclasses import replace

    from bgp_congruency.common import s3
    from bgp_congruency.pipeline import job, s3a
    from tests.support import servers

    db = f"s3s_{uuid.uuid4().hex[:8]}"
    conninfo = postgres.database(db)
    root = f"s3://lake/{db}"
    cfg = replace(sample.cfg.with_overrides(data_dir=root, engine="spark"), catalog=f"postgres:{conninfo}")
    flag = tmp_path / "paused"
    hconf = spark._jsc.hadoopConfiguration()
    with servers.s3_server() as srv:
        _upload(srv, ingested_2026, root)
        for k, v in srv.env().items():  # this process's pyarrow, DuckDB and catalog reach it too
            monkeypatch.setenv(k, v)
        given = {**s3.hadoop_conf(root), "fs.s3.impl.disable.cache": "true"}  # each call its endpoint's
        for k, v in given.items():
            hconf.set(k, v)
        try:
            assert s3a.reaches(spark), "the suite's Spark session has no S3A on its class path (make s3a-jars)"
            monkeypatch.setenv("CONGRUENCY_PAUSE_AT", "publish")
            monkeypatch.setenv("CONGRUENCY_PAUSE_FILE", str(flag))
            monkeypatch.setenv("CONGRUENCY_PAUSE_S", "300")

            def stop_when_paused():
                deadline = time.monotonic() + 600
                while not flag.exists() and time.monotonic() < deadline:
                    time.sleep(0.1)
                srv.stop()
                flag.unlink(missing_ok=True)  # the compare goes on, its endpoint gone

            stopper = threading.Thread(target=stop_when_paused, daemon=True)
            stopper.start()
            [res] = job.compare_months(cfg, [MONTH], spark=spark)
            stopper.join(timeout=60)
            monkeypatch.delenv("CONGRUENCY_PAUSE_AT")
            assert res.error and "\n" not in res.error and "Traceback" not in res.error, res.error
            assert f"{root}/" in res.error and srv.endpoint in res.error and "nothing was published" in res.error, \
                res.error
            with servers.s3_server(again=srv) as back:
                assert back.endpoint == srv.endpoint
                r = _cli("query", "--data-dir", root, "--sql", "SELECT count(*) FROM pairs",
                         env=_clean_env(**back.env()))
                assert r.returncode == 2 and "no published" in r.stderr, r.stdout + r.stderr  # nothing half-published
                [res] = job.compare_months(cfg, [MONTH], spark=spark)
                assert res.error is None, res.error
                on_s3, local = _tables(root), _tables(sample.data)
        finally:
            for k in given:
                hconf.unset(k)
    # the engine's tables (the run's stagers add the others; provenance names the engine)
    same = [t for t in job.ENGINE_TABLES if t != "provenance"]
    assert len(same) >= 6 and {t: on_s3[t] for t in same} == {t: local[t] for t in same}
    assert len(on_s3["pairs"]) == 2167


@pytest.mark.slow
def test_the_s3_server_stopped_mid_ingest_upload_leaves_the_month_and_a_retry_completes(ingested_2026, tmp_path):
    """An ingest onto S3 whose endpoint goes away while it uploads a collector's new generation
    (the `upload` pause point: its route files sent, not its snapshots.json): one line naming
    the data dir and the endpoint, exit 1, no generation readers take and no manifest on S3;
    the server back, the same command completes, routes equal to the local ingest's."""
    from bgp_congruency import lake
    from tests.support import servers

    root = f"s3://lake/up_{uuid.uuid4().hex[:8]}"
    args = ["ingest", "--month", MONTH, "--data-dir", root, "--archive-root", str(ARCHIVE), "--days", "30",
            "--times", "14:00", "--collectors", "route-views2,route-views6", "--backend", fast_backend()]
    flag = tmp_path / "paused"
    with servers.s3_server() as srv:
        p = subprocess.Popen([sys.executable, "-m", "bgp_congruency.cli.main", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env=_clean_env(**srv.env(), TMPDIR=str(tmp_path), CONGRUENCY_PAUSE_AT="upload",
                                            CONGRUENCY_PAUSE_FILE=str(flag), CONGRUENCY_PAUSE_S="300"))
        try:
            deadline = time.monotonic() + 300
            while not flag.exists() and p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            assert flag.exists(), p.communicate()[1][-2000:]
            srv.stop()
            flag.unlink()
            _out, err = p.communicate(timeout=300)
        finally:
            p.kill()
        errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert p.returncode == 1 and len(errors) == 1 and "Traceback" not in err, err[-2000:]
        assert root in errors[0] and srv.endpoint in errors[0] and "run the ingest again" in errors[0], errors
        with servers.s3_server(again=srv) as back:
            objs = _objects(back, root)
            assert not any("/manifest/" in o or o.endswith("/snapshots.json") for o in objs), objs
            env = _clean_env(**back.env(), TMPDIR=str(tmp_path))
            r = _cli(*args, "--json", env=env)
            assert r.returncode == 0, r.stderr[-2000:]
            digest = "SELECT count(*), sum(hash(collector, peer_asn, peer_ip, prefix, as_path, seen)) FROM routes"
            old = dict(os.environ)
            os.environ.update(back.env())
            try:
                with lake.connect(root) as a, lake.connect(ingested_2026) as b:
                    assert a.execute(digest).fetchall() == b.execute(digest).fetchall()
            finally:
                os.environ.clear()
                os.environ.update(old)


@pytest.mark.slow
def test_an_ingest_onto_s3_merges_a_day_into_a_new_generation(s3_server, generated, tmp_path, monkeypatch):
    """Day 2, then days 1-2, of the generated archive onto S3: the second ingest merges day 1
    into generation 2 (replacing what a killed upload of that number left, which no reader
    took: it had no snapshots.json), and the routes equal one local ingest of both days."""
    from bgp_congruency import lake
    from tests.support.computed import GEN_MONTH

    root = f"s3://lake/gen_{uuid.uuid4().hex[:8]}"
    sel = ("--month", GEN_MONTH, "--archive-root", str(generated.archive), "--times", "00:00", "--collectors",
           "route-views2,route-views6,rrc00,rrc01", "--backend", fast_backend())
    env = _clean_env(**s3_server.env())
    for k, v in s3_server.env().items():  # this process's lake.connect too: the loopback server, never AWS
        monkeypatch.setenv(k, v)
    r = _cli("ingest", *sel, "--data-dir", root, "--days", "2", env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    from pyarrow import fs

    f = fs.S3FileSystem(access_key=s3_server.key_id, secret_key=s3_server.secret, region="us-east-1", scheme="http",
                        endpoint_override=s3_server.endpoint.removeprefix("http://"))
    col = f"{root.removeprefix('s3://')}/routes/month={GEN_MONTH}/collector=rrc00"
    stray = f"{col}/gen-000002/part-99.parquet"
    f.copy_file(f"{col}/gen-000001/part-0.parquet", stray)  # a killed upload of generation 2
    digest = ("SELECT count(*), sum(hash(collector, peer_asn, peer_ip, prefix, as_path, seen, seen_more)) "
              "FROM routes")
    with lake.connect(root) as con:  # the stray generation is not read: it has no snapshots.json
        one_day = con.execute(digest).fetchall()
    r = _cli("ingest", *sel, "--data-dir", root, "--days", "1,2", "--json", env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["already_done"] == 4
    local = tmp_path / "local"
    r = _cli("ingest", *sel, "--data-dir", str(local), "--days", "1,2", env=_clean_env())
    assert r.returncode == 0, r.stderr[-2000:]
    with lake.connect(root) as a, lake.connect(local) as b:
        both = a.execute(digest).fetchall()
        assert both == b.execute(digest).fetchall() and both != one_day
        assert a.execute("SELECT count(*) FROM route_snapshots").fetchone()[0] == 8
    objs = _objects(s3_server, root)
    assert stray not in objs and any(o.startswith(f"{col}/gen-000002/") for o in objs)


def test_s3a_jars_missing_or_altered_are_named_in_one_line(tmp_path, monkeypatch):
    """pipeline/s3a.py: a jar missing from the Maven cache is named, with what fetches it,
    before the catalog is touched or a JVM starts (`compare --engine spark` on an s3:// data
    dir exits 2 at once); a jar whose SHA-256 differs from the pin is deleted and named."""
    from bgp_congruency.common.errors import BadInput
    from bgp_congruency.pipeline import s3a

    repo = tmp_path / "m2"
    r = _cli("compare", "--month", MONTH, "--data-dir", "s3://lake/nowhere", "--engine", "spark",
             env=_clean_env(MAVEN_REPO_LOCAL=str(repo)), timeout=60)
    assert r.returncode == 2, r.stderr
    hadoop = s3a.JARS[0].path(repo)
    assert r.stderr.strip() == (f"error: {hadoop}: S3A's jar org.apache.hadoop:hadoop-aws:3.5.0 is not in the Maven "
                                "cache; Spark reaches s3:// data dirs through it (run make s3a-jars)")
    for j in s3a.JARS:  # all present, the second one altered: nothing to fetch, the check finds it
        j.path(repo).parent.mkdir(parents=True)
        j.path(repo).write_bytes(b"not " + j.artifact.encode())
    monkeypatch.setattr(s3a, "_sha256", lambda p: s3a.JARS[[j.path(repo) for j in s3a.JARS].index(p)].sha256
                        if p != s3a.JARS[1].path(repo) else "0" * 64)
    with pytest.raises(BadInput, match=r"bundle-2\.35\.4\.jar: SHA-256 0{64}, pinned db4b55f2.*; deleted it"):
        s3a.fetch(repo)
    assert not s3a.JARS[1].path(repo).exists() and s3a.JARS[0].path(repo).exists()
    # The credentials never go in a session's launch settings (pyspark puts those on the
    # driver JVM's command line): they are set on the running session (s3a.give_credentials).
    s3a.JARS[1].path(repo).write_bytes(b"x")
    monkeypatch.setenv("MAVEN_REPO_LOCAL", str(repo))
    monkeypatch.setattr(os, "environ", {**os.environ, "AWS_ACCESS_KEY_ID": "K", "AWS_SECRET_ACCESS_KEY": "S3CRET",
                                        "AWS_SESSION_TOKEN": "T0KEN"})
    launch = s3a.conf("s3://lake/x", "/opt/mine.jar")
    assert not any(v in ("K", "S3CRET", "T0KEN") for v in launch.values()), launch
    assert launch["spark.jars"].split(",") == ["/opt/mine.jar", *map(str, s3a.jars(repo))]
    assert launch["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"


_DAG_TASK = """
import json, sys
from bgp_congruency.runner import month as runner, schedule
params = json.loads(sys.argv[1])
cfg = schedule.config_from_params(params)
if params.get("finish"):
    res = runner.finish_ingest(cfg, params["month"])
    print(json.dumps({"status": res.status, "error": res.error}))
else:
    runner.ingest_collector(cfg, params["month"], params["collectors"][0])
"""


@pytest.mark.slow
def test_collector_ingests_on_two_hosts_at_once_keep_each_others_records(s3_server, tmp_path):
    """The DAG's mapped ingest tasks of one month on two hosts that share only the bucket: host
    a's task is held after its merge, before it writes its manifest; host b's task ingests its
    collector whole meanwhile; then a finishes. Neither drops the other's manifest rows or
    ingest outcome (ingest/manifest.py, runner/state.record_collector), and the join finds
    the month's ingest done, with one manifest row per snapshot."""
    root = f"s3://lake/hosts_{uuid.uuid4().hex[:8]}"
    hosts = {h: tmp_path / f"host-{h}" for h in "ab"}
    for d in hosts.values():
        d.mkdir()
    cf = tmp_path / "c.toml"
    cf.write_text(CONFIG_TOML + f'backend = "{fast_backend()}"\n')
    flag = tmp_path / "a.paused"

    def params(collector: str | None, **more) -> str:
        return json.dumps({"month": MONTH, "data_dir": root, "config": str(cf), "archive_root": str(ARCHIVE),
                           "days": "30", "times": "14:00", "min_coverage": 0,
                           "collectors": [collector] if collector else ["route-views2", "route-views6"], **more})

    def task(h: str, collector: str | None, **more) -> list[str]:
        return [sys.executable, "-c", _DAG_TASK, params(collector, **more)]

    env = {h: _clean_env(**s3_server.env(), TMPDIR=str(d)) for h, d in hosts.items()}
    # The month as an earlier version left it: one manifest.parquet, each slot failed. Both
    # hosts read it; each task's file then shadows its collector's rows of it.
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyarrow import fs

    from bgp_congruency.common.tables import MANIFEST

    legacy = tmp_path / "manifest.parquet"
    pq.write_table(pa.Table.from_pylist([
        {"month": MONTH, "slot": f"{c}@20260730T1400", "collector": c, "project": "routeviews", "status": "failed",
         "target_time": __import__("datetime").datetime(2026, 7, 30, 14, tzinfo=__import__("datetime").timezone.utc),
         "error": "an earlier run's", "skipped": []} for c in ("route-views2", "route-views6")], schema=MANIFEST), legacy)
    bucket_fs = fs.S3FileSystem(access_key=s3_server.key_id, secret_key=s3_server.secret, region="us-east-1",
                                scheme="http", endpoint_override=s3_server.endpoint.removeprefix("http://"))
    fs.copy_files(str(legacy), f"{root.removeprefix('s3://')}/manifest/month={MONTH}/manifest.parquet",
                  destination_filesystem=bucket_fs)
    a = subprocess.Popen(task("a", "route-views2"), env=env["a"] | {"CONGRUENCY_PAUSE_AT": "merged",
                         "CONGRUENCY_PAUSE_FILE": str(flag), "CONGRUENCY_PAUSE_S": "600"},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not flag.exists() and a.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert flag.exists(), a.communicate(timeout=30)[1][-3000:]
        b = subprocess.run(task("b", "route-views6"), env=env["b"], capture_output=True, text=True, timeout=300)
        assert b.returncode == 0, b.stderr[-3000:]
        flag.unlink()  # host a goes on: its manifest and outcome are written after b's
        _out, err = a.communicate(timeout=300)
        assert a.returncode == 0, err[-3000:]
    finally:
        if a.poll() is None:
            a.kill()
    done = subprocess.run(task("b", None, finish=True), env=env["b"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and json.loads(done.stdout.splitlines()[-1]) == {"status": "done", "error": None}, \
        done.stdout + done.stderr[-3000:]

    from bgp_congruency.ingest import manifest
    from bgp_congruency.runner import state
    from bgp_congruency.runner.schedule import config_from_params

    old = dict(os.environ)
    os.environ.update(s3_server.env())
    try:
        rows = manifest.read(root, MONTH)
        st = state.read_state(config_from_params(json.loads(params(None))), MONTH)
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert sorted((r["collector"], r["status"]) for r in rows.values()) == [("route-views2", "ok"),
                                                                           ("route-views6", "ok")]
    assert {c: r["status"] for c, r in st["steps"]["ingest"]["collectors"].items()} == {
        "route-views2": "done", "route-views6": "done"}
    assert st["steps"]["ingest"]["status"] == "done"
    objects = _objects(s3_server, root)
    prefix = root.removeprefix("s3://")
    # The single file stays, shadowed whole (host a read the month before host b's file was
    # there): the next write that sees every collector's file removes it.
    assert sorted(o for o in objects if o.startswith(f"{prefix}/manifest/")) == [
        f"{prefix}/manifest/month={MONTH}/collector=route-views2.parquet",
        f"{prefix}/manifest/month={MONTH}/collector=route-views6.parquet",
        f"{prefix}/manifest/month={MONTH}/manifest.parquet"]
    assert {o.rsplit("/", 3)[-3] for o in objects if "/routes/" in o} == {"collector=route-views2",
                                                                         "collector=route-views6"}
