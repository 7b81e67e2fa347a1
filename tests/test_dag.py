"""The Airflow DAG (dags/congruency_monthly.py) in real Airflow 3: structure, a full
`dag.test()` of the 2026-07 sample month over HTTP, a failing collector, and a small
generated month compared through spark-submit.

Runs in .venv-airflow (`make test`: the `airflow` extra pins one pyspark for the provider);
skipped where Airflow is not installed. Airflow's home is a throwaway folder with sqlite.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.support.data import ARCHIVE, FAULTY, PEERS_IN_BOTH_2026, ROOT, RV2_2026, needs_data
from tests.support.month import read_published

if importlib.util.find_spec("airflow") is None:
    pytest.skip("Airflow is not installed here (make test runs this file in .venv-airflow)",
                allow_module_level=True)

MONTH = "2026-07"
LOGICAL = datetime(2026, 7, 6, 6, tzinfo=timezone.utc)
ENTRIES = 679_347 + 164_279  # bgpdump -m lines of the two sample RIBs (MANIFEST.md)


@pytest.fixture(scope="module")
def airflow_home(tmp_path_factory):
    """A fresh AIRFLOW_HOME with a migrated sqlite database and the download pool."""
    home = tmp_path_factory.mktemp("airflow-home")
    env = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "CONGRUENCY_DAG_RETRIES": "0",  # a failure fails now, not after the backoff
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True,
                   timeout=300)
    from airflow.models.pool import Pool

    Pool.create_or_update_pool("congruency_downloads", 2, "concurrent RIB downloads", False)
    yield home
    for k, v in old.items():
        os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


@pytest.fixture(scope="module")
def dag(airflow_home):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(ROOT / "dags"), known_pools={"default_pool", "congruency_downloads"})
    assert bag.import_errors == {}
    return bag.get_dag("congruency_monthly")


def test_one_pyspark():
    """pyspark-client (the provider's) and pyspark share a folder: they must be one version,
    and the Python files must match the jars."""
    import pyspark

    assert metadata.version("pyspark") == metadata.version("pyspark-client") == pyspark.__version__
    jars = Path(pyspark.__file__).parent / "jars"
    core = [p.name for p in jars.glob("spark-core_*.jar")]
    assert len(core) == 1 and core[0].endswith(f"-{pyspark.__version__}.jar"), core


def test_structure(dag):
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    assert set(dag.task_dict) == {"plan", "ingest", "ingest_done", "compare_where", "compare",
                                  "compare_on_cluster", "sensitivity", "hints", "lake", "reports"}
    up = {t: set(dag.task_dict[t].upstream_task_ids) for t in dag.task_dict}
    assert up == {"plan": set(), "ingest": {"plan"}, "ingest_done": {"ingest"},
                  "compare_where": {"ingest_done"}, "compare": {"compare_where"},
                  "compare_on_cluster": {"compare_where"}, "sensitivity": {"compare", "compare_on_cluster"},
                  "hints": {"sensitivity"},
                  "lake": {"hints"}, "reports": {"lake"}}
    assert dag.timetable.expression == "0 6 6 * *"
    assert dag.catchup and dag.max_active_runs == 1
    assert dag.start_date == datetime(2009, 1, 1, tzinfo=timezone.utc)
    ingest = dag.task_dict["ingest"]
    assert isinstance(ingest, MappedOperator) and ingest.pool == "congruency_downloads"
    assert ingest.retry_exponential_backoff and ingest.max_retry_delay
    # as deployed (the fixture parses with CONGRUENCY_DAG_RETRIES=0 so failures fail at once)
    from airflow.dag_processing.dagbag import DagBag

    saved = os.environ.pop("CONGRUENCY_DAG_RETRIES")
    try:
        deployed = DagBag(dag_folder=str(ROOT / "dags")).get_dag("congruency_monthly")
    finally:
        os.environ["CONGRUENCY_DAG_RETRIES"] = saved
    assert {t.task_id: t.retries for t in deployed.tasks} == {
        **{t: 3 for t in deployed.task_dict}, "ingest_done": 0}
    assert dag.task_dict["ingest_done"].trigger_rule == "all_done"
    assert dag.task_dict["sensitivity"].trigger_rule == "none_failed_min_one_success"
    assert type(dag.task_dict["compare_on_cluster"]).__mro__[1].__name__ == "SparkSubmitOperator"
    assert {"collectors", "days", "times", "archive_root", "engine", "spark_master", "data_dir",
            "compare_on", "sensitivity"} <= set(dag.params.keys())
    # the first scheduled run covers 2009-01, and fires once its five-day window is over
    from airflow.serialization.encoders import coerce_to_core_timetable

    from bgp_congruency.runner.schedule import month_for

    first = coerce_to_core_timetable(dag.timetable).next_dagrun_info(
        last_automated_data_interval=None, restriction=_restriction(dag))
    assert first.logical_date == datetime(2009, 1, 6, 6, tzinfo=timezone.utc)
    assert month_for(first.logical_date) == "2009-01"


def _restriction(dag):
    from airflow.timetables.base import TimeRestriction

    return TimeRestriction(earliest=dag.start_date, latest=None, catchup=True)


def _conf(tmp: Path, archive: str, data: Path | str) -> dict:
    cfg = tmp / "cfg.toml"
    cfg.write_text('engine = "duckdb"\nduckdb_threads = 2\nretries = 1\nbackoff_s = 0.2\n')
    return {"days": "30", "times": "14:00", "archive_root": archive, "data_dir": str(data),
            "engine": "duckdb", "min_coverage": 0, "config": str(cfg)}


def _states(dr) -> dict:
    return {(ti.task_id, ti.map_index): str(getattr(ti.state, "value", ti.state)) for ti in dr.get_task_instances()}


@needs_data
def test_month_through_airflow_equals_run(dag, tmp_path):
    from tests.support.archive_server import serve

    data = tmp_path / "af"
    with serve(ARCHIVE) as url:
        conf = _conf(tmp_path, str(url), data)
        dr = dag.test(logical_date=LOGICAL, run_conf=conf)
    states = _states(dr)
    assert str(getattr(dr.state, "value", dr.state)) == "success", states
    assert states[("ingest", 0)] == states[("ingest", 1)] == "success"
    assert states[("compare", -1)] == "success" and states[("compare_on_cluster", -1)] == "skipped"
    # the same month by the command line, same settings, another data dir
    by_cli = tmp_path / "cli"
    r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "run", "--month", MONTH, "--days", "30",
                        "--times", "14:00", "--min-coverage", "0", "--archive-root", str(ARCHIVE),
                        "--data-dir", str(by_cli), "--config", conf["config"], "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["entries"] == ENTRIES

    def rows(d):
        t = read_published(d, "pairs", MONTH)
        return sorted(json.dumps(x, sort_keys=True, default=str) for x in t.to_pylist())

    assert rows(data) == rows(by_cli)
    vps = {json.loads(x)["vp_asn"] for x in rows(data)}
    assert vps == PEERS_IN_BOTH_2026
    from bgp_congruency.runner.month import summary
    from bgp_congruency.runner.schedule import config_from_params

    s = summary(config_from_params(conf), MONTH)
    assert s["ok"] and s["entries"] == ENTRIES and set(s["steps"]["ingest"]["collectors"]) == {
        "route-views2", "route-views6"}


@needs_data
def test_one_truncated_collector_fails_only_its_task(dag, tmp_path):
    from tests.support.archive_server import serve

    archive = tmp_path / "archive"  # the real route-views2 RIB, and route-views6's cut short
    for col, src in (("route-views2", RV2_2026),
                     ("route-views6", FAULTY / "route-views6.rib.20260730.1400.truncated-download.bz2")):
        ribs = archive / col / "bgpdata" / "2026.07" / "RIBS"
        ribs.mkdir(parents=True)
        shutil.copyfile(src, ribs / "rib.20260730.1400.bz2")
    data = tmp_path / "af"
    with serve(archive) as url:
        conf = _conf(tmp_path, str(url), data)
        dr = dag.test(logical_date=LOGICAL, run_conf=conf)
    states = _states(dr)
    assert str(getattr(dr.state, "value", dr.state)) == "failed"
    assert states[("ingest", 0)] == "success" and states[("ingest", 1)] == "failed", states
    assert states[("ingest_done", -1)] == "failed"
    assert states[("compare", -1)] == "upstream_failed"
    # the month's status says which collector, and why, in one line
    r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "status", "--month", MONTH, "--data-dir", str(data),
                        "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    st = json.loads(r.stdout)["steps"]["ingest"]
    assert st["status"] == "failed"
    assert st["collectors"]["route-views2"]["status"] == "done"
    bad = st["collectors"]["route-views6"]
    assert bad["status"] == "failed" and re.search(r"route-views6 2026-07-30 14:00", bad["error"]), bad
    assert "\n" not in bad["error"]


def test_compare_on_a_cluster_through_spark_submit(dag, tmp_path, monkeypatch, s3_server, postgres):
    """compare_on=cluster on object storage: the data dir on the session's S3 server, the
    catalog in its PostgreSQL. The DAG ingests a small generated archive of four collectors
    onto S3, the provider's SparkSubmitOperator runs cli/submit.py `run --only compare`
    through spark-submit (master local[2] from the Airflow connection, S3A's jars given by
    the DAG), and the later steps run in the task; the month's tables equal the generator's
    ground truth, and the runner's state is in the bucket. (The real month through
    spark-submit on a standalone cluster: tests/test_compare.py; here the way the DAG gets
    there is what is checked, and a small month keeps it to a JVM's start.)"""
    import uuid

    from bgp_congruency.synth.generate import generate
    from tests.support.data import require_tool
    from tests.support.month import canon

    require_tool("java")
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    db = f"dag_{uuid.uuid4().hex[:8]}"
    catalog = postgres.database(db)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")  # spark-submit
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    archive, data = tmp_path / "archive", f"s3://lake/{db}"
    generate(archive, seed=11, ases=90, vps=8, months=(MONTH,), snapshots_per_month=1, min_coverage=0.5)
    collectors = [c["name"] for c in json.loads((archive / "SYNTH.json").read_text())["collectors"]]
    conf = {**_conf(tmp_path, str(archive), data), "compare_on": "cluster", "collectors": collectors,
            "days": "1", "times": "00:00", "min_coverage": 0.5}
    with open(conf["config"], "a") as f:
        f.write(f'catalog = "postgres:{catalog}"\n')
    dr = dag.test(logical_date=LOGICAL, run_conf=conf)
    states = _states(dr)
    assert states[("compare_on_cluster", -1)] == "success" and states[("compare", -1)] == "skipped", states
    assert str(getattr(dr.state, "value", dr.state)) == "success", states
    assert len({k for k in states if k[0] == "ingest"}) == 4
    from bgp_congruency.runner.schedule import config_from_params
    from bgp_congruency.runner.state import read_state

    assert read_state(config_from_params(conf), MONTH)["steps"]["compare"]["status"] == "done"
    from tests.test_s3 import _objects

    assert f"lake/{db}/_runs/month={MONTH}/state.json" in _objects(s3_server, data)
    for table in ("pairs", "vps", "month_summary", "cleaning_stats"):
        want = pq.read_table(archive / "ground_truth" / f"month={MONTH}" / f"{table}.parquet").to_pylist()
        got = read_published(data, table, MONTH).to_pylist()
        assert canon(got) == canon(want) and want, table
