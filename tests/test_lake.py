"""The published tables through the DuckLake catalog (lake/), and the named queries, on real
files: a synthetic multi-month archive through the real ingest, its tables computed by the
pure-Python reference and published as the job publishes them; numbers checked against the
Parquet read back with pyarrow, and the tables opened by the plain `duckdb` client
(`congruency sql`) and from Python (`lake.connect`)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from bgp_congruency import lake
from bgp_congruency.cli.main import main as cli
from bgp_congruency.common import layout, routes
from bgp_congruency.common.config import Config
from bgp_congruency.common.table_docs import DOCS
from bgp_congruency.common.tables import sql_type
from bgp_congruency.lake import published
from tests.support.cli import BOUND_S, congruency
from tests.support.computed import writable
from tests.support.data import ARCHIVE
from tests.support.month import copy_data_dir, publish_rows, read_published
from tests.support.warehouse import MONTHS, published_multi_month


@pytest.fixture(scope="session")
def multi_month(tmp_path_factory) -> Path:
    return published_multi_month(tmp_path_factory)


# ---------------------------------------------------------------------------------- helpers
def _cli(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _json(capsys, data: Path, *argv) -> list[dict]:
    rc, out, err = _cli(capsys, "query", *argv, "--format", "json", "--data-dir", str(data))
    assert rc == 0, err
    return json.loads(out)


def _read(data: Path, table: str, month: str) -> list[dict]:
    return published.read(data, table, month).to_pylist()


def _one_line_error(err: str, *words: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for w in words:
        assert w in lines[0], (w, lines[0])


def _copy(data: Path, tmp: Path) -> Path:
    """A private copy of the shared data dir (its catalog relocated, as a user's copy is)."""
    return copy_data_dir(data, tmp / "data")


@pytest.fixture(scope="module")
def wh(multi_month) -> Path:
    return multi_month


# ---------------------------------------------------------------------------------- the schema doc
def test_schema_doc_is_generated_from_tables():
    from bgp_congruency.reports import schema_doc

    assert schema_doc.DOC_PATH.read_text() == schema_doc.render(), "run python -m bgp_congruency.reports.schema_doc"
    text = schema_doc.render()
    for name, doc in DOCS.items():
        assert f"## {name}" in text
        for col, c in doc.columns.items():
            assert f"| `{col}` |" in text and c.meaning.replace("|", "\\|") in text


# ---------------------------------------------------------------------------------- the warehouse
@pytest.mark.slow
def test_views_equal_the_parquet(wh, capsys):
    from bgp_congruency.lake import attach, published

    con = lake.connect(wh)
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    # Every table the catalog holds (those no month published yet are empty), and ingest's four.
    assert views == {"manifest", "routes", "route_snapshots", "rib_entries"} | set(attach.tables())
    for name in views:
        doc = DOCS[name]
        described = con.execute(f"DESCRIBE {name}").fetchall()
        want = [("month", "VARCHAR")] + [(f.name, sql_type(f.type, "duckdb")) for f in doc.schema if f.name != "month"]
        want += [("catalog_snapshot", "BIGINT")] if name == "provenance" else []
        assert [(r[0], r[1]) for r in described] == want, name
        comments = dict(con.execute("SELECT column_name, comment FROM duckdb_columns() WHERE table_name = ?",
                                    [name]).fetchall())
        assert all(comments[c] and comments[c].startswith(doc.columns[c].meaning) for c in doc.columns), name
        per_month = dict(con.execute(f"SELECT month, count(*) FROM {name} GROUP BY month").fetchall())
        for m in MONTHS:
            if name == "manifest":
                n = ds.dataset(wh / name / f"month={m}", format="parquet", partitioning="hive").count_rows()
            elif name == "routes":
                n = ds.dataset(list((wh / "routes" / f"month={m}").rglob("part-*.parquet"))).count_rows()
            elif name == "route_snapshots":
                n = sum(len(routes.snapshots(g)) for g in routes.month_generations(wh, m).values())
            elif name == "rib_entries":
                continue  # below: the manifest's counts, and the routes' bits
            else:
                n = published.read(wh, name, m).num_rows
            assert per_month.get(m, 0) == n, (name, m)
    # The manifest's decoded counts equal the rib_entries view per month and family, and the bits of the routes.
    got = con.execute("SELECT month, afi, count(*) FROM rib_entries GROUP BY ALL ORDER BY ALL").fetchall()
    bits = con.execute(f"SELECT month, afi, sum({routes.ENTRIES_SQL}) FROM routes GROUP BY ALL ORDER BY ALL").fetchall()
    assert got == bits
    want = []
    for m in MONTHS:
        rows = pq.read_table(wh / "manifest" / f"month={m}").to_pylist()
        want += [(m, 4, sum(r["entries_v4"] for r in rows)), (m, 6, sum(r["entries_v6"] for r in rows))]
    assert got == want
    con.close()


@pytest.mark.slow
def test_duckdb_cli_and_python_read_only_open_it_from_anywhere(wh, tmp_path, capsys):
    """`congruency sql --print` gives the lines a plain duckdb client needs (LOAD, ATTACH, the
    views); the client and lake.connect() answer alike from any working directory, read-only."""
    exe = Path(sys.executable).with_name("duckdb")
    assert exe.is_file(), "the duckdb-cli package installs the duckdb client"
    sql = "SELECT month, sum(noncongruent_pairs)::BIGINT AS nc, count(*) AS vps FROM vps GROUP BY month ORDER BY month"
    want = []
    for m in MONTHS:
        rows = _read(wh, "vps", m)
        want.append({"month": m, "nc": sum(r["noncongruent_pairs"] for r in rows), "vps": len(rows)})
    rc, lines, err = _cli(capsys, "sql", "--print", "--data-dir", str(wh))
    assert rc == 0, err
    assert [ln.split()[0] for ln in lines.splitlines()[:3]] == ["LOAD", "LOAD", "ATTACH"] and "READ_ONLY" in lines
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True).stdout
    r = subprocess.run([str(exe), "-json", "-cmd", lines, "-c", sql], capture_output=True, text=True, cwd=tmp_path,
                       timeout=120)
    assert r.returncode == 0, (version, r.stderr)
    assert json.loads(r.stdout) == want, version
    # `congruency sql` itself: SQL on standard input, the same answer
    r = subprocess.run([sys.executable, "-m", "bgp_congruency.cli.main", "sql", "--data-dir", str(wh)],
                       input=f".mode json\n{sql};\n", capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout) == want, r.stderr
    con = lake.connect(wh)
    os.chdir(tmp_path)  # absolute paths: another working directory sees the same
    try:
        assert [dict(zip(("month", "nc", "vps"), row)) for row in con.execute(sql).fetchall()] == want
        with pytest.raises(duckdb.Error, match="read-only|read only"):
            con.execute("CREATE TABLE lake.w AS SELECT 1")
        # the catalog's extensions were loaded unchecked (their files checked once per process):
        # the analyst's connection then loads an extension of its own only signed
        assert con.execute("SELECT current_setting('allow_unsigned_extensions')").fetchone() == (False,)
        with pytest.raises(duckdb.Error, match="allow_unsigned_extensions"):
            con.execute("SET allow_unsigned_extensions = true")
    finally:
        os.chdir(Path(__file__).parents[1])
        con.close()


