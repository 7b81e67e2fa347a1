"""The one configuration object: defaults < TOML file < flags; docs/config.example.toml is valid."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bgp_congruency.common.config import Config, ConfigError, load
from tests.support.cli import congruency
from tests.support.data import ROOT


def test_defaults_are_the_methods_data_set():
    cfg = load()
    assert cfg.collectors == ("route-views2", "route-views6")
    assert cfg.days == (1, 2, 3, 4, 5) and cfg.times == ("00:00",)
    assert cfg.backend == "native" and cfg.method.min_coverage == 0.9
    assert cfg.method.group_of("route-views6") == "route-views" and cfg.method.group_of("rrc00") == "rrc00"


def test_example_config_loads(tmp_path):
    """Used as it is, docs/config.example.toml is the defaults (no example host, no other
    decoder: issue 30.7); each commented `key = value` line is valid once uncommented."""
    block = (ROOT / "docs" / "config.example.toml").read_text()
    p = tmp_path / "c.toml"
    p.write_text(block)
    cfg = load(p)
    assert cfg == load()
    uncommented = re.sub(r"(?m)^# ((?:[a-z_]+|\"[a-z.]+\") = )", r"\1", block)
    # a key set twice (collectors) keeps its commented value: drop the active one
    uncommented = re.sub(r'(?m)^collectors = \["route-views2", "route-views6"\].*\n', "", uncommented)
    p.write_text(uncommented)
    (tmp_path / "RouteServerASNs.txt").write_text("# a route-server list, relative to the config file\n6777\n")
    cfg = load(p)
    assert cfg.collectors == ("route-views2", "route-views6", "rrc00", "rrc01")
    assert cfg.relationships.route_servers == {6695, 24115, 6777}
    assert cfg.archive_root == "https://mirror.example.net/bgp"
    assert cfg.archive_roots == {"ris": "https://ris-mirror.example.net"}
    assert cfg.disk_budget == "400GB" and cfg.spark_conf == {"spark.driver.memory": "8g"}
    assert cfg.method.reserved_asns[2] == (64496, 131071)
    assert cfg.catalog.startswith("postgresql://")
    assert (cfg.s3.endpoint, cfg.s3.region, cfg.s3.url_style) == ("https://objects.example.net", "eu-central-1", "path")
    # flags win over the file
    assert cfg.with_overrides(backend="native", days=None).backend == "native"
    assert cfg.with_overrides(days=None).days == (1, 2, 3, 4, 5)


def test_bad_files_name_the_file(tmp_path):
    with pytest.raises(ConfigError, match=r"nope.toml: config file not found"):
        load(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("days = [1,\n")
    with pytest.raises(ConfigError, match=r"bad.toml: not valid TOML"):
        load(bad)
    bad.write_text("[method]\nmin_coverag = 0.5\n")
    with pytest.raises(ConfigError, match=r"bad.toml"):
        load(bad)


def test_remote_data_dir_stays_a_url(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('data_dir = "hdfs://nn:8020/congruency"\n')
    assert load(p).data_dir == "hdfs://nn:8020/congruency"
    assert isinstance(Config().data_dir, Path)


def test_method_choices_out_of_their_set_are_one_line(tmp_path):
    from bgp_congruency.common.config import ConfigError, load

    f = tmp_path / "c.toml"
    f.write_text('[method]\nrepresentative = "most"\n')
    with pytest.raises(ConfigError, match=r"c\.toml: \[method\] representative: expected one of observations, "
                                          r"prefixes, snapshots, lowest, got 'most'$"):
        load(f)
    f.write_text('[method]\ncomparison = "any"\nsnapshots = "first"\n')
    m = load(f).method
    assert (m.comparison, m.snapshots, m.representative) == ("any", "first", "observations")


# --- 4. every config value checked when read; --days the same in every command ------------

BAD_CONFIG = [
    ("days = [0, 40]", "days: expected days of the month, 1 to 31, got [0, 40]"),
    ('times = ["25:00"]', 'times: expected UTC times "HH:MM" (00:00 to 23:59), got [\'25:00\']'),
    ("plan_download_mbit_s = 0", "plan_download_mbit_s: expected a number above 0, got 0"),
    ("data_dir = 5", "data_dir: expected a text, got 5"),
    ('collectors = ["route-views2", ""]', "collectors: expected a text, got ['route-views2', '']"),
    ("collectors = []", "collectors: expected a list of collector names or sets"),
    ("[method]\nmin_coverage = 2", "[method] min_coverage: expected a number from 0 to 1, got 2"),
    ("concurrency = 0", "concurrency: expected a whole number of at least 1, got 0"),
    ("retries = -1", "retries: expected a whole number of at least 0, got -1"),
    ('sensitivity = "yes"', "sensitivity: expected true or false, got 'yes'"),
    ("[method]\nreserved_asns = [[10, 5]]", "[method] reserved_asns: expected [low, high] ASN ranges"),
    ('backend = "nope"', 'backend: expected one of "native", "bgpdump", "pybgpstream", got \'nope\''),
    ("duckdb_threads = 0", "duckdb_threads: expected a whole number of at least 1, got 0"),
    ('archive_roots = { ris = 5 }', "archive_roots: expected a table of project roots"),
    ('[source]\nvia4 = ["3356"]', "[source] asn: required with via4/via6 (the source host's AS)"),
    ('[source]\nasn = 64500\nvia4 = ["3356:transit"]',
     '[source] via4: expected neighbours like ["3356", "174:peer"] (AS[:provider|peer|customer]), got '),
    ("[relationships]\nclique_candidates = 0", "[relationships] clique_candidates: expected a whole number from 2 to 40"),
    ('[relationships]\nroute_servers_file = "nope.txt"', "[relationships] route_servers_file: "),
]


def test_an_unknown_archive_project_is_one_line(tmp_path):
    (tmp_path / "c.toml").write_text('archive_roots = { routeview = "https://mirror.example.net" }\n')
    r = congruency("plan", "--month", "2026-07", "--config", str(tmp_path / "c.toml"), "--data-dir",
                   str(tmp_path / "d"))
    assert (r.returncode, r.stderr) == (2, "error: archive_roots: unknown project 'routeview' "
                                           "(the catalogue's: ris, routeviews)\n")


@pytest.mark.parametrize("text,message", BAD_CONFIG, ids=[t.split("\n")[-1] for t, _ in BAD_CONFIG])
@pytest.mark.parametrize("command", [("status", "--month", "2026-07"), ("plan", "--month", "2026-07")])
def test_a_bad_config_value_is_one_line_naming_file_and_key(tmp_path, text, message, command):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text + "\n")
    r = congruency(*command, "--config", str(cfg), "--data-dir", str(tmp_path / "d"))
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.startswith(f"error: {cfg}: {message}"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_config_values_in_a_friendly_spelling_are_read_as_meant(tmp_path):
    """A text names one collector (or several with commas, as on the command line): before
    issue 30 `collectors = "route-views2"` was read letter by letter ("unknown collector 'r'")."""
    from bgp_congruency.common.config import load

    for text, want in (('collectors = "route-views2"', ("route-views2",)),
                       ('collectors = "route-views2, rrc00"', ("route-views2", "rrc00")),
                       ('collectors = "all"', ("all",))):
        (tmp_path / "c.toml").write_text(text + "\ntolerance_minutes = 90.0\n")
        cfg = load(tmp_path / "c.toml")
        assert cfg.collectors == want and cfg.tolerance_minutes == 90 and isinstance(cfg.tolerance_minutes, int)
    (tmp_path / "c.toml").write_text('collectors = "route-views2"\n')
    r = congruency("plan", "--month", "2026-07", "--config", str(tmp_path / "c.toml"), "--data-dir",
                   str(tmp_path / "d"), "--json")
    assert r.returncode == 0, r.stderr
    assert sorted(json.loads(r.stdout)["months"][0]["collectors"]) == ["route-views2"]


@pytest.mark.parametrize("command", [
    ("plan", "--month", "2026-02", "--days", "30"),
    ("run", "--months", "2026-01..2026-03", "--days", "31"),
    ("ingest", "--month", "2026-02", "--days", "29"),
])
def test_a_day_the_month_does_not_have_is_refused_alike(tmp_path, command):
    r = congruency(*command, "--data-dir", str(tmp_path / "d"))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    day = command[-1]
    assert r.stderr == (f"error: --days: 2026-02 has 28 days, not {day} "
                        "(choose days every month of the range has, e.g. 1-28)\n")


@pytest.mark.parametrize("command", [("run", "--month", "2099-01"), ("ingest", "--month", "2099-01"),
                                     ("plan", "--months", "2099-01..2099-03")])
def test_a_future_month_is_refused(tmp_path, command):
    r = congruency(*command, "--data-dir", str(tmp_path / "d"))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {command[1]}: 2099-01 is in the future (this is "), r.stderr
    assert not (tmp_path / "d").exists()
