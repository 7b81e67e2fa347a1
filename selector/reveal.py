"""The held-out evaluation with the source's evidence revealed (issue 47), set-based.

Every VP AS of the month with pairs is held out in turn (all of its VPs hidden), as
selector/evaluate.py does, but the questions are answered all at once in SQL and only the
answers reach Python: the month's paths are read once into a table of routes (every suffix of
every path: from which AS, to which destination, shown by which VP), and each question joins
the routes it may use, a destination partition at a time (memory follows the partition,
bounded by duckdb_memory_limit). The rules are selector/rules.py's 8-10 and the fallback to
rule 6; selector/advice.evidence_answer is their reference, one question at a time
(tests/test_reveal.py holds the two equal).

Revealed, per held-out VP AS v and pair (v, destination d):
- `first-hop`: the second AS of the pair's own IPv4 and IPv6 paths (v's neighbour toward d).
- `neighbours`: per family, the set of second ASes of all of v's paths of the month (its
  neighbours), ordered by how many of its paths use each (the primary first); what each is to
  v comes from the month's as_relationships where it has the link, else `provider`.
  (The month's relationships were inferred with v's own paths among the others: they stand in
  for what an operator knows of its own contracts.)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bgp_congruency.common import duck, vp_hash
from bgp_congruency.common.config import Config
from bgp_congruency.common.tables import HINTS
from bgp_congruency.lake import published
from bgp_congruency.pipeline.partitions import limit_bytes
from bgp_congruency.pipeline.steps import edit_distance_sql
from bgp_congruency.selector import calibration, rules
from bgp_congruency.selector.advice import empty_hint, month_calibration
from bgp_congruency.selector.month import data_root, table_relation

REVEALS = ("none", "first-hop", "neighbours")
#: rules.CAUTION as a DuckDB list: list_position(CAUTION_SQL, class) ranks a class's caution.
CAUTION_SQL = "[" + ", ".join(f"'{c}'" for c in rules.CAUTION) + "]"
#: DuckDB memory per route row of a destination partition (its questions' joins and sorts).
BYTES_PER_ROUTE = 600

_CLASS_SQL = """CASE WHEN {a} = {b} THEN 'congruent'
    WHEN len({s}) = 0 THEN 'disjoint'
    WHEN list_bool_and(list_transform({s}, x -> (list_position({a}, x) = 2 OR list_position({a}, x) = len({a}) - 1)
                                          AND (list_position({b}, x) = 2 OR list_position({b}, x) = len({b}) - 1)))
    THEN 'shared-edge' ELSE 'shared-core' END"""


def class_sql(a: str, b: str, src: str, dest: str) -> tuple[str, str]:
    """(shared ASes, class) of two path expressions from `src` to `dest`, as rules.classify."""
    shared = f"list_sort(list_filter(list_intersect({a}, {b}), x -> x <> {src} AND x <> {dest}))"
    return shared, _CLASS_SQL.format(a=a, b=b, s=shared)


def partitions(con, cfg: Config) -> int:
    """Destination partitions of the routes: as many as the memory limit needs for one
    partition's routes (every suffix of its paths, at most the paths' total length)."""
    n = con.execute("SELECT coalesce(sum(len(path)), 0) FROM ev_paths").fetchone()[0]
    limit = limit_bytes(cfg)
    return max(1, -(-int(n) * BYTES_PER_ROUTE // limit)) if limit else 1


def in_partition(col: str, k: int, i: int) -> str:
    """The SQL predicate of destination partition i of k on the ASN column `col`."""
    return f"{vp_hash.sql_partition(col, k)} = {i}" if k > 1 else "true"


def routes(con, k: int, i: int) -> str:
    """The routes table ev_routes of destination partition i of k: every suffix of every path to
    a destination of the partition (the route of its first AS to the destination, per VP AS),
    and the SQL predicate of the partition's questions (on their destination `d`). Built per
    partition, so no step scans every route of the month (at the study's scale ~150 M rows)."""
    part = lambda col: in_partition(col, k, i)  # noqa: E731
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_routes AS
        SELECT afi, dest_asn AS dest, path[i] AS n, path[i:] AS route, vp_asn AS vp, bool_or(i = 1) AS own,
               max(stability) AS stab, max(snapshots) AS snaps
        FROM (SELECT *, unnest(range(1, len(path) + 1)) AS i FROM ev_paths WHERE {part('dest_asn')})
        GROUP BY ALL""")
    return part("d")


def setup(con, cfg: Config, month: str, groups: bool = False) -> tuple[int, bool]:
    """The month's paths, pairs and relationships as temp tables; returns (its snapshots, whether it
    has relationships). `groups`: the paths keep their VP's collector group (the proxies of
    rule 1 are VPs, not VP ASes; rules 8-11 read routes per VP AS and need none)."""
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_paths AS
        SELECT {'vp_group, ' if groups else ''}vp_asn, afi, dest_asn, path, stability, snapshots
        FROM {table_relation(cfg, 'paths', month)}""")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_pairs AS
        SELECT vp_group, vp_asn, dest_asn, v4_path, v6_path, congruent, shared_asns, shared_adjacent,
               CASE WHEN congruent THEN 'congruent' WHEN len(shared_asns) = 0 THEN 'disjoint'
                    WHEN shared_adjacent THEN 'shared-edge' ELSE 'shared-core' END AS observed
        FROM {table_relation(cfg, 'pairs', month)}""")
    snaps = con.execute("SELECT coalesce(max(snapshots), 0) FROM ev_paths").fetchone()[0]
    if month in published.months(data_root(cfg), "as_relationships"):
        con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_rel AS
            SELECT afi, as1 AS a, as2 AS b, CASE rel WHEN 'p2c' THEN 'customer' ELSE 'peer' END AS b_is
            FROM {table_relation(cfg, 'as_relationships', month)}
            UNION ALL
            SELECT afi, as2, as1, CASE rel WHEN 'p2c' THEN 'provider' ELSE 'peer' END
            FROM {table_relation(cfg, 'as_relationships', month)}""")
        has_rel = True
    else:
        con.execute("CREATE OR REPLACE TEMP TABLE ev_rel (afi TINYINT, a BIGINT, b BIGINT, b_is VARCHAR)")
        has_rel = False
    return int(snaps), has_rel