@pytest.mark.slow
def test_staged_and_unfinished_files_are_invisible(multi_month, tmp_path, capsys):
    """What is being written, staged, or moved into place but not committed is not read; a
    commit is seen by a connection held open, at its next query."""
    data = _copy(multi_month, tmp_path)
    count = "SELECT count(*) FROM pairs"
    con = lake.connect(data)
    before = con.execute(count).fetchall()[0][0]
    [one] = published.files(data, ["pairs"], "2026-03")["pairs"]
    one = Path(one)
    shutil.copy(one, one.with_name(".part-1.parquet.tmp"))  # being written (ingest's and the job's temp names)
    shutil.copy(one, one.with_name("part-2.parquet"))  # beside a published file: never registered
    staged = data / "_staging" / "2026-07-abcd" / "pairs"
    staged.mkdir(parents=True)
    shutil.copy(one, staged / "part-0.parquet")  # staged, not published
    moved = data / "pairs" / "month=2026-07" / "2026-07-abcd"
    moved.mkdir(parents=True)
    shutil.copy(one, moved / "part-0.parquet")  # moved into place by a publish killed before its commit
    entries = con.execute("SELECT count(*) FROM rib_entries").fetchall()[0][0]
    [gen] = (data / "routes" / "month=2026-03").glob("collector=rrc00/gen-*")
    shutil.copytree(gen, gen.parent / f".gen-0123abcd.{os.getpid()}.tmp")  # a merge in flight: the next generation
    (data / "_staging" / "ingest-2026-07" / "collector=rrc00").mkdir(parents=True)
    shutil.copy(next(gen.glob("part-*.parquet")),
                data / "_staging" / "ingest-2026-07" / "collector=rrc00" / "x.parquet")  # decoded, not merged
    assert con.execute(count).fetchall()[0][0] == before
    assert con.execute("SELECT count(*) FROM rib_entries").fetchall()[0][0] == entries
    assert con.execute("SELECT count(*) FROM rib_entries WHERE month = '2026-07'").fetchall()[0][0] == 0
    assert con.execute("SELECT count(*) FROM pairs WHERE month = '2026-07'").fetchall()[0][0] == 0
    from bgp_congruency.lake import commit, upkeep

    assert upkeep.orphans(data, "2026-07") == [moved]
    # The commit: visible at once to the connection held open.
    commit.publish(data, "2026-07", {"pairs": str(moved)})
    assert con.execute("SELECT count(*) FROM pairs WHERE month = '2026-07'").fetchall()[0][0] == \
        pq.read_table(one).num_rows
    assert con.execute(count).fetchall()[0][0] == before + pq.read_table(one).num_rows
    con.close()


def _summary_rows(data: Path, month: str, pairs: int) -> dict[str, list[dict]]:
    """A month's month_summary and vps tables saying `pairs` pairs, and that many pairs rows."""
    pair = {"vp_group": "g", "vp_asn": 1, "dest_asn": 0, "v4_path": [1, 2], "v6_path": [1, 2], "congruent": True,
            "shared_asns": [], "shared_adjacent": None, "hops_v4": 1, "hops_v6": 1}
    return {"pairs": [dict(pair, dest_asn=d) for d in range(pairs)],
            "vps": [{"vp_group": "g", "vp_asn": 1, "pairs": pairs, "noncongruent_pairs": 0}],
            "month_summary": [{"pairs": pairs}]}


