"""Issue 4's exactness test: a small generated archive, through ingest and the compare job
on each engine, agrees exactly with the generator's ground truth (computed while writing
the files), and the second month's transitions equal the reference's."""
from __future__ import annotations

import json
from dataclasses import replace

import pyarrow.parquet as pq
import pytest

from bgp_congruency.cli.main import main as cli
from bgp_congruency.congruency import reference
from bgp_congruency.pipeline import job
from bgp_congruency.synth.generate import generate
from tests.support.month import assert_same_as_reference, canon, published

MONTHS = ("2026-07", "2026-08")


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
@pytest.mark.slow
def test_generated_archive_through_ingest_and_compare_equals_ground_truth(engine, request, config, tmp_path):
    """Two generated months ingested and compared equal the generator's truth, and every
    table the pure-Python reference's. Over 60 s on Spark: its two compares."""
    spark = request.getfixturevalue("spark") if engine == "spark" else None
    archive, data = tmp_path / "archive", tmp_path / "data"
    summary = generate(archive, seed=11, ases=90, vps=8, months=MONTHS, snapshots_per_month=2,
                       min_coverage=0.5)
    collectors = ",".join(c["name"] for c in json.loads((archive / "SYNTH.json").read_text())["collectors"])
    ingested = 0
    for month in MONTHS:
        assert cli(["ingest", "--month", month, "--days", "1-2", "--collectors", collectors,
                    "--archive-root", str(archive), "--data-dir", str(data)]) == 0
        ingested += sum(r["entries_v4"] + r["entries_v6"]
                        for r in pq.read_table(data / "manifest" / f"month={month}").to_pylist())
    assert ingested == summary["entries"]

    cfg = replace(config.with_overrides(data_dir=data, engine=engine), method=replace(config.method, min_coverage=0.5))
    for month, res in zip(MONTHS, job.compare_months(cfg, list(MONTHS), spark=spark)):
        assert res.error is None, res.error
        for table in ("pairs", "vps", "month_summary", "cleaning_stats"):
            truth = pq.read_table(archive / "ground_truth" / f"month={month}" / f"{table}.parquet").to_pylist()
            assert canon(published(data, table, month)) == canon(truth), (month, table)
        assert res.summary["pairs"] > 50 and 0 < res.summary["noncongruent_fraction"] < 1
        # every table of the compare, paths and divergence too, as the pure-Python reference
        # computes it from each dump decoded again (two snapshots a collector, with churn)
        assert_same_as_reference(data, month, cfg.method)

    # Across months: 2026-07 has no month before it; 2026-08's transitions equal the reference's.
    assert pq.read_table(data / "transitions" / "month=2026-07").num_rows == 0
    prev = {t: published(data, t, "2026-07") for t in ("pairs", "vps", "paths")}
    want = reference.transitions("2026-08", published(data, "pairs", "2026-08"), **{f"prev_{k}": v for k, v in prev.items()})
    got = published(data, "transitions", "2026-08")
    assert canon(got) == canon(want)
    kinds = {r["kind"] for r in want}
    assert len(want) > 0 and kinds <= {"existing_pair", "new_ipv6_destination", "new_pair"}, kinds