def _held_out_questions(con) -> None:
    """The questions of the held-out evaluation: one per pair and family, with the pair's own
    path (its first hop) and its VP AS's neighbours (ev_nb: declared `provider`, the most
    used first)."""
    con.execute("""CREATE OR REPLACE TEMP TABLE ev_q AS
        SELECT vp_group, vp_asn AS v, dest_asn AS d, afi, CASE afi WHEN 4 THEN v4_path ELSE v6_path END AS own_path
        FROM ev_pairs, (SELECT unnest([4, 6]) AS afi)""")
    con.execute("""CREATE OR REPLACE TEMP TABLE ev_nb AS
        SELECT vp_asn AS v, afi, path[2] AS n, row_number() OVER (PARTITION BY vp_asn, afi
                                                                  ORDER BY count(*) DESC, path[2]) - 1 AS ord,
               'provider' AS rel
        FROM ev_paths WHERE len(path) >= 2 AND vp_asn IN (SELECT DISTINCT vp_asn FROM ev_pairs)
        GROUP BY vp_asn, afi, path[2]""")


def _questions(kind: str, reveal: str, part: str) -> str:
    """The questions of rule `kind` in destination partition `part`: each (pair, family) with the
    AS whose route it reads (n: the first hop, the source itself, or each neighbour), the
    neighbour's declared order, and what n is to the source as declared."""
    if kind == "first-hop":
        q = "SELECT vp_group, v, d, afi, own_path[2] AS n, 0 AS ord, 'provider' AS rel FROM ev_q"
    elif kind == "through":
        q = "SELECT vp_group, v, d, afi, v AS n, 0 AS ord, 'provider' AS rel FROM ev_q"
    elif reveal == "first-hop":  # rule 11 for the first hop whose route is not observed
        q = "SELECT vp_group, v, d, afi, own_path[2] AS n, 0 AS ord, 'provider' AS rel FROM ev_q"
    else:
        q = ("SELECT q.vp_group, q.v, q.d, q.afi, nb.n, nb.ord, nb.rel FROM ev_q q "
             "JOIN ev_nb nb ON nb.v = q.v AND nb.afi = q.afi")
    return f"SELECT * FROM ({q}) WHERE {part} AND n IS NOT NULL"