@pytest.mark.slow
def test_a_reader_pinned_to_a_snapshot_gets_the_same_bytes_after_three_republishes(multi_month, tmp_path, capsys):
    """`congruency query --as-of N` (N: provenance's catalog_snapshot, or `lake snapshots`)
    answers byte for byte as before three re-publishes of the month; without it, the new."""
    from bgp_congruency.lake import attach

    data = _copy(multi_month, tmp_path)
    D = ("--data-dir", str(data))
    with attach.opened(data) as con:
        pinned = attach.current(con)
    q = ("query", "--format", "csv", "--sql",
         "SELECT p.month, count(*) AS pairs, any_value(s.pairs) AS summary FROM pairs p JOIN month_summary s "
         "USING (month) WHERE month = '2026-03' GROUP BY ALL")
    rc, first, err = _cli(capsys, *q, *D)
    assert rc == 0, err
    for n in (3, 4, 5):
        publish_rows(data, "2026-03", _summary_rows(data, "2026-03", n))
    for _ in range(2):
        rc, again, err = _cli(capsys, *q, "--as-of", str(pinned), *D)
        assert rc == 0 and again == first, err
    rc, now, _ = _cli(capsys, *q, *D)
    assert now.splitlines() == ['"month","pairs","summary"', '"2026-03",5,5']
    con = lake.connect(data, snapshot=pinned)  # the same from Python
    assert con.execute("SELECT count(*) FROM pairs WHERE month = '2026-03'").fetchone()[0] == \
        int(first.splitlines()[1].split(",")[1])
    con.close()
    rc, _, err = _cli(capsys, *q, "--as-of", "999999", *D)  # issue 46: one line, exit 2, the snapshots kept
    assert rc == 2 and len(err.splitlines()) == 1 and "999999" in err and "snapshots" in err, err


@pytest.mark.slow
def test_migrate_registers_a_data_dir_published_before_the_catalog_in_place(multi_month, tmp_path, capsys):
    """A data dir in the layout before the catalog (files right in <table>/month=M/): readers
    say what to run; `congruency lake migrate` registers every month without copying a file."""
    old = tmp_path / "old"
    for t in ("routes", "manifest"):
        shutil.copytree(multi_month / t, old / t)
    want = {}
    for m in MONTHS[:2]:
        for t in ("pairs", "vps", "month_summary"):
            d = old / t / f"month={m}"
            d.mkdir(parents=True)
            shutil.copy(published.files(multi_month, [t], m)[t][0], d / "part-0.parquet")
        want[m] = _read(multi_month, "pairs", m)
    before = {p: p.stat().st_ino for p in old.rglob("*.parquet")}
    rc, _, err = _cli(capsys, "query", "trend", "--data-dir", str(old))
    assert rc == 1
    _one_line_error(err, "before the catalog", "congruency lake migrate")
    rc, out, err = _cli(capsys, "lake", "migrate", "--json", "--data-dir", str(old))
    assert rc == 0, err
    assert json.loads(out)["migrated"] == {m: ["vps", "pairs", "month_summary"] for m in MONTHS[:2]}
    for m in MONTHS[:2]:
        assert _read(old, "pairs", m) == want[m]
    assert {p: p.stat().st_ino for p in old.rglob("*.parquet") if p in before} == before  # in place
    assert _cli(capsys, "lake", "migrate", "--json", "--data-dir", str(old))[1].strip() == '{\n "migrated": {}\n}'


# ---------------------------------------------------------------------------------- named queries
@pytest.mark.slow
def test_named_queries_against_the_parquet(wh, capsys):
    m, prev = "2026-03", "2026-02"
    vps = [r for r in _read(wh, "vps", m) if r["pairs"] > 0]
    got = _json(capsys, wh, "vp_congruency", "--month", m)
    assert sorted((r["vp_group"], r["vp_asn"], r["pairs"], r["noncongruent_pairs"]) for r in got) == \
        sorted((r["vp_group"], r["vp_asn"], r["pairs"], r["noncongruent_pairs"]) for r in vps)

    # The trend, computed by DuckDB from vps, equals the reference's month_summary.
    trend = _json(capsys, wh, "trend")
    assert [r["month"] for r in trend] == list(MONTHS)
    for r in trend:
        s = _read(wh, "month_summary", r["month"])[0]
        for a, b in (("vp_min", "min"), ("vp_q1", "q1"), ("vp_median", "median"), ("vp_q3", "q3"), ("vp_max", "max")):
            assert r[a] == pytest.approx(s[f"vp_noncongruent_{b}"], rel=1e-12), (r["month"], a)
        assert (r["pairs"], r["vps_with_pairs"]) == (s["pairs"], s["vps_with_pairs"])

    pairs = _read(wh, "pairs", m)
    shared = Counter()
    adjacent = Counter()
    for p in pairs:
        if p["congruent"]:
            continue
        for a in p["shared_asns"]:
            shared[a] += 1
            v4, v6 = p["v4_path"], p["v6_path"]
            adjacent[a] += v4.index(a) in (1, len(v4) - 2) and v6.index(a) in (1, len(v6) - 2)
    got = _json(capsys, wh, "shared_ases", "--month", m, "--param", "limit=5")
    want = sorted(shared, key=lambda a: (-shared[a], a))[:5]
    assert [(r["asn"], r["pairs"], r["adjacent_pairs"]) for r in got] == [(a, shared[a], adjacent[a]) for a in want]

    before = {(r["vp_group"], r["vp_asn"], r["dest_asn"]): r["congruent"] for r in _read(wh, "pairs", prev)}
    flips = sorted((r["vp_group"], r["vp_asn"], r["dest_asn"], r["congruent"]) for r in pairs
                   if (k := (r["vp_group"], r["vp_asn"], r["dest_asn"])) in before and before[k] != r["congruent"])
    got = _json(capsys, wh, "changed_class", "--month", m)
    assert flips and [(r["vp_group"], r["vp_asn"], r["dest_asn"], r["now"] == "congruent") for r in got] == flips

    got = {r["metric"]: r for r in _json(capsys, wh, "compare_months", "--month", m, "--param", f"other={prev}")}
    s, o = _read(wh, "month_summary", m)[0], _read(wh, "month_summary", prev)[0]
    assert set(got) == set(s) - {"month"}
    for k in got:
        assert (got[k]["this_month"], got[k]["other_month"]) == (pytest.approx(s[k]), pytest.approx(o[k])), k

    vp = max(vps, key=lambda r: r["noncongruent_pairs"])["vp_asn"]
    got = _json(capsys, wh, "selector_input", "--month", m, "--vp", str(vp))
    want = sorted((p["vp_group"], p["dest_asn"]) for p in pairs
                  if p["vp_asn"] == vp and not p["congruent"] and not p["shared_asns"])
    assert want and [(r["vp_group"], r["dest_asn"]) for r in got] == want


