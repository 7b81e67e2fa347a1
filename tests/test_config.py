"""The one configuration object: defaults < TOML file < flags; docs/config.example.toml is valid."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from bgp_congruency.common.config import Config, ConfigError, load
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
    cfg = load(p)
    assert cfg.collectors == ("route-views2", "route-views6", "rrc00", "rrc01")
    assert cfg.archive_root == "https://mirror.example.net/bgp"
    assert cfg.archive_roots == {"ris": "https://ris-mirror.example.net"}
    assert cfg.disk_budget == "400GB" and cfg.spark_conf == {"spark.driver.memory": "8g"}
    assert cfg.method.reserved_asns[2] == (64496, 131071)
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