def _best_sql(qs: str, snaps: int, at_dest: bool) -> str:
    """Each question's best observed route of its AS n (rules.best_route), from the routes
    table, the held-out VP AS's paths left out and routes on which it follows n dropped; with
    `at_dest`, n = d is the route (d), as sure as the month."""
    dest = f"""
        UNION ALL SELECT vp_group, v, d, afi, n, ord, rel, [d] AS route, true AS own, 1::BIGINT AS vps,
                         1.0::DOUBLE AS stab, {int(snaps)}::BIGINT AS snaps
        FROM ({qs}) WHERE n = d""" if at_dest else ""
    return f"""
        SELECT vp_group, v, d, afi, n, ord, rel, route, stab, snaps FROM (
            SELECT *, row_number() OVER (PARTITION BY vp_group, v, d, afi, n
                                         ORDER BY own DESC, vps DESC, len(route), route) AS rk
            FROM (SELECT qs.vp_group, qs.v, qs.d, qs.afi, qs.n, qs.ord, qs.rel, r.route, bool_or(r.own) AS own,
                         count(DISTINCT r.vp) AS vps, max(r.stab) AS stab, max(r.snaps) AS snaps
                  FROM ({qs}) qs JOIN ev_routes r ON r.afi = qs.afi AND r.dest = qs.d AND r.n = qs.n
                  WHERE qs.n <> qs.d AND r.vp <> qs.v AND NOT list_contains(r.route[2:], qs.v)
                  GROUP BY ALL{dest}))
        WHERE rk = 1"""


def _inferred_sql(qs: str) -> str:
    """Rule 11: each question's route of its AS n (a head with no observed route) one AS
    further: among n's neighbours m in the family's relationships, m's best observed route
    (neither crossing the source nor n; advice.inferred_routes), given to n (m is n's provider,
    or the route is m's own or its customers'); a customer, then a peer, then a provider, then
    the shortest, then the lowest m. Columns as _best_sql's and m_is (what m is to n)."""
    heads = f"SELECT * FROM ({qs}) WHERE n <> d"
    # A head that is not the source's provider gives it only its customers' routes: only its
    # customers' routes can make it a candidate (the same choice: customers rank first).
    below = f"""SELECT h.vp_group, h.v, h.d, h.afi, hr.b AS n, h.n AS head, h.ord AS head_ord, h.rel, hr.b_is AS m_is
                FROM ({heads}) h JOIN ev_rel hr ON hr.afi = h.afi AND hr.a = h.n AND hr.b <> h.v
                WHERE h.n_is = 'provider' OR hr.b_is = 'customer'"""
    best = f"""
        SELECT vp_group, v, d, afi, n, head, head_ord, rel, m_is, route, stab, snaps FROM (
            SELECT *, row_number() OVER (PARTITION BY vp_group, v, d, afi, head, n
                                         ORDER BY own DESC, vps DESC, len(route), route) AS rk
            FROM (SELECT b.vp_group, b.v, b.d, b.afi, b.n, b.head, b.head_ord, b.rel, b.m_is, r.route,
                         bool_or(r.own) AS own,
                         count(DISTINCT r.vp) AS vps, max(r.stab) AS stab, max(r.snaps) AS snaps
                  FROM ({below}) b JOIN ev_routes r ON r.afi = b.afi AND r.dest = b.d AND r.n = b.n
                  WHERE r.vp <> b.v AND NOT list_contains(r.route[2:], b.v)
                  GROUP BY ALL))
        WHERE rk = 1 AND NOT list_contains(route, head)"""
    return f"""
        SELECT vp_group, v, d, afi, head AS n, head_ord AS ord, rel, list_prepend(head, route) AS route, stab,
               snaps, m_is FROM (
            SELECT b.*, row_number() OVER (PARTITION BY b.vp_group, b.v, b.d, b.afi, b.head
                ORDER BY list_position(['customer', 'peer', 'provider'], b.m_is), len(b.route), b.n) AS pick
            FROM ({best}) b LEFT JOIN ev_rel nr ON nr.afi = b.afi AND nr.a = b.n AND nr.b = b.route[2] AND len(b.route) > 1
            WHERE b.m_is = 'provider' OR len(b.route) = 1 OR nr.b_is = 'customer')
        WHERE pick = 1"""