@pytest.mark.slow
def test_query_list_formats_and_own_sql(wh, capsys, tmp_path):
    from bgp_congruency.reports.query import named

    rc, out, _ = _cli(capsys, "query", "--list")
    assert rc == 0 and len(out.splitlines()) == len(named()) >= 6
    assert all(line.split()[0] in named() for line in out.splitlines())
    n = sum(read_published(wh, "pairs", m).num_rows for m in MONTHS)
    rc, out, _ = _cli(capsys, "query", "--sql", "SELECT count(*) AS n FROM pairs", "--format", "csv", "--data-dir", str(wh))
    assert rc == 0 and out.splitlines() == ['"n"', str(n)]
    rc, out, _ = _cli(capsys, "query", "vp_congruency", "--month", "2026-01", "--data-dir", str(wh))
    assert rc == 0 and out.startswith("+") and "| vp_group" in out
    assert out.rstrip().endswith(f"({sum(1 for r in _read(wh, 'vps', '2026-01') if r['pairs'] > 0)} rows)")
    dest = tmp_path / "sel.parquet"
    rc, _, err = _cli(capsys, "query", "selector_input", "--month", "2026-01", "--vp",
                      str(_read(wh, "vps", "2026-01")[0]["vp_asn"]), "--format", "parquet", "--out", str(dest),
                      "--data-dir", str(wh))
    assert rc == 0, err
    assert pq.read_table(dest).column_names[:3] == ["vp_group", "vp_asn", "dest_asn"]
    assert [p.name for p in tmp_path.iterdir()] == ["sel.parquet"]


# ---------------------------------------------------------------------------------- bad input
@pytest.mark.slow
def test_bad_input_is_one_line_and_leaves_files_intact(multi_month, tmp_path, capsys):
    data = _copy(multi_month, tmp_path)
    D = ("--data-dir", str(data))
    assert cli(["report", "--month", "2026-02", *D]) == 0
    cat, report = data / "catalog.sqlite", data / "reports" / "month=2026-02" / "report.html"
    keep = {p: p.read_bytes() for p in (cat, report)}

    cases = [  # every refusal and bad statement exits 2 (issue 58: a refused COPY exited 1)
        (("query", "--sql", "CREATE TABLE t AS SELECT 1", *D), 2, ("CREATE", "read-only")),
        (("query", "--sql", f"COPY (SELECT 1) TO '{tmp_path}/x.csv'", *D), 2, ("COPY",)),
        (("query", "--sql", f"ATTACH '{tmp_path}/y.duckdb' AS y", *D), 2, ("ATTACH",)),
        (("query", "--sql", "SELECT 1; DROP VIEW pairs", *D), 2, ("DROP",)),
        (("query", "--sql", f"EXPLAIN ANALYZE COPY (SELECT 42 AS x) TO '{tmp_path}/x.csv'", *D), 2, ("EXPLAIN", "COPY")),
        (("query", "--sql", f"explain (analyze) COPY (SELECT 42 AS x) TO '{tmp_path}/x.csv'", *D), 2, ("EXPLAIN",)),
        (("query", "--sql", "INSTALL httpfs", *D), 2, ("refused an INSTALL statement",)),
        # The connection itself is locked down: files outside the tables' folders are not readable.
        (("query", "--sql", "SELECT * FROM read_csv('/etc/passwd')", *D), 2, ("/etc/passwd",)),
        (("query", "--sql", "SELEC 1", *D), 2, ("syntax",)),
        (("query", "no_such_query", *D), 2, ("no_such_query", "--list")),
        (("query", "vp_congruency", "--month", "2026-02", "--vp", "1", *D), 2, ("vp",)),
        (("query", "vp_congruency", "--param", "nope=1", "--month", "2026-02", *D), 2, ("nope",)),
        (("query", "vp_congruency", "--month", "2026-13", *D), 2, ("2026-13",)),
        (("query", "vp_congruency", *D), 2, ("--month",)),
        (("query", "shared_ases", "--month", "2026-02", "--param", "limit=x", *D), 2, ("limit",)),
        (("query", "vp_congruency", "--month", "2025-12", *D), 2, ("2025-12", "no published results")),
        (("report", "--month", "2025-12", *D), 2, ("2025-12", "no published results")),
        (("report", "--month", "2025-1", *D), 2, ("--month",)),
    ]
    for argv, code, words in cases:
        rc, _, err = _cli(capsys, *argv)
        assert rc == code, (argv, err)
        _one_line_error(err, *words)
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "y.duckdb").exists()
    # A month with no results: one definition (lake/published.py), one message, exit 2 everywhere.
    said = {_cli(capsys, *argv, "--month", "2025-12", *D)[::2] for argv in (
        ("query", "vp_congruency"), ("report",), ("advise", "--from", "1", "--to", "2"))}
    assert len(said) == 1 and next(iter(said))[0] == 2, said
    rc, out, _ = _cli(capsys, "query", "--sql", "EXPLAIN ANALYZE SELECT count(*) FROM pairs", *D)
    assert rc == 0 and "analyzed" in out.lower()
    # Even a statement that got past the check could not write or change the settings.
    from bgp_congruency.reports import warehouse
    con = warehouse.connect(Config(data_dir=str(data)))
    from bgp_congruency.common.duck import extension_file

    for sql in (f"COPY (SELECT 1) TO '{tmp_path}/x.csv'", f"ATTACH '{tmp_path}/y.duckdb'", "SET enable_external_access = true",
                f"LOAD '{extension_file('postgres_scanner')}'"):  # its connection admits unsigned extensions
        with pytest.raises(duckdb.Error):
            con.execute(sql)
    con.close()
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "y.duckdb").exists()

    # A data dir with no published tables.
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv in (("report", "--trend"), ("query", "trend"), ("sql", "--print")):
        rc, _, err = _cli(capsys, *argv, "--data-dir", str(empty))
        assert rc in (1, 2), (argv, err)
        _one_line_error(err, "no published tables")
    rc, _, err = _cli(capsys, "report", "--month", "2026-01", "--data-dir", str(empty))
    assert rc == 2
    _one_line_error(err, "2026-01", "no published results", "published months: none")
    assert list(empty.iterdir()) == []
    assert cat.read_bytes() == keep[cat]  # reading never wrote the catalog

    # A corrupt catalog file: one line naming it, kept as it is; the page already written stays.
    cat.write_bytes(b"not a catalog\n" * 100)
    corrupt = cat.read_bytes()
    for argv in (("query", "trend"), ("report", "--trend"), ("lake", "snapshots")):
        rc, _, err = _cli(capsys, *argv, *D)
        assert rc == 1, (argv, err)
        _one_line_error(err, str(cat))
    assert cat.read_bytes() == corrupt
    assert report.read_bytes() == keep[report]
    assert sorted(p.name for p in data.iterdir() if p.name.startswith(".")) == []


@pytest.mark.slow
def test_real_sample_ingested_month(ingested_2026, tmp_path, capsys):
    """The real 2026-07-30 pair, ingested but not compared: its entries are queryable (the
    rib_entries view over the routes equals every dump decoded again, every column, row for
    row), the compare-table queries and reports say the month has no results."""
    data = tmp_path / "data"
    for t in ("routes", "manifest"):  # a copy: other tests publish into the shared fixture
        shutil.copytree(ingested_2026 / t, data / t)
    from bgp_congruency.lake import views
    from tests.support.month import entry_rows

    D = ("--data-dir", str(data))
    con = lake.connect(data)  # no catalog yet: ingest's tables
    assert views.names(con) == {"manifest", "routes", "route_snapshots", "rib_entries"}
    assert con.execute("SELECT DISTINCT month FROM rib_entries").fetchall() == [("2026-07",)]
    con.close()
    got = _json(capsys, data, "--sql", "SELECT collector, afi, count(*) AS n, "
                "count(DISTINCT peer_asn) AS peers FROM rib_entries GROUP BY ALL ORDER BY ALL")
    import pyarrow as pa

    t = pa.Table.from_pylist([{k: r[k] for k in ("collector", "afi", "peer_asn")}
                              for r in entry_rows(data, "2026-07")])  # each dump decoded again
    want = []
    for (c, afi), n in sorted(Counter(zip(t["collector"].to_pylist(), t["afi"].to_pylist())).items()):
        peers = {p for cc, a, p in zip(t["collector"].to_pylist(), t["afi"].to_pylist(), t["peer_asn"].to_pylist())
                 if (cc, a) == (c, afi)}
        want.append({"collector": c, "afi": afi, "n": n, "peers": len(peers)})
    assert got == want
    rows = pq.read_table(data / "manifest" / "month=2026-07").to_pylist()
    assert sum(r["n"] for r in got if r["afi"] == 4) == sum(r["entries_v4"] for r in rows)
    # The rib_entries view, every column, equals each dump decoded again, row for row (a
    # multiset: an entry twice in a dump is twice in both).
    from bgp_congruency.common import routes
    from bgp_congruency.common.tables import RIB_ENTRIES
    from tests.support.decode import decode_all

    decoded = pa.concat_tables(
        decode_all(Path(sn.source_file), "native", collector=c, snapshot_time=sn.time, project=sn.project,
                   source_file=sn.source_file)
        for c, gen in sorted(routes.month_generations(data, "2026-07").items()) for sn in routes.snapshots(gen))
    cols = ", ".join(RIB_ENTRIES.names)
    con = lake.connect(data)
    view = con.execute(f"SELECT {cols} FROM rib_entries").to_arrow_table()
    con.close()
    check = duckdb.connect()
    check.register("decoded", decoded)
    check.register("view", view)
    assert view.num_rows == decoded.num_rows == sum(r["n"] for r in got)
    for a, b in (("view", "decoded"), ("decoded", "view")):
        assert check.execute(f"SELECT count(*) FROM (SELECT {cols} FROM {a} EXCEPT ALL SELECT {cols} FROM {b})"
                             ).fetchone() == (0,), a
    rc, _, err = _cli(capsys, "query", "vp_congruency", "--month", "2026-07", *D)
    assert rc == 2
    _one_line_error(err, "2026-07", "no published results")
    rc, _, err = _cli(capsys, "report", "--month", "2026-07", *D)
    assert rc == 2
    _one_line_error(err, "2026-07", "no published results")