def _family_sql(con, kind: str, reveal: str, part: str, has_rel: bool, snaps: int, inferred: bool) -> str:
    """The answers of rule `kind` for the questions of partition `part`: columns vp_group, v,
    d, afi, rule, n, route (from n on; through: from the source on), stab, snaps. For the heads
    (rules 10 and 11) the observed routes and the questions still without one are temp tables
    first, so rule 11 expands only those."""
    qs = _questions(kind, reveal, part)
    if kind in ("first-hop", "through"):
        return f"SELECT *, '{kind}' AS rule FROM ({_best_sql(qs, snaps, kind == 'first-hop')})"
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_hq AS SELECT q.* FROM ({qs}) q
                    ANTI JOIN ev_fam f ON f.vp_group = q.vp_group AND f.v = q.v AND f.d = q.d AND f.afi = q.afi""")
    if reveal == "neighbours":
        con.execute(f"CREATE OR REPLACE TEMP TABLE ev_obs AS {_best_sql('SELECT * FROM ev_hq', snaps, True)}")
    else:  # the first hop's observed route was rule 8's
        con.execute("CREATE OR REPLACE TEMP TABLE ev_obs AS SELECT *, NULL::BIGINT[] AS route, NULL::DOUBLE AS stab, "
                    "NULL::BIGINT AS snaps FROM ev_hq WHERE false")  # columns of _best_sql's
    # what n is to the source: a family's sole neighbour is its first hop toward every
    # destination, whatever the month's relationships say (rules.sole_neighbour)
    sole = "LEFT JOIN (SELECT v, afi, count(*) AS k FROM ev_nb GROUP BY ALL) sole ON sole.v = {q}.v AND sole.afi = {q}.afi"
    if inferred:
        n_is = "'provider'" if reveal == "first-hop" else "CASE WHEN sole.k = 1 THEN 'provider' ELSE coalesce(vr.b_is, q.rel) END"
        missing = f"""SELECT q.*, {n_is} AS n_is FROM ev_hq q {sole.format(q="q")}
                     LEFT JOIN ev_rel vr ON vr.afi = q.afi AND vr.a = q.v AND vr.b = q.n
                     ANTI JOIN ev_obs o
                     ON o.vp_group = q.vp_group AND o.v = q.v AND o.d = q.d AND o.afi = q.afi AND o.n = q.n"""
        con.execute(f"CREATE OR REPLACE TEMP TABLE ev_inf AS {_inferred_sql(missing)}")
    else:
        con.execute("CREATE OR REPLACE TEMP TABLE ev_inf AS SELECT *, NULL::VARCHAR AS m_is FROM ev_obs WHERE false")
    cands = """SELECT *, NULL::VARCHAR AS m_is, 'neighbours' AS rule FROM ev_obs
               UNION ALL BY NAME SELECT *, 'inferred' AS rule FROM ev_inf"""
    source_is = "'provider'" if reveal == "first-hop" else \
        "CASE WHEN sole.k = 1 THEN 'provider' ELSE coalesce(vr.b_is, c.rel) END"
    nxt = "CASE WHEN c.rule = 'inferred' THEN c.m_is ELSE nr.b_is END" if has_rel else "NULL"
    return f"""
        SELECT vp_group, v, d, afi, rule, n, route, stab, snaps FROM (
            SELECT c.*, {source_is} AS n_is, {nxt} AS next_is FROM ({cands}) c
            {sole.format(q="c")}
            LEFT JOIN ev_rel vr ON vr.afi = c.afi AND vr.a = c.v AND vr.b = c.n
            LEFT JOIN ev_rel nr ON nr.afi = c.afi AND nr.a = c.n AND nr.b = c.route[2] AND len(c.route) > 1)
        WHERE n_is = 'provider' OR len(route) = 1 OR next_is IS NULL OR next_is = 'customer'
        QUALIFY row_number() OVER (PARTITION BY vp_group, v, d, afi
            ORDER BY list_position(['customer', 'peer', 'provider'], n_is), len(route), ord, n) = 1"""


def answers(cfg: Config, month: str, reveal: str, progress=None, fallback: bool = rules.DESTINATION_FALLBACK,
            inferred: bool = rules.INFERRED_ROUTES, parts: int | None = None) -> pa.Table:
    """One row per pair of the month: the evidence rules' answer for the pair's VP AS held out,
    under `reveal` (first-hop or neighbours), with everything selector_eval records but the
    calibrated confidence. `parts`: destination partitions (default: as the memory limit needs)."""
    if reveal not in ("first-hop", "neighbours"):
        raise ValueError(f"reveal: {reveal!r}")
    con = duck.connect(cfg)
    try:
        snaps, has_rel = setup(con, cfg, month)
        _held_out_questions(con)
        use_rel = has_rel and inferred
        k = parts or partitions(con, cfg)
        # rule 9 only without a first hop (rules.py): every question of the first-hop mode has one
        kinds = ("first-hop", "heads") if reveal == "first-hop" else ("through", "heads")
        con.execute("""CREATE OR REPLACE TEMP TABLE ev_fam (vp_group VARCHAR, v BIGINT, d BIGINT, afi INTEGER,
            rule VARCHAR, n BIGINT, route BIGINT[], stab DOUBLE, snaps BIGINT)""")
        for i in range(k):
            part = routes(con, k, i)
            for kind in kinds:
                con.execute(f"""INSERT INTO ev_fam
                    SELECT c.vp_group, c.v, c.d, c.afi, c.rule, c.n, c.route, c.stab, c.snaps
                    FROM ({_family_sql(con, kind, reveal, part, has_rel, snaps, use_rel)}) c
                    ANTI JOIN ev_fam f ON f.vp_group = c.vp_group AND f.v = c.v AND f.d = c.d AND f.afi = c.afi""")
            if progress:
                progress(i + 1, k)
        t = read_closing(con, _assemble(con, fallback), "answers.parquet")
    finally:
        con.close()
    return _rows(t, month, reveal, snaps)


def read_closing(con, query: str, name: str) -> pa.Table:
    """`query`'s rows as Arrow, through the Parquet file `name` in the connection's spill
    folder: DuckDB streams them out under its memory limit and `con` is closed (its temp tables
    freed) before they are read back: never both at once. The file is gone afterwards."""
    out = Path(con.execute("SELECT current_setting('temp_directory')").fetchone()[0]) / name
    try:
        try:
            con.execute(f"COPY ({query}) TO {duck.quote(str(out))} (FORMAT parquet)")
        finally:
            con.close()
        return pq.read_table(out)
    finally:
        out.unlink(missing_ok=True)


def votes(con, name: str, behind: bool = False) -> None:
    """Temp table `name`: per pair's VP AS v and destination d, rule 6's class (the one most
    pairs of the other VP ASes to d show; ties to the more cautious), with `behind` rule 7's
    (each pair's class seen behind one neighbour first: BEHIND_ONE_NEIGHBOUR); columns v, d,
    cls, n (pairs), vps (their VP ASes), share. The month's counts less v's own, so no
    question joins every pair to its destination."""
    cls = ("CASE observed " + " ".join(f"WHEN '{a}' THEN '{b}'" for a, b in rules.BEHIND_ONE_NEIGHBOUR.items())
           + " END") if behind else "observed"
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {name} AS
        WITH c AS (SELECT dest_asn AS d, {cls} AS cls, vp_asn FROM ev_pairs),
        tot AS (SELECT d, cls, count(*) AS n, count(DISTINCT vp_asn) AS vps FROM c GROUP BY ALL),
        mine AS (SELECT vp_asn AS v, d, cls, count(*) AS n FROM c GROUP BY ALL),
        q AS (SELECT DISTINCT vp_asn AS v, dest_asn AS d FROM ev_pairs),
        rest AS (SELECT q.v, q.d, t.cls, t.n - coalesce(m.n, 0) AS n, t.vps - (m.n IS NOT NULL)::INT AS vps
                 FROM q JOIN tot t ON t.d = q.d LEFT JOIN mine m ON m.v = q.v AND m.d = q.d AND m.cls = t.cls)
        SELECT v, d, cls, n, vps, n / sum(n) OVER (PARTITION BY v, d) AS share
        FROM rest WHERE n > 0
        QUALIFY row_number() OVER (PARTITION BY v, d ORDER BY n DESC, list_position({CAUTION_SQL}, cls) DESC) = 1""")