@pytest.mark.slow
def test_a_catalog_made_before_a_column_was_documented(tmp_path, monkeypatch):
    """A catalog whose selector_eval was created before its last two columns were documented
    (as every catalog published before they were): readers see every documented column at
    once (NULL in the old rows); the next publish adds the columns in a commit of its own
    (DuckLake's schema evolution: no file rewritten), and the old rows stay as they were."""
    import dataclasses

    import pyarrow as pa

    from bgp_congruency.common.tables import SELECTOR_EVAL
    from bgp_congruency.lake import attach, commit, published

    data = tmp_path / "data"
    data.mkdir()
    old = pa.schema(list(SELECTOR_EVAL)[:-2])
    a, b = SELECTOR_EVAL.names[-2:]
    row = {"vp_group": "route-views", "vp_asn": 10, "dest_asn": 100, "rule": "through", "proxies": 1,
           "observed_class": "disjoint", "predicted_class": "disjoint", "correct": True, "confidence": 0.5,
           "observed_mode": "aggregate", "predicted_mode": "aggregate", "v4_exact": True, "v6_exact": True,
           "v4_hop_distance": 0, "v6_hop_distance": 0, "kind": "vp", "calibrated_confidence": 0.75, "reveal": "none"}
    monkeypatch.setitem(DOCS, "selector_eval", dataclasses.replace(DOCS["selector_eval"], schema=old))
    published.write_rows(data, "selector_eval", "2026-06", [{**row, "month": "2026-06"}], old)
    monkeypatch.undo()
    with attach.opened(data) as con:
        assert commit.attached_columns(con)["selector_eval"] == set(old.names)
        files = published.table_files(con, "selector_eval", "2026-06")
    q = f"SELECT month, vp_asn, {a}, {b} FROM selector_eval ORDER BY month"
    con = lake.connect(data)
    try:  # before any publish: the documented columns, NULL
        assert con.execute(q).fetchall() == [("2026-06", 10, None, None)]
    finally:
        con.close()
    published.write_rows(data, "selector_eval", "2026-07", [{**row, "month": "2026-07"}], SELECTOR_EVAL)
    con = lake.connect(data)
    try:
        assert con.execute(q).fetchall() == [("2026-06", 10, None, None), ("2026-07", 10, row[a], row[b])]
        messages = [r[0] for r in con.execute("SELECT commit_message FROM lake.snapshots() ORDER BY snapshot_id")
                    .fetchall()]
    finally:
        con.close()
    assert f"add column selector_eval.{a}; add column selector_eval.{b}" in messages, messages
    with attach.opened(data) as con:
        assert commit.attached_columns(con)["selector_eval"] == set(SELECTOR_EVAL.names)
        assert published.table_files(con, "selector_eval", "2026-06") == files and all(Path(f).is_file() for f in files)
    assert pq.read_schema(files[0]).names == [n for n in old.names if n != "month"]  # the old file, not rewritten


def test_rows_streamed_into_a_publish_and_a_stream_that_fails_midway(tmp_path):
    """write_rows takes a query's result as a RecordBatchReader (evaluate's millions of rows),
    written a batch at a time; a stream that fails after its first batch leaves the month as it
    was and no publish folder behind."""
    import pyarrow as pa

    from bgp_congruency.common.tables import SELECTOR_EVAL

    data = tmp_path / "data"
    data.mkdir()
    row = {"month": "2026-07", "vp_group": "route-views", "vp_asn": 10, "dest_asn": 100, "rule": "through",
           "proxies": 1, "observed_class": "disjoint", "predicted_class": "disjoint", "correct": True,
           "confidence": 0.5, "observed_mode": "aggregate", "predicted_mode": "aggregate", "v4_exact": True,
           "v6_exact": True, "v4_hop_distance": 0, "v6_hop_distance": 0, "kind": "vp", "calibrated_confidence": 0.75,
           "reveal": "none"}
    # the query's types, not the table's (DuckDB gives BIGINT where selector_eval has INTEGER): cast per batch
    batch = pa.RecordBatch.from_pylist([row, {**row, "dest_asn": 200}]).cast(
        pa.schema([pa.field(f.name, pa.int64() if f.type == pa.int32() else f.type) for f in SELECTOR_EVAL]))

    def batches(fail: bool):
        yield batch
        yield batch
        if fail:
            raise ValueError("the query failed")

    published.write_rows(data, "selector_eval", "2026-07", pa.RecordBatchReader.from_batches(batch.schema, batches(False)),
                         SELECTOR_EVAL)
    before = published.read(data, "selector_eval", "2026-07")
    assert before.column("dest_asn").to_pylist() == [100, 200, 100, 200]
    assert before.schema.field("v4_hop_distance").type == pa.int32()
    folders = sorted(Path(layout.month_dir(data, "selector_eval", "2026-07")).iterdir())
    with pytest.raises(ValueError, match="the query failed"):
        published.write_rows(data, "selector_eval", "2026-07",
                             pa.RecordBatchReader.from_batches(batch.schema, batches(True)), SELECTOR_EVAL)
    assert published.read(data, "selector_eval", "2026-07").equals(before)
    assert sorted(Path(layout.month_dir(data, "selector_eval", "2026-07")).iterdir()) == folders


# --- `congruency query` streams its result --------------------------------------------------

def _peak_rss_mb(*args: str) -> tuple[int, subprocess.CompletedProcess]:
    """Peak RSS (MiB) of `congruency ARGS` alone, measured by a parent that runs nothing else."""
    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
            "stderr=subprocess.PIPE, text=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, "
            "r.returncode); sys.stderr.write(r.stderr)")
    r = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "bgp_congruency.cli.main", *args], capture_output=True,
                       text=True, timeout=BOUND_S)
    mb, rc = map(int, r.stdout.split())
    return mb, subprocess.CompletedProcess(args, rc, "", r.stderr)


@pytest.mark.slow
def test_query_streams_a_large_result(sample, tmp_path):
    """`select * from rib_entries` (843,626 rows) as csv: memory for a batch, not the result
    (before issue 30: 958 MiB peak here against 130 for `select 1`; streamed about 265)."""
    base, r = _peak_rss_mb("query", "--sql", "select 1", "--format", "csv", "--data-dir", str(sample.data))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "all.csv"
    peak, r = _peak_rss_mb("query", "--sql", "select * from rib_entries", "--format", "csv", "--out", str(out),
                           "--data-dir", str(sample.data))
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        assert sum(1 for _ in f) == 1 + 679_347 + 164_279  # bgpdump -m lines of the two RIBs
    assert peak - base < 350, (peak, base)


@pytest.mark.slow
def test_query_table_shows_a_bounded_number_of_rows(sample):
    r = congruency("query", "--sql", "select prefix, as_path from rib_entries", "--data-dir", str(sample.data))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1] == "(843,626 rows, the first 40 shown; --format csv or json gives them all)"
    assert len([x for x in lines if x.startswith("| ")]) == 1 + 40
    small = congruency("query", "--sql", "select 1 as a union all select 2", "--data-dir", str(sample.data))
    assert small.stdout.splitlines()[-1] == "(2 rows)"


@pytest.mark.parametrize("sql,message", [
    ("SELECT 1; SELECT 2", "--sql: 2 statements given; one --sql runs one statement (run each with its own --sql)"),
    ("SELEC 1", "--sql: Parser Error: syntax error at or near \"SELEC\""),
    ("SELECT * FROM nope", "--sql: Catalog Error: Table with name nope does not exist!"),
])
@pytest.mark.slow
def test_query_sql_errors_say_sql_alike(sample, sql, message):
    """A statement that cannot run is a bad argument, as every refusal (exit 2, issue 58)."""
    r = congruency("query", "--sql", sql, "--data-dir", str(sample.data))
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.startswith(f"error: {message}"), r.stderr
    assert len(r.stderr.splitlines()) == 1


def test_query_list_gives_whole_sentences():
    r = congruency("query", "--list")
    [line] = [x for x in r.stdout.splitlines() if x.startswith("divergence_ases ")]
    assert "over the month or for one VP: on how many pairs each is IPv4-only or IPv6-only, and for how many VPs." \
        in line


# --- what an analyst can trust (the real sample month) ----------------------------------------

def _run_sample(data, *more):
    """`congruency run` of the sample month in `data` (a copy of the session's), as the demo runs it."""
    return congruency("run", "--month", "2026-07", "--days", "30", "--times", "14:00", "--archive-root", str(ARCHIVE),
                      "--data-dir", str(data), "--min-coverage", "0", "--json", *more, timeout=600)


@pytest.mark.slow
def test_the_run_keeps_the_snapshots_the_config_says(sample, tmp_path):
    """`lake_keep_snapshots = 3`: each re-publish adds snapshots; the run's lake step expires
    all but three and deletes the files none of them needs (grace 0); the tables read the same."""
    import json

    from bgp_congruency.lake import attach, published

    data = writable(sample.data, tmp_path / "data")
    (tmp_path / "c.toml").write_text("lake_keep_snapshots = 3\nlake_vacuum_grace_s = 0\n")
    before = published.read(data, "pairs", "2026-07")
    for _ in range(2):
        r = _run_sample(data, "--force", "compare", "--config", str(tmp_path / "c.toml"))
        assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads(r.stdout)
    assert s["steps"]["lake"]["status"] == "done"
    with attach.opened(data) as con:
        kept = [r[0] for r in con.execute("SELECT snapshot_id FROM lake.snapshots()").fetchall()]
    assert len(kept) == 3
    needed = set()
    for k in kept:  # the files of the kept snapshots stay, those of the others are gone
        with attach.opened(data, snapshot=k) as con:
            needed |= set(published.table_files(con, "pairs", "2026-07"))
    assert {str(p) for p in (data / "pairs" / "month=2026-07").rglob("*.parquet")} == needed
    assert sorted(map(repr, published.read(data, "pairs", "2026-07").to_pylist())) == \
        sorted(map(repr, before.to_pylist()))