def _assemble(con, fallback: bool) -> str:
    """The query of each pair's answer from its families' routes (ev_fam; rule 6's ev_dest is
    made here): the class of the two paths, or rule 6's class where a family has none, scored
    against the pair as observed."""
    shared, cls = class_sql("p4", "p6", "v", "d")
    votes(con, "ev_dest")  # rule 6 with the VP AS held out
    return f"""
        WITH f AS (
            SELECT p.vp_group, p.vp_asn AS v, p.dest_asn AS d, p.v4_path, p.v6_path, p.observed,
                   f4.rule AS r4, CASE WHEN f4.rule IS NULL THEN NULL WHEN f4.rule = 'through' THEN f4.route
                                         ELSE list_prepend(p.vp_asn, f4.route) END AS p4,
                   f4.stab AS s4, f4.snaps AS k4,
                   f6.rule AS r6, CASE WHEN f6.rule IS NULL THEN NULL WHEN f6.rule = 'through' THEN f6.route
                                         ELSE list_prepend(p.vp_asn, f6.route) END AS p6,
                   f6.stab AS s6, f6.snaps AS k6
            FROM ev_pairs p
            LEFT JOIN ev_fam f4 ON f4.vp_group = p.vp_group AND f4.v = p.vp_asn AND f4.d = p.dest_asn AND f4.afi = 4
            LEFT JOIN ev_fam f6 ON f6.vp_group = p.vp_group AND f6.v = p.vp_asn AND f6.d = p.dest_asn AND f6.afi = 6),
        c AS (
            SELECT f.*, {shared} AS shared, CASE WHEN p4 IS NOT NULL AND p6 IS NOT NULL THEN {cls} END AS both_cls
            FROM f)
        SELECT c.vp_group, c.v AS vp_asn, c.d AS dest_asn, c.observed, c.r4, c.r6, c.p4 = c.v4_path AS e4,
               c.p6 = c.v6_path AS e6, c.s4, c.s6, least(c.k4, c.k6) AS k, c.both_cls, e.cls AS dest_cls,
               e.share AS dest_share, e.vps AS dest_vps,
               CASE WHEN c.p4 IS NULL THEN NULL ELSE ({edit_distance_sql('c.p4', 'c.v4_path')})::INTEGER END AS h4,
               CASE WHEN c.p6 IS NULL THEN NULL ELSE ({edit_distance_sql('c.p6', 'c.v6_path')})::INTEGER END AS h6
        FROM c LEFT JOIN ev_dest e ON e.v = c.v AND e.d = c.d AND {str(bool(fallback)).lower()}
        ORDER BY c.v, c.vp_group, c.d"""