@pytest.mark.slow
def test_every_format_prints_the_manifest_and_tells_null_from_empty(sample, capsys):
    """The manifest's MAP column `skipped` in csv and table form (csv crashed on it), as the
    same JSON text in both; NULL and '' apart; a large double without an exponent."""
    import json

    from bgp_congruency.cli.main import main as cli

    sql = ("SELECT slot, skipped, NULL AS nothing, '' AS empty, 1234567.0::DOUBLE AS big FROM manifest "
           "ORDER BY slot")
    assert cli(["query", "--data-dir", str(sample.data), "--sql", sql, "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == '"slot","skipped","nothing","empty","big"'
    assert lines[1] == '"route-views2@20260730T1400","{}",,"",1234567'
    assert cli(["query", "--data-dir", str(sample.data), "--sql", sql]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[3] == "| route-views2@20260730T1400 | {}      | NULL    |       | 1234567 |"
    assert cli(["query", "--data-dir", str(sample.data), "--sql", sql, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["skipped"] == {}  # a JSON object in every format
    # one timestamp spelling (ISO 8601 UTC) in every format, nested ones included
    sql = ("SELECT dump_time, [dump_time] AS l, TIMESTAMP '2026-07-30 14:00:00.5' AS frac FROM manifest "
           "ORDER BY slot LIMIT 1")
    want = ["2026-07-30T14:00:00Z", '["2026-07-30T14:00:00Z"]', "2026-07-30T14:00:00.500000Z"]
    assert cli(["query", "--data-dir", str(sample.data), "--sql", sql, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == '"2026-07-30T14:00:00Z","[""2026-07-30T14:00:00Z""]",' \
                                                       '"2026-07-30T14:00:00.500000Z"'
    assert cli(["query", "--data-dir", str(sample.data), "--sql", sql]) == 0
    assert [c.strip() for c in capsys.readouterr().out.splitlines()[3].split("|")[1:-1]] == want
    assert cli(["query", "--data-dir", str(sample.data), "--sql", sql, "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)[0]
    assert [got["dump_time"], json.dumps(got["l"]), got["frac"]] == want


@pytest.mark.slow
def test_a_vp_the_month_does_not_have_is_said_not_an_empty_answer(sample, capsys):
    from bgp_congruency.cli.main import main as cli

    for name in ("selector_input", "divergence_ases"):
        assert cli(["query", name, "--data-dir", str(sample.data), "--month", "2026-07", "--vp", "99999"]) == 2
        out, err = capsys.readouterr()
        assert (out, err) == ("", "error: vp: AS99999 is not a vantage point in 2026-07 (congruency query "
                                  "vp_congruency --month 2026-07 lists them)\n")
    assert cli(["query", "selector_input", "--data-dir", str(sample.data), "--month", "2026-07", "--vp", "1403"]) == 0
    want = sum(1 for r in read_published(sample.data, "pairs", "2026-07").to_pylist()
               if r["vp_asn"] == 1403 and not r["congruent"] and not r["shared_asns"])
    assert want > 0 and capsys.readouterr().out.splitlines()[-1] == f"({want} rows)"


def _python_blocks(md: Path) -> list[str]:
    import re
    import textwrap

    return [textwrap.dedent(b) for b in re.findall(r"```python\n(.*?)```", md.read_text(), re.S)]


def _files(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else None
            for p in root.rglob("*")}


@pytest.mark.slow
def test_the_python_lines_of_readme_and_querying_run_as_written(sample, tmp_path):
    """Issue 58: README.md's and docs/querying.md's Python, as written, from a folder whose
    data/demo is the demo's month, in a plain install (they used `.df()`, which raised "'pandas' is
    required": pandas is not installed, README says why)."""
    root = Path(__file__).resolve().parents[1]
    writable(sample.data, tmp_path / "data" / "demo")
    blocks = _python_blocks(root / "README.md") + _python_blocks(root / "docs" / "querying.md")
    assert len(blocks) >= 2
    for block in blocks:
        r = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.strip(), (block, r.stderr[-2000:])
    assert "noncongruent_fraction" in subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path,
                                                     capture_output=True, text=True, timeout=120).stdout


@pytest.mark.slow
def test_lake_connect_writes_nothing_under_the_data_dir(sample, tmp_path):
    """Issue 58: a refused `CREATE TABLE lake.yy` left an empty yy/ in the data dir and `COPY ... TO`
    wrote anywhere: now every statement that would write under the data dir is refused in one
    line, and the analyst's own files and temporary tables still work."""
    data = writable(sample.data, tmp_path / "data")
    before = _files(data)
    con = lake.connect(data)
    refused = [
        "CREATE TABLE lake.yy AS SELECT 1 AS a",
        f"COPY (SELECT 1 AS a) TO '{data}/x.csv'",
        f"COPY (SELECT 1 AS a) TO '{data}/pairs/x.parquet' (FORMAT parquet)",
        f"EXPORT DATABASE '{data}/dump'",
        "INSERT INTO lake.pairs SELECT * FROM lake.pairs LIMIT 1",
        "DROP TABLE lake.vps",
    ]
    for sql in refused:
        with pytest.raises(duckdb.PermissionException) as e:
            con.execute(sql)
        msg = str(e.value)
        assert len(msg.splitlines()) == 1 and (str(data) in msg or "on lake" in msg), sql
    con.execute("USE lake")
    with pytest.raises(duckdb.PermissionException):
        con.execute("CREATE TABLE yy AS SELECT 1 AS a")
    con.execute("USE memory")
    con.execute("CREATE TEMP TABLE mine AS SELECT * FROM vps")
    con.execute(f"COPY (SELECT * FROM mine) TO '{tmp_path}/mine.csv'")
    assert con.sql("SELECT count(*) FROM mine").fetchone()[0] == len(con.sql("SELECT * FROM vps").fetchall()) > 0
    assert (tmp_path / "mine.csv").stat().st_size > 0
    con.close()
    assert _files(data) == before


def test_an_extension_s_signature_check_is_recorded_for_its_file():
    # A record that does not match the file (another size or mtime: a reinstall) makes the
    # next load check the signature again in a default-settings database, and record it anew.
    from bgp_congruency.common import duck as D

    f = D.extension_file("sqlite_scanner")
    st = os.stat(f)
    mark = Path(f + ".checked")
    mark.write_text("0 0\n")
    D._CHECKED.clear()
    con = duckdb.connect(config={"allow_unsigned_extensions": True})
    D.load_extension(con, "sqlite_scanner")
    assert mark.read_text() == f"{st.st_size} {st.st_mtime_ns}\n"
    assert con.execute("SELECT loaded FROM duckdb_extensions() WHERE extension_name = 'sqlite_scanner'").fetchone()[0]
    con.close()