MODE_OF = {"disjoint": "aggregate", "shared-edge": "aggregate", "shared-core": "backup", "congruent": "single-path",
            "unknown": "single-path"}


def codes(col: pa.ChunkedArray, names: tuple[str, ...]) -> np.ndarray:
    """A string column as each value's index in `names` (-1 for null): whole columns, no str
    object per row."""
    return pc.fill_null(pc.index_in(col, value_set=pa.array(names)), -1).to_numpy(zero_copy_only=False)


def _rows(t: pa.Table, month: str, reveal: str, snaps: int) -> pa.Table:
    """selector_eval's columns from the assembled answers, over whole columns (numpy): the
    pair's rule, class and stated confidence as selector/advice.evidence_answer gives them."""
    classes = rules.CLASSES
    r4, r6 = codes(t.column("r4"), rules.EVIDENCE_RULES), codes(t.column("r6"), rules.EVIDENCE_RULES)
    both_c, dest_c = codes(t.column("both_cls"), classes), codes(t.column("dest_cls"), classes)
    obs_c = codes(t.column("observed"), classes)
    both, has_dest = both_c >= 0, dest_c >= 0
    names = np.array([*rules.EVIDENCE_RULES, "destination", "none"], dtype=object)
    rule = names[np.where(both, np.maximum(r4, r6), np.where(has_dest, len(rules.EVIDENCE_RULES),
                                                              len(rules.EVIDENCE_RULES) + 1))]
    unknown = classes.index("unknown")
    pred_c = np.where(both, both_c, np.where(has_dest, dest_c, unknown))
    col = lambda c: pc.fill_null(t.column(c).cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False)  # noqa: E731
    s4, s6, k, share = col("s4"), col("s6"), col("k"), col("dest_share")
    proxy = rule != "first-hop"
    stated = rules.confidence_array(s4, s6, k, snaps, factor=np.where(proxy, rules.PROXY_FACTOR, 1.0))
    conf = np.where(both, stated, np.where(rule == "destination", share, 0.0))
    conf = np.where(pred_c == unknown, 0.0, conf)
    # the advice's mode: an aggregate class held back to backup where a proxy rule is unsure
    cautious = (rule == "destination") & (share < 1) | (both & proxy & (conf < rules.PROXY_MIN_CONFIDENCE))
    mode_of = np.array([MODE_OF[c] for c in classes], dtype=object)
    modes = mode_of[pred_c]
    modes = np.where((modes == "aggregate") & cautious, "backup", modes)
    correct = pa.array(pred_c == obs_c, pa.bool_(), mask=pred_c == unknown)
    dest_vps = pc.fill_null(t.column("dest_vps"), 0).cast(pa.int32()).to_numpy(zero_copy_only=False)
    n = t.num_rows
    cls_names = np.array(classes, dtype=object)
    return pa.table({
        "month": pa.array([month] * n, pa.string()),
        "vp_group": t.column("vp_group"), "vp_asn": t.column("vp_asn"), "dest_asn": t.column("dest_asn"),
        "rule": pa.array(rule, pa.string()),
        "proxies": pa.array(np.where(rule == "destination", dest_vps, 0), pa.int32()),
        "observed_class": t.column("observed"), "predicted_class": pa.array(cls_names[pred_c], pa.string()),
        "correct": correct, "confidence": pa.array(conf, pa.float64()),
        "observed_mode": pa.array(mode_of[obs_c], pa.string()), "predicted_mode": pa.array(modes, pa.string()),
        "v4_exact": t.column("e4"), "v6_exact": t.column("e6"),  # null where the family has no route
        "v4_hop_distance": t.column("h4").cast(pa.int32()), "v6_hop_distance": t.column("h6").cast(pa.int32()),
        "kind": pa.array(["vp"] * n, pa.string()), "reveal": pa.array([reveal] * n, pa.string())})


def where(cfg: Config) -> Path:
    return data_root(cfg)


# ------------------------------------------------------------------ the site's own advice
def site_hints(cfg: Config, month: str, src: int, via: dict, progress=None) -> pa.Table:
    """The hints of the operator's host (the config's [source]: its AS `src` and neighbours
    `via`, afi -> selector.question.Neighbour tuple) toward every destination of the month's
    pairs, by rules 9-10 (through, neighbours) set-based as the evaluation answers them: the
    rows `run`'s hints step adds to the month's tunnels export (HINTS' columns)."""
    con = duck.connect(cfg)
    try:
        snaps, has_rel = setup(con, cfg, month)
        con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_q AS
            SELECT '' AS vp_group, {int(src)}::BIGINT AS v, d, afi, NULL::BIGINT[] AS own_path
            FROM (SELECT DISTINCT dest_asn AS d FROM ev_pairs WHERE dest_asn <> {int(src)}),
                 (SELECT unnest([4, 6]) AS afi)""")
        nb = pa.table({"v": pa.array([src] * sum(len(ns) for ns in via.values()), pa.int64()),
                       "afi": pa.array([afi for afi, ns in via.items() for _n in ns], pa.int32()),
                       "n": pa.array([n.asn for ns in via.values() for n in ns], pa.int64()),
                       "ord": pa.array([n.order for ns in via.values() for n in ns], pa.int64()),
                       "rel": [n.rel for ns in via.values() for n in ns]})
        con.register("site_nb", nb)
        con.execute("CREATE OR REPLACE TEMP TABLE ev_nb AS SELECT * FROM site_nb")
        con.execute("""CREATE OR REPLACE TEMP TABLE ev_fam (vp_group VARCHAR, v BIGINT, d BIGINT, afi INTEGER,
            rule VARCHAR, n BIGINT, route BIGINT[], stab DOUBLE, snaps BIGINT)""")
        k = partitions(con, cfg)
        for i in range(k):
            part = routes(con, k, i)
            for kind in ("through", "heads"):
                con.execute(f"""INSERT INTO ev_fam
                    SELECT c.vp_group, c.v, c.d, c.afi, c.rule, c.n, c.route, c.stab, c.snaps
                    FROM ({_family_sql(con, kind, 'neighbours', part, has_rel, snaps, False)}) c
                    ANTI JOIN ev_fam f ON f.vp_group = c.vp_group AND f.v = c.v AND f.d = c.d AND f.afi = c.afi""")
            if progress:
                progress(i + 1, k)
        shared, cls = class_sql("p4", "p6", str(int(src)), "d")
        rows = con.execute(f"""
            WITH f AS (
                SELECT q.d, f4.rule AS r4, f6.rule AS r6, f4.n AS n4, f6.n AS n6,
                       CASE WHEN f4.rule IS NULL THEN NULL WHEN f4.rule = 'through' THEN f4.route
                            ELSE list_prepend({int(src)}, f4.route) END AS p4,
                       CASE WHEN f6.rule IS NULL THEN NULL WHEN f6.rule = 'through' THEN f6.route
                            ELSE list_prepend({int(src)}, f6.route) END AS p6,
                       f4.stab AS s4, f6.stab AS s6, least(f4.snaps, f6.snaps) AS k
                FROM (SELECT DISTINCT d FROM ev_q) q
                LEFT JOIN ev_fam f4 ON f4.d = q.d AND f4.afi = 4 LEFT JOIN ev_fam f6 ON f6.d = q.d AND f6.afi = 6)
            SELECT *, CASE WHEN p4 IS NOT NULL AND p6 IS NOT NULL THEN {shared} END AS shared,
                   CASE WHEN p4 IS NOT NULL AND p6 IS NOT NULL THEN {cls} END AS cls
            FROM f ORDER BY d""").fetchall()
    finally:
        con.close()
    con = duck.connect(cfg)
    try:
        fits = month_calibration(con, cfg, month)
    finally:
        con.close()
    fit = (fits or {}).get("neighbours")
    out = []
    for d, r4, r6, n4, n6, p4, p6, s4, s6, k, shared, cls in rows:
        h = empty_hint(month, src)
        h.update(via_proxy=True, dest_asn=d, dest_asn_v6=d, via_v4=n4, via_v6=n6,
                 v4_path=p4, v6_path=p6, stability_v4=s4 if p4 else None, stability_v6=s6 if p6 else None)
        if cls:
            rule = rules.weakest([r4, r6])
            h.update(shared_asns=shared, snapshots=k)
            h.update(rules.hint_fields(cls, s4, s6, len(p4) - 1, len(p6) - 1, k, snaps, proxy=rule != "first-hop",
                                       calibrated=calibration.confidence(fit, rule, cls)))
            h["notes"] = [f"AS{src}'s own advice from its [source] neighbours (rule {rule})"]
        else:
            missing = [a for a, p in ((4, p4), (6, p6)) if not p]
            h.update(rules.hint_fields("unknown", h["stability_v4"], h["stability_v6"],
                                       len(p4) - 1 if p4 else None, len(p6) - 1 if p6 else None, None, None))
            h["reason"] = (" and ".join(f"IPv{a}" for a in missing) + f": no path from AS{src}'s [source] neighbours "
                           f"to AS{d} in {month}")
        out.append(h)
    return pa.Table.from_pylist(out, schema=HINTS)
